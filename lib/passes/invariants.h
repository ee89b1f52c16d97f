// Invariants: read-only checks of the config that Megatron-Core or Megatron-Bridge would
// otherwise assert at training start-up, on hundreds of GPUs. The pipeline runs them after
// every pass (`always`) or once the recipe is complete (`final`: the state upstream recipes pass
// through on their way may break them, e.g. benchmark-common turning rope fusion on before
// finalize turns it off).
#pragma once

#include "config/config.h"

#include <string>
#include <vector>

namespace qr {

struct InvariantInfo {
  enum class When { Always, Final };
  std::string name;
  std::string summary;
  When when = When::Always;
  std::string source;                  // which upstream check it mirrors
  std::string (*check)(const Config&); // "" when it holds, else what is wrong and the fix
};

const std::vector<InvariantInfo>& invariant_registry();
const InvariantInfo* find_invariant(std::string_view name);

} // namespace qr
