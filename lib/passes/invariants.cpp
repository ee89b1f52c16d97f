#include "passes/invariants.h"

#include "passes/cuda_graph_names.h"

#include <algorithm>
#include <set>

namespace qr {
namespace {

const Value* model_field(const Config& c, std::string_view field) {
  return c.find("model." + std::string(field));
}

std::string str_or(const Value* v, std::string_view fallback = "") {
  return v != nullptr && v->is_str() ? v->as_str() : std::string(fallback);
}

bool truthy(const Value* v) {
  return v != nullptr && v->is_bool() && v->as_bool();
}

std::string graph_impl(const Config& c) {
  return str_or(model_field(c, "cuda_graph_impl"), "none");
}

std::string list_text(const std::set<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return "[" + out + "]";
}

std::string scope_and_modules(const Config& c) {
  const Value* scope = model_field(c, "cuda_graph_scope");
  const Value* modules = model_field(c, "cuda_graph_modules");
  if (scope == nullptr || scope->is_null())
    return {};
  const bool modules_empty = modules == nullptr || modules->is_null() ||
                             (modules->is_str() && modules->as_str() == "full") ||
                             (modules->is_list() && modules->as_list().empty());
  if (modules_empty)
    return {};
  return "model.cuda_graph_scope is " + brief(*scope) + " and model.cuda_graph_modules is " +
         list_text(cuda_graph_module_names(c)) +
         "; Megatron-Core refuses both (scope is the legacy field): set "
         "model.cuda_graph_scope=null";
}

std::string impl_valid(const Config& c) {
  static const std::set<std::string> ok{"none", "transformer_engine", "local", "full_iteration"};
  for (const char* f : {"cuda_graph_impl", "vision_cuda_graph_impl"}) {
    const Value* v = model_field(c, f);
    if (v != nullptr && !(v->is_str() && ok.count(v->as_str())))
      return "model." + std::string(f) + " is " + brief(*v) +
             "; it must be one of none, transformer_engine, local, full_iteration";
  }
  return {};
}

std::string full_iteration_alone(const Config& c) {
  const auto names = cuda_graph_module_names(c);
  if (graph_impl(c) == "full_iteration" && !names.empty())
    return "model.cuda_graph_impl is full_iteration but modules " + list_text(names) +
           " are set; a full-iteration graph captures everything: clear model.cuda_graph_modules";
  const Value* scope = model_field(c, "cuda_graph_scope");
  if (scope != nullptr && scope->is_list() && scope->as_list().size() > 1)
    for (const Value& s : scope->as_list())
      if (s.is_str() && s.as_str() == "full_iteration")
        return "model.cuda_graph_scope lists full_iteration with other scopes; full_iteration "
               "must be alone";
  return {};
}

std::string moe_exclusive(const Config& c) {
  const auto names = cuda_graph_module_names(c);
  if (names.count("moe") && names.count("moe_router"))
    return "CUDA-graph modules " + list_text(names) +
           " hold both moe and moe_router; Megatron-Core allows one: drop one of them";
  return {};
}

std::string preprocess_needs_router(const Config& c) {
  const auto names = cuda_graph_module_names(c);
  if (names.count("moe_preprocess") && !names.count("moe_router") && graph_impl(c) != "local")
    return "CUDA-graph modules " + list_text(names) +
           " hold moe_preprocess without moe_router; add moe_router";
  return {};
}

std::string moe_modules_need_moe(const Config& c) {
  const auto names = cuda_graph_module_names(c);
  const Value* experts = model_field(c, "num_moe_experts");
  const bool moe_model = experts != nullptr && experts->is_int() && experts->as_int() > 0;
  if (!moe_model)
    for (const char* n : {"moe", "moe_router", "moe_preprocess"})
      if (names.count(n))
        return "CUDA-graph module " + std::string(n) + " needs an MoE model, but " +
               (experts == nullptr || experts->is_null()
                    ? std::string("model.num_moe_experts is not set")
                    : "model.num_moe_experts is " + brief(*experts)) +
               ": drop " + n + " from model.cuda_graph_modules";
  return {};
}

std::string no_mlp_when_all_moe(const Config& c) {
  const auto names = cuda_graph_module_names(c);
  const Value* freq = model_field(c, "moe_layer_freq");
  const Value* experts = model_field(c, "num_moe_experts");
  const bool all_moe = experts != nullptr && experts->is_int() && experts->as_int() > 0 &&
                       freq != nullptr && freq->is_int() && freq->as_int() == 1;
  if (names.count("mlp") && all_moe)
    return "CUDA-graph module mlp is set but every layer is MoE (model.moe_layer_freq=1); "
           "there is no dense MLP to capture: drop mlp";
  return {};
}

std::string moe_needs_drop_pad(const Config& c) {
  const auto names = cuda_graph_module_names(c);
  if (!names.count("moe"))
    return {};
  const Value* cap = model_field(c, "moe_expert_capacity_factor");
  const bool pad = truthy(model_field(c, "moe_pad_expert_input_to_capacity"));
  if (cap == nullptr || cap->is_null() || !pad)
    return "CUDA-graph module moe needs a drop-and-pad MoE (model.moe_expert_capacity_factor set "
           "and model.moe_pad_expert_input_to_capacity=true); use moe_router instead";
  return {};
}

std::string alltoall_padding_preprocess(const Config& c) {
  const auto names = cuda_graph_module_names(c);
  if (!names.count("moe_preprocess") ||
      str_or(model_field(c, "moe_token_dispatcher_type")) != "alltoall")
    return {};
  const Value* cap = model_field(c, "moe_expert_capacity_factor");
  const bool padding = (cap != nullptr && !cap->is_null()) ||
                       truthy(model_field(c, "moe_router_padding_for_fp8")) ||
                       truthy(model_field(c, "moe_router_padding_for_quantization"));
  if (padding)
    return "CUDA-graph module moe_preprocess cannot be captured with the alltoall dispatcher and "
           "capacity or router padding; drop moe_preprocess or the padding";
  return {};
}

std::string recompute_needs_full_iteration(const Config& c) {
  const std::string impl = graph_impl(c);
  if (impl == "none" || impl == "full_iteration")
    return {};
  if (str_or(model_field(c, "recompute_granularity")) == "full")
    return "model.recompute_granularity is full with CUDA graphs (" + impl +
           "); Megatron-Core needs selective recompute or cuda_graph_impl=full_iteration";
  return {};
}

std::string cpu_offload_no_graphs(const Config& c) {
  if (graph_impl(c) != "none" && truthy(model_field(c, "cpu_offloading")))
    return "model.cpu_offloading is on with CUDA graphs; Megatron-Core refuses the pair: turn "
           "one off";
  return {};
}

std::string local_impl_full_iteration_only(const Config& c) {
  if (graph_impl(c) == "local" && !cuda_graph_module_names(c).empty())
    return "model.cuda_graph_impl=local captures only full iterations; use "
           "model.cuda_graph_impl=transformer_engine for scoped CUDA graphs";
  return {};
}

std::string te_rng_with_graphs(const Config& c) {
  const std::string impl = graph_impl(c);
  if (impl != "none" && !truthy(model_field(c, "use_te_rng_tracker")))
    return "model.cuda_graph_impl is " + impl +
           " but model.use_te_rng_tracker is false; Megatron-Bridge's GPTModelProvider refuses "
           "this: set model.use_te_rng_tracker=true rng.te_rng_tracker=true";
  return {};
}

std::string rope_fusion_qwen3_vl(const Config& c) {
  const Value* model = c.find("model");
  if (model == nullptr ||
      model->target() != "megatron.bridge.models.qwen_vl.qwen3_vl_provider.Qwen3VLMoEModelProvider")
    return {};
  if (truthy(model_field(c, "apply_rope_fusion")))
    return "model.apply_rope_fusion is true; the Qwen3-VL provider refuses rope fusion: set "
           "model.apply_rope_fusion=false";
  return {};
}

std::string hybridep_ranks(const Config& c) {
  const Value* ranks = c.find("env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN");
  if (ranks == nullptr || str_or(model_field(c, "moe_flex_dispatcher_backend")) != "hybridep" ||
      str_or(model_field(c, "moe_token_dispatcher_type")) != "flex")
    return {};
  const Value* ep = model_field(c, "expert_model_parallel_size");
  if (ep == nullptr || !ep->is_int())
    return {};
  std::int64_t expected = ep->as_int();
  std::string why = "model.expert_model_parallel_size=" + std::to_string(ep->as_int());
  // HybridEP's ranks per NVLink domain is EP, capped by the domain (8 on HGX B300 and H100).
  const Value* domain = c.find("env_vars.NVLINK_DOMAIN_SIZE");
  if (domain != nullptr && domain->is_int() && domain->as_int() < expected) {
    expected = domain->as_int();
    why += " capped by env_vars.NVLINK_DOMAIN_SIZE=" + std::to_string(domain->as_int());
  }
  const bool ok = ranks->is_int() ? ranks->as_int() == expected
                                  : ranks->is_str() && ranks->as_str() == std::to_string(expected);
  if (!ok)
    return "env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN is " + brief(*ranks) + " but " + why +
           " gives " + std::to_string(expected) +
           ": set env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=" + std::to_string(expected);
  return {};
}

std::string fused_grouped_mlp_complete(const Config& c) {
  const Value* env = c.find("env_vars.NVTE_CUTEDSL_FUSED_GROUPED_MLP");
  const Value* interleave = model_field(c, "moe_mlp_glu_interleave_size");
  const bool env_on = env != nullptr && ((env->is_int() && env->as_int() == 1) ||
                                         (env->is_str() && env->as_str() == "1"));
  const bool interleave_set = interleave != nullptr && !interleave->is_null();
  if (!env_on && !interleave_set)
    return {};
  const bool fuser = truthy(model_field(c, "use_transformer_engine_op_fuser"));
  const bool interleave_32 = interleave_set && interleave->is_int() && interleave->as_int() == 32;
  if (env_on && fuser && interleave_32)
    return {};
  std::string missing;
  if (!fuser)
    missing += " model.use_transformer_engine_op_fuser=true";
  if (!interleave_32)
    missing += " model.moe_mlp_glu_interleave_size=32";
  if (!env_on)
    missing += " env_vars.NVTE_CUTEDSL_FUSED_GROUPED_MLP=1";
  return "the fused grouped MLP needs three settings together, or Transformer Engine silently "
         "falls back to the unfused path; set" +
         missing;
}

} // namespace

const std::vector<InvariantInfo>& invariant_registry() {
  using W = InvariantInfo::When;
  static const std::vector<InvariantInfo> reg{
      {"cuda-graph-scope-xor-modules",
       "legacy cuda_graph_scope and cuda_graph_modules are never both set", W::Always,
       "Megatron-Core TransformerConfig.__post_init__", scope_and_modules},
      {"cuda-graph-impl-valid",
       "cuda_graph_impl is none, transformer_engine, local or full_iteration", W::Always,
       "Megatron-Core TransformerConfig.__post_init__", impl_valid},
      {"cuda-graph-full-iteration-alone", "a full-iteration graph has no per-module graphs",
       W::Always, "Megatron-Core TransformerConfig.__post_init__", full_iteration_alone},
      {"cuda-graph-moe-exclusive", "CUDA-graph modules never hold both moe and moe_router",
       W::Always, "Megatron-Core TransformerConfig.__post_init__", moe_exclusive},
      {"cuda-graph-moe-preprocess-needs-router", "moe_preprocess is captured only with moe_router",
       W::Always, "Megatron-Core TransformerConfig.__post_init__", preprocess_needs_router},
      {"cuda-graph-moe-needs-moe-model", "MoE CUDA-graph modules only on MoE models", W::Always,
       "Megatron-Core TransformerConfig.__post_init__", moe_modules_need_moe},
      {"cuda-graph-no-mlp-when-all-moe", "no mlp graph when every layer is MoE", W::Always,
       "Megatron-Core TransformerConfig.__post_init__", no_mlp_when_all_moe},
      {"cuda-graph-moe-needs-drop-pad", "the moe graph needs a drop-and-pad MoE", W::Always,
       "Megatron-Core TransformerConfig.__post_init__", moe_needs_drop_pad},
      {"cuda-graph-alltoall-padding-no-preprocess",
       "alltoall with capacity or router padding cannot capture moe_preprocess", W::Always,
       "Megatron-Core TransformerConfig.__post_init__", alltoall_padding_preprocess},
      {"cuda-graph-recompute", "full (non-selective) recompute only with full-iteration graphs",
       W::Always, "Megatron-Core TransformerConfig.__post_init__", recompute_needs_full_iteration},
      {"cuda-graph-no-cpu-offloading", "CPU offloading and CUDA graphs never together", W::Always,
       "Megatron-Core TransformerConfig.__post_init__", cpu_offload_no_graphs},
      {"cuda-graph-local-full-iteration-only", "the local impl captures full iterations only",
       W::Always, "Megatron-Bridge validate_cuda_graph_configuration",
       local_impl_full_iteration_only},
      {"te-rng-tracker-with-graphs", "the TE RNG tracker is on whenever CUDA graphs are", W::Final,
       "Megatron-Bridge GPTModelProvider", te_rng_with_graphs},
      {"qwen3-vl-no-rope-fusion", "the Qwen3-VL provider runs without rope fusion", W::Final,
       "Megatron-Bridge Qwen3VLMoEModelProvider", rope_fusion_qwen3_vl},
      {"hybridep-ranks-match-ep",
       "NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN is EP, capped by NVLINK_DOMAIN_SIZE", W::Final,
       "Megatron-Bridge perf recipes (GDN-branch test)", hybridep_ranks},
      {"fused-grouped-mlp-complete",
       "op fuser, GLU interleave 32 and NVTE_CUTEDSL_FUSED_GROUPED_MLP=1 come together", W::Final,
       "GDN-branch GB300 35B fp8mx recipe", fused_grouped_mlp_complete},
  };
  return reg;
}

const InvariantInfo* find_invariant(std::string_view name) {
  for (const InvariantInfo& i : invariant_registry())
    if (i.name == name)
      return &i;
  return nullptr;
}

} // namespace qr
