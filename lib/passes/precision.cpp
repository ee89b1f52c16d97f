// precision{p=...}: the mixed-precision block, written wholesale (Megatron-Bridge
// `_perf_precision`). The blocks are data: recipes/precisions.yaml.
#include "passes/registry.h"
#include "recipes/catalog.h"

namespace qr {
namespace {

void run_precision(PassContext& ctx) {
  const std::string& p = ctx.arg("p").as_str();
  ctx.set("mixed_precision", ctx.catalog().precision_block(p, ctx.config()));
}

} // namespace

const PassInfo kPrecisionPass{
    .name = "precision",
    .summary = "write the mixed-precision block (bf16, fp8cs, fp8mx or nvfp4) wholesale",
    .options = {{"p", "str{bf16|fp8cs|fp8mx|nvfp4}", true, "the precision recipe"}},
    .writes = {"mixed_precision"},
    .run = run_precision,
    .description =
        "Replaces `mixed_precision` with a fresh MixedPrecisionConfig carrying the chosen "
        "builder's fields (recipes/precisions.yaml): bf16 = `bf16_mixed`, fp8cs = "
        "`bf16_with_fp8_current_scaling_mixed` with first/last-layer bf16 off, fp8mx = "
        "`bf16_with_mxfp8_mixed`, nvfp4 = `bf16_with_nvfp4_mixed`; `grad_reduce_in_fp32` is "
        "always off. No upstream Qwen-VL recipe uses nvfp4.",
};

} // namespace qr
