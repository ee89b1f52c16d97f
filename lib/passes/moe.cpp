// MoE dispatcher and overlap passes.
#include "passes/registry.h"

namespace qr {

void run_dispatcher(PassContext& ctx) {
  ctx.set_option_fields();
}

void run_ncclep(PassContext& ctx) {
  ctx.set("model.moe_token_dispatcher_type", "flex");
  ctx.set("model.moe_flex_dispatcher_backend", "ncclep");
}

void run_moe_a2a_overlap(PassContext& ctx) {
  ctx.set("comm_overlap.overlap_moe_expert_parallel_comm", true);
  ctx.set("comm_overlap.delay_wgrad_compute", true);
  ctx.set("model.moe_shared_expert_overlap", false);
}

void run_fused_grouped_mlp(PassContext& ctx) {
  ctx.set("model.use_transformer_engine_op_fuser", true);
  ctx.set("model.moe_mlp_glu_interleave_size", 32);
}

} // namespace qr
