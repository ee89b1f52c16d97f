// CUDA-graph passes: recipe-level graph writes, qwen35-vl-post (which undoes them), the
// GDN branch's partial graphs, and Qwen3-VL's finalize.
#include "config/error.h"
#include "passes/cuda_graph_names.h"
#include "passes/registry.h"

namespace qr {
namespace {

// Megatron-Bridge `set_cuda_graph_modules` on a Megatron-Core with `CudaGraphModule`: modules as
// enums, the legacy scope null.
void set_modules(PassContext& ctx, const std::vector<std::string>& names) {
  List modules;
  for (const std::string& n : names)
    modules.push_back(ctx.schema().enum_value("CudaGraphModule", n));
  ctx.set("model.cuda_graph_modules", std::move(modules));
  ctx.set("model.cuda_graph_scope", Null{});
}

void run_cuda_graphs(PassContext& ctx) {
  const bool has_modules = ctx.args().has("modules");
  const bool has_scope = ctx.args().has("scope");
  if (has_modules && has_scope)
    throw Error("pass 'cuda-graphs': give 'modules' (Megatron-Core CudaGraphModule) or 'scope' "
                "(the legacy string list), not both");
  if (const Value* impl = ctx.args().find("impl"))
    ctx.set("model.cuda_graph_impl", *impl);
  if (has_modules)
    set_modules(ctx, normalize_module_names(ctx.arg("modules")));
  if (has_scope)
    ctx.set("model.cuda_graph_scope", ctx.arg("scope"));
}

void run_qwen35_vl_post(PassContext& ctx) {
  ctx.set("model.apply_rope_fusion", false);
  ctx.set("model.cuda_graph_impl", "none");
  set_modules(ctx, {});
  ctx.set("optimizer.overlap_param_gather", false);
}

void run_partial_cuda_graphs(PassContext& ctx) {
  ctx.set("model.cuda_graph_impl", "transformer_engine");
  set_modules(ctx, {"attn", "moe_router", "moe_preprocess"});
  ctx.set("model.use_te_rng_tracker", true);
  ctx.set("rng.te_rng_tracker", true);
}

void run_finalize_qwen3_vl(PassContext& ctx) {
  if (ctx.get("comm_overlap").is_null())
    throw Error("pass 'finalize-qwen3-vl': comm_overlap is null; it tunes the recipe's "
                "CommOverlapConfig, so add 'comm-overlap{...}' before it");
  run_null_tokenizer(ctx);
  ctx.set("model.apply_rope_fusion", false);
  ctx.set("model.cuda_graph_impl", "transformer_engine");
  ctx.set("model.cuda_graph_scope", List{Value("moe_router"), Value("moe_preprocess")});
  ctx.set("model.expert_tensor_parallel_size", 1);
  ctx.set("comm_overlap.overlap_param_gather", false);
  ctx.set("comm_overlap.overlap_grad_reduce", false);
}

} // namespace

const PassInfo kCudaGraphsPass{
    .name = "cuda-graphs",
    .summary = "a recipe's own CUDA-graph settings (impl, modules or legacy scope)",
    .options = {{"impl", "str{none|transformer_engine|local|full_iteration}", false,
                 "model.cuda_graph_impl"},
                {"modules", "list<str{attn|mlp|moe|moe_router|moe_preprocess|mamba}>", false,
                 "modules to capture, stored as CudaGraphModule enums (scope becomes null)"},
                {"scope", "list<str{attn|mlp|moe|moe_router|moe_preprocess|mamba|full_iteration}>",
                 false, "the legacy model.cuda_graph_scope strings, as Qwen3-VL recipes write"}},
    .writes = {"model.cuda_graph_impl", "model.cuda_graph_modules", "model.cuda_graph_scope"},
    .run = run_cuda_graphs,
    .description =
        "The CUDA-graph writes in a recipe's body. Before benchmark-common they decide the TE RNG "
        "tracker flags; on Qwen3.5 recipes qwen35-vl-post then clears them (upstream's dead "
        "writes, kept for that RNG side effect). `modules` goes through Megatron-Bridge's "
        "`set_cuda_graph_modules`; `scope` writes the legacy field as Qwen3-VL recipes do.",
};

const PassInfo kQwen35VlPostPass{
    .name = "qwen35-vl-post",
    .summary =
        "Qwen3.5-VL post settings: rope fusion off, CUDA graphs off, no param-gather overlap",
    .writes = {"model.apply_rope_fusion", "model.cuda_graph_impl", "model.cuda_graph_modules",
               "model.cuda_graph_scope", "optimizer.overlap_param_gather"},
    .after = {{"benchmark-common", "it undoes benchmark-common's rope fusion and graph settings"}},
    .run = run_qwen35_vl_post,
    .description = "Megatron-Bridge `_qwen35_vl_post`: rope fusion off, `cuda_graph_impl` none, "
                   "modules cleared (scope null), `optimizer.overlap_param_gather` off. Any CUDA-"
                   "graph write before it is dead.",
};

const PassInfo kClearCudaGraphScopePass{
    .name = "clear-cuda-graph-scope",
    .summary = "set the legacy model.cuda_graph_scope to []",
    .writes = {"model.cuda_graph_scope"},
    .after = {{"qwen35-vl-post", "qwen35-vl-post sets the scope to null"}},
    .run = [](PassContext& ctx) { ctx.set("model.cuda_graph_scope", List{}); },
    .description = "The clear-scope step of upstream's `_qwen35_vl_post_clear_scope*` helpers. "
                   "Harmless to Megatron-Core: its check fires only when the scope is set *and* "
                   "modules are non-empty.",
};

const PassInfo kPartialCudaGraphsPass{
    .name = "partial-cuda-graphs",
    .summary = "TE CUDA graphs for attn, moe_router and moe_preprocess, with the TE RNG tracker",
    .writes = {"model.cuda_graph_impl", "model.cuda_graph_modules", "model.cuda_graph_scope",
               "model.use_te_rng_tracker", "rng.te_rng_tracker"},
    .after = {{"qwen35-vl-post", "qwen35-vl-post turns CUDA graphs off and clears the modules"},
              {"benchmark-common", "benchmark-common rewrites the RNG tracker flags"}},
    .ensures = {"te-rng-tracker-with-graphs"},
    .run = run_partial_cuda_graphs,
    .description =
        "GDN-branch `_enable_partial_cuda_graphs`: `cuda_graph_impl` transformer_engine, modules "
        "[attn, moe_router, moe_preprocess], and both TE RNG tracker flags on (benchmark-common "
        "computed them before graphs were on). Mock data, fixed sequence length 4096 and forced "
        "load balancing remove the variable-shape concern; 397B on 64 GB300 went from 390.5 to "
        "580.2 TFLOP/s/GPU with the attention graph.",
};

const PassInfo kFinalizeQwen3VlPass{
    .name = "finalize-qwen3-vl",
    .summary = "Qwen3-VL finalize: null tokenizer, rope fusion off, TE graphs on the MoE router",
    .writes = {"tokenizer.tokenizer_type", "tokenizer.tokenizer_model", "tokenizer.vocab_size",
               "tokenizer.use_tokenizer_vocab_size", "model.apply_rope_fusion",
               "model.cuda_graph_impl", "model.cuda_graph_scope",
               "model.expert_tensor_parallel_size", "comm_overlap.overlap_param_gather",
               "comm_overlap.overlap_grad_reduce"},
    .after = {{"benchmark-common", "it undoes benchmark-common's rope fusion"},
              {"comm-overlap", "it tunes the recipe's CommOverlapConfig"}},
    .ensures = {"qwen3-vl-no-rope-fusion"},
    .run = run_finalize_qwen3_vl,
    .description =
        "Megatron-Bridge `_finalize_qwen3_vl`: runs vocab-null-tokenizer, turns rope fusion off, "
        "sets `cuda_graph_impl` transformer_engine with the *legacy* scope [\"moe_router\", "
        "\"moe_preprocess\"] (strings; Megatron-Core migrates them at finalize), expert tensor "
        "parallel 1, and comm-overlap param-gather and grad-reduce off. Needs a CommOverlapConfig.",
};

} // namespace qr
