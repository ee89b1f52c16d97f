#include "passes/registry.h"

namespace qr {

const std::vector<const PassInfo*>& pass_registry() {
  // In the order a recipe runs them.
  static const std::vector<const PassInfo*> passes{
      &kPrecisionPass,
      &kVocabNullTokenizerPass,
      &kQwen35VlCommonPass,
      &kQwen3VlCommonPass,
      &kParallelismPass,
      &kBatchPass,
      &kDispatcherPass,
      &kCudaGraphsPass,
      &kCommOverlapPass,
      &kBenchmarkCommonPass,
      &kQwen35VlPostPass,
      &kClearCudaGraphScopePass,
      &kOverlapWithOptimizerStepPass,
      &kPartialCudaGraphsPass,
      &kGdnBackendPass,
      &kFinalizeQwen3VlPass,
      &kMoeA2aOverlapPass,
      &kNcclepPass,
      &kFusedGroupedMlpPass,
      &kQwen35Vl35bH100ExecPass,
      &kSetPass,
      &kSetIfFieldPass,
      &kEnvPass,
  };
  return passes;
}

const std::vector<NamedPipeline>& named_pipelines() {
  // Upstream's composite helpers, expanded.
  static const std::vector<NamedPipeline> pipelines{
      {"qwen35-vl-post-clear-scope", "`_qwen35_vl_post_clear_scope` (GDN branch)",
       "qwen35-vl-post,clear-cuda-graph-scope"},
      {"qwen35-vl-post-with-overlap", "`_qwen35_vl_post_with_overlap`",
       "qwen35-vl-post,overlap-param-gather-with-optimizer-step"},
      {"qwen35-vl-post-clear-scope-with-overlap", "`_qwen35_vl_post_clear_scope_with_overlap`",
       "qwen35-vl-post,clear-cuda-graph-scope,overlap-param-gather-with-optimizer-step"},
      {"finalize-qwen3-vl-with-overlap", "`_finalize_qwen3_vl_with_overlap`",
       "finalize-qwen3-vl,overlap-param-gather-with-optimizer-step"},
      {"finalize-qwen3-vl-moe-a2a-overlap", "`_finalize_qwen3_vl_with_moe_a2a_overlap`",
       "finalize-qwen3-vl,moe-a2a-overlap"},
      {"finalize-qwen3-vl-moe-a2a-and-overlap", "`_finalize_qwen3_vl_with_moe_a2a_and_overlap`",
       "finalize-qwen3-vl,moe-a2a-overlap,overlap-param-gather-with-optimizer-step"},
  };
  return pipelines;
}

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo* p : pass_registry())
    if (p->name == name)
      return p;
  return nullptr;
}

const NamedPipeline* find_named_pipeline(std::string_view name) {
  for (const NamedPipeline& p : named_pipelines())
    if (p.name == name)
      return &p;
  return nullptr;
}

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (const PassInfo* p : pass_registry())
    names.push_back(p->name);
  for (const NamedPipeline& p : named_pipelines())
    names.push_back(p.name);
  return names;
}

} // namespace qr
