// CUDA-graph passes: recipe-level graph writes, qwen35-vl-post (which undoes them), the
// GDN branch's partial graphs, and Qwen3-VL's finalize.
#include "passes/cuda_graph_names.h"
#include "passes/registry.h"
#include "support/error.h"

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

} // namespace

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

void run_clear_cuda_graph_scope(PassContext& ctx) {
  ctx.set("model.cuda_graph_scope", List{});
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
  run_vocab_null_tokenizer(ctx);
  ctx.set("model.apply_rope_fusion", false);
  ctx.set("model.cuda_graph_impl", "transformer_engine");
  ctx.set("model.cuda_graph_scope", List{Value("moe_router"), Value("moe_preprocess")});
  ctx.set("model.expert_tensor_parallel_size", 1);
  ctx.set("comm_overlap.overlap_param_gather", false);
  ctx.set("comm_overlap.overlap_grad_reduce", false);
}

} // namespace qr
