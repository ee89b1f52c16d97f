// Overrides files (`build --overrides FILE.yaml`): Hydra overrides kept in a file, either as a
// list of dotlist strings or as a nested partial mapping of the fields to set:
//   - train.global_batch_size=256          train:
//   - +env_vars.MY_FLAG=1                    global_batch_size: 256
// Each becomes an Override that names its file:line:col, so that the same struct-mode rules as
// on the command line report where in the file a bad one is.
#pragma once

#include "overrides/overrides.h"

#include <string>
#include <vector>

namespace qr {

// Throws qr::Error naming file:line:col for anything that is not an override, a file that is not
// a list or a mapping, or one larger or deeper than the bounds (1 MiB, 32 nested keys).
std::vector<Override> read_overrides_file(const std::string& path);

} // namespace qr
