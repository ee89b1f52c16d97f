// CUDA-graph module names as Megatron-Bridge's `cuda_graph_module_names` reads them: names in
// `cuda_graph_modules` (enums), then in the legacy `cuda_graph_scope` (strings), without the
// whole-iteration markers.
#pragma once

#include "config/config.h"

#include <set>
#include <string>
#include <vector>

namespace qr {

std::set<std::string> cuda_graph_module_names(const Config& c);

// Normalizes a module list as Megatron-Bridge's set_cuda_graph_modules does: null, "" and "full"
// are empty; "a,b" splits; "X.attn" keeps the last part.
std::vector<std::string> normalize_module_names(const Value& modules);

} // namespace qr
