// Each invariant holds on the recipes and fails, naming itself and where, when broken.
#include "helpers.h"
#include "passes/invariants.h"

#include <set>

using namespace qr;
using qr::test::build;
using qr::test::build_pipeline;
using qr::test::error_of;

namespace {

// Breaks an invariant with overrides on a recipe that satisfies it.
std::string broken_by(const std::vector<std::string>& overrides,
                      const std::string& model = "qwen35_397b", const std::string& gpu = "gb300") {
  return error_of([&] { build(model, gpu, "bf16", overrides); });
}

} // namespace

TEST_CASE("CUDA-graph invariants fail after overrides with the fix") {
  CHECK_THAT(broken_by({"model.cuda_graph_scope=[attn]"}),
             Catch::Contains("invariant 'cuda-graph-scope-xor-modules' failed after overrides") &&
                 Catch::Contains("set model.cuda_graph_scope=null"));
  CHECK_THAT(broken_by({"model.cuda_graph_impl=full_iteration"}),
             Catch::Contains("'cuda-graph-full-iteration-alone'"));
  CHECK_THAT(broken_by({"model.cuda_graph_modules=[moe,moe_router]"}),
             Catch::Contains("'cuda-graph-moe-exclusive'"));
  CHECK_THAT(broken_by({"model.cuda_graph_modules=[moe_preprocess]"}),
             Catch::Contains("'cuda-graph-moe-preprocess-needs-router'"));
  CHECK_THAT(broken_by({"model.num_moe_experts=0"}),
             Catch::Contains("'cuda-graph-moe-needs-moe-model'"));
  CHECK_THAT(broken_by({"model.cuda_graph_modules=[mlp]"}),
             Catch::Contains("'cuda-graph-no-mlp-when-all-moe'"));
  CHECK_THAT(broken_by({"model.cuda_graph_modules=[moe]"}),
             Catch::Contains("'cuda-graph-moe-needs-drop-pad'"));
  CHECK_THAT(broken_by({"model.moe_token_dispatcher_type=alltoall",
                        "model.moe_expert_capacity_factor=1.0"}),
             Catch::Contains("'cuda-graph-alltoall-padding-no-preprocess'"));
  CHECK_THAT(broken_by({"model.recompute_granularity=full"}),
             Catch::Contains("'cuda-graph-recompute'"));
  CHECK_THAT(broken_by({"model.cpu_offloading=true"}),
             Catch::Contains("'cuda-graph-no-cpu-offloading'"));
  CHECK_THAT(broken_by({"model.cuda_graph_impl=local"}),
             Catch::Contains("'cuda-graph-local-full-iteration-only'") &&
                 Catch::Contains("use model.cuda_graph_impl=transformer_engine"));
  CHECK_THAT(broken_by({"model.use_te_rng_tracker=false"}),
             Catch::Contains("'te-rng-tracker-with-graphs' failed after overrides"));
}

TEST_CASE("recipe invariants: rope fusion, HybridEP ranks, fused grouped MLP") {
  CHECK_THAT(broken_by({"model.apply_rope_fusion=true"}, "qwen3_30b"),
             Catch::Contains("'qwen3-vl-no-rope-fusion'"));
  CHECK_THAT(broken_by({"env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=64"}),
             Catch::Contains("'hybridep-ranks-match-ep'") &&
                 Catch::Contains("env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN=32"));
  // On an 8-GPU NVLink domain (B300) the ranks are capped at 8 whatever EP is.
  CHECK_NOTHROW(build("qwen35_397b", "b300"));
  CHECK_THAT(broken_by({"model.expert_model_parallel_size=4"}, "qwen35_397b", "b300"),
             Catch::Contains("'hybridep-ranks-match-ep'"));
  CHECK_THAT(error_of([] {
               build("qwen35_35b", "gb300", "fp8mx", {"~env_vars.NVTE_CUTEDSL_FUSED_GROUPED_MLP"});
             }),
             Catch::Contains("'fused-grouped-mlp-complete'") &&
                 Catch::Contains("env_vars.NVTE_CUTEDSL_FUSED_GROUPED_MLP=1"));
}

TEST_CASE("an invariant broken by a pass names the pass and its position") {
  CHECK_THAT(error_of([] {
               build_pipeline("qwen35_397b", "gb300",
                              "cuda-graphs{impl=transformer_engine,modules=[moe_preprocess]}");
             }),
             Catch::Contains("invariant 'cuda-graph-moe-preprocess-needs-router' failed after pass "
                             "'cuda-graphs' (position 1)"));
  CHECK_THAT(
      error_of(
          [] { build_pipeline("qwen35_397b", "gb300", "cuda-graphs{impl=transformer_engine}"); }),
      Catch::Contains("'te-rng-tracker-with-graphs' failed at the end of the pipeline (after "
                      "pass 'cuda-graphs' (position 1))"));
}

TEST_CASE("waived invariants warn instead of failing, only on the recipe's own pipeline") {
  CHECK_NOTHROW(build("qwen3_235b", "b200"));
  CHECK_THAT(error_of([] {
               BuildRequest req;
               req.recipe = "qwen3_235b";
               req.gpu = "b200";
               const RecipeSpec spec =
                   qr::test::compiler().catalog().resolve("qwen3_235b", "b200", "bf16");
               req.pipeline_text = spec.variant->pipeline.text();
               (void)qr::test::compiler().run(req, through(Stage::Invariants));
             }),
             Catch::Contains("'te-rng-tracker-with-graphs'"));
}

TEST_CASE("every invariant has a distinct name and a check") {
  std::set<std::string> names;
  for (const InvariantInfo& i : invariant_registry()) {
    CHECK(names.insert(i.name).second);
    CHECK(i.check != nullptr);
  }
  CHECK(names.size() >= 16);
}
