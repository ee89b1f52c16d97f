// The diff command's human layout (dyff's): differences grouped by top-level section, each path
// with what changed. Shared by `diff` and `check`, so a golden mismatch reads like a diff.
#pragma once

#include "diff/diff.h"

#include <functional>
#include <string>
#include <vector>

namespace qr {

// "between A\n    and B\nreturned N differences\n" then each section and path. `set_by`, when
// given, adds a "  set by: ..." line under each path (diff --explain).
std::string human_diff(const std::vector<Difference>& diffs, const std::string& a_label,
                       const std::string& b_label,
                       const std::function<std::string(const Difference&)>& set_by = {});

// The change kinds' names in JSON reports: "value", "type", "entries-added", ...
const char* change_name(Detail::Kind kind);

} // namespace qr
