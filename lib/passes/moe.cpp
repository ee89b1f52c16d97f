// MoE dispatcher and overlap passes.
#include "passes/registry.h"

namespace qr {

const PassInfo kDispatcherPass{
    .name = "dispatcher",
    .summary = "the MoE token dispatcher (alltoall, or flex with a backend such as hybridep)",
    .options = {{"type", "str{allgather|alltoall|flex}", true, "model.moe_token_dispatcher_type"},
                {"backend", "str{deepep|hybridep|ncclep}", false,
                 "model.moe_flex_dispatcher_backend"}},
    .writes = {"model.moe_token_dispatcher_type", "model.moe_flex_dispatcher_backend"},
    .run =
        [](PassContext& ctx) {
          ctx.set("model.moe_token_dispatcher_type", ctx.arg("type"));
          if (const Value* be = ctx.args().find("backend"))
            ctx.set("model.moe_flex_dispatcher_backend", *be);
        },
    .description = "A recipe's dispatcher choice. `dispatcher{type=flex,backend=hybridep}` is "
                   "upstream's hybridep; recipes that keep the provider's alltoall do not run it.",
};

const PassInfo kNcclepPass{
    .name = "ncclep",
    .summary = "the flex dispatcher with the NCCL EP backend",
    .writes = {"model.moe_token_dispatcher_type", "model.moe_flex_dispatcher_backend"},
    .after = {{"benchmark-common", "benchmark-common sizes hybridep SMs from the backend it sees"}},
    .run =
        [](PassContext& ctx) {
          ctx.set("model.moe_token_dispatcher_type", "flex");
          ctx.set("model.moe_flex_dispatcher_backend", "ncclep");
        },
    .description = "GDN-branch `_enable_ncclep` (`perf_recipes/_common.py`), used by the GB300 "
                   "35B-A3B bf16 recipe.",
};

const PassInfo kMoeA2aOverlapPass{
    .name = "moe-a2a-overlap",
    .summary = "overlap the MoE all-to-all with compute and delay weight-gradient compute",
    .writes = {"comm_overlap.overlap_moe_expert_parallel_comm", "comm_overlap.delay_wgrad_compute",
               "model.moe_shared_expert_overlap"},
    .after = {{"finalize-qwen3-vl", "upstream applies it to the finalized config"},
              {"comm-overlap", "it edits the recipe's CommOverlapConfig"}},
    .run =
        [](PassContext& ctx) {
          ctx.set("comm_overlap.overlap_moe_expert_parallel_comm", true);
          ctx.set("comm_overlap.delay_wgrad_compute", true);
          ctx.set("model.moe_shared_expert_overlap", false);
        },
    .description = "The MoE all-to-all overlap of upstream's `_finalize_qwen3_vl_with_moe_a2a_*` "
                   "helpers: EP communication overlap and delayed wgrad on, shared-expert overlap "
                   "off.",
};

const PassInfo kFusedGroupedMlpPass{
    .name = "fused-grouped-mlp",
    .summary = "Transformer Engine's fused grouped MLP (op fuser, GLU interleave 32)",
    .writes = {"model.use_transformer_engine_op_fuser", "model.moe_mlp_glu_interleave_size"},
    .after = {{"benchmark-common", "benchmark-common turns the op fuser off"}},
    .ensures = {},
    .run =
        [](PassContext& ctx) {
          ctx.set("model.use_transformer_engine_op_fuser", true);
          ctx.set("model.moe_mlp_glu_interleave_size", 32);
        },
    .description =
        "The GDN branch's GB300 35B-A3B fp8mx settings. The third piece, env "
        "`NVTE_CUTEDSL_FUSED_GROUPED_MLP=1`, comes from the recipe's env pass (env_vars is set "
        "wholesale, last); invariant fused-grouped-mlp-complete checks that all three are there, "
        "since TE silently falls back without any one of them.",
};

} // namespace qr
