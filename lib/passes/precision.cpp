// precision{p=...}: the mixed-precision block, written wholesale (Megatron-Bridge
// `_perf_precision`). The blocks are data: recipes/precisions.yaml.
#include "passes/registry.h"

namespace qr {

void run_precision(PassContext& ctx) {
  const std::string& p = ctx.arg("p").as_str();
  ctx.set("mixed_precision", ctx.presets().precision_block(p, ctx.config()));
}

} // namespace qr
