// The reference's recipe rows, checked in the built configs: GPU count, parallelism, batch,
// dispatcher, final CUDA-graph state, TE RNG tracker, comm-overlap flags and the HybridEP env.
// The rows are the reference table (upstream-recipes.md §2.1 as Megatron-Bridge dumps it, and the
// GDN branch's §2.3), written out here independently of recipes/.
#include "helpers.h"

#include <set>

using namespace qr;
using qr::test::at;
using qr::test::build;
using qr::test::compiler;
using qr::test::error_of;

namespace {

struct Row {
  const char* model;
  const char* gpu;
  const char* precision;
  int gpus, tp, pp, vp, ep; // vp -1: none
  bool sp;
  int mbs, gbs;
  const char* dispatcher; // alltoall, hybridep or ncclep
  // none: impl none, modules [], scope null; none[]: the same with scope []; q3: TE with the
  // legacy scope [moe_router, moe_preprocess]; partial: TE [attn, moe_router, moe_preprocess];
  // router: TE [moe_router, moe_preprocess]
  const char* graphs;
  bool te_rng;
  const char* overlap; // tp, grad, param, param-with-optimizer-step, MoE EP comm, delay wgrad
  int ranks;           // NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN, 0: absent
};

const Row kRows[] = {
    {"qwen35_122b", "h100", "bf16", 128, 2, 8, 2, 16, true, 1, 1024, "alltoall", "none[]", false,
     "FFFTTT", 0},
    {"qwen35_122b", "h100", "fp8cs", 128, 2, 8, 2, 16, true, 1, 1024, "alltoall", "none[]", false,
     "FFFTTT", 0},
    {"qwen35_122b", "b200", "bf16", 32, 1, 4, 4, 8, false, 1, 1024, "alltoall", "none[]", false,
     "TFFTTT", 0},
    {"qwen35_122b", "b200", "fp8cs", 32, 1, 4, 4, 8, false, 1, 1024, "alltoall", "none[]", false,
     "TFFTTT", 0},
    {"qwen35_122b", "b200", "fp8mx", 32, 1, 4, 4, 8, false, 1, 1024, "alltoall", "none[]", false,
     "TFF-TT", 0},
    {"qwen35_122b", "b300", "bf16", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_122b", "b300", "fp8cs", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_122b", "b300", "fp8mx", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_122b", "gb200", "bf16", 32, 1, 4, -1, 8, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_122b", "gb200", "fp8cs", 32, 1, 4, -1, 8, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_122b", "gb200", "fp8mx", 32, 1, 4, -1, 8, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_122b", "gb300", "bf16", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 32},
    {"qwen35_122b", "gb300", "fp8cs", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 32},
    {"qwen35_122b", "gb300", "fp8mx", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 32},
    {"qwen35_122b", "vr200", "bf16", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 32},
    {"qwen35_122b", "vr200", "fp8cs", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 32},
    {"qwen35_122b", "vr200", "fp8mx", 32, 1, 1, -1, 32, false, 2, 1024, "hybridep", "none", true,
     "TFF---", 32},
    {"qwen35_35b", "h100", "bf16", 16, 1, 2, -1, 8, false, 1, 512, "hybridep", "partial", true,
     "FFFFFF", 8},
    {"qwen35_35b", "h100", "fp8cs", 16, 1, 2, 12, 8, false, 1, 512, "alltoall", "none[]", false,
     "TFFTTT", 0},
    {"qwen35_35b", "b200", "bf16", 8, 1, 1, -1, 8, false, 1, 512, "alltoall", "none", true,
     "TFF---", 0},
    {"qwen35_35b", "b200", "fp8cs", 8, 1, 1, -1, 8, false, 1, 512, "alltoall", "none", true,
     "TFF---", 0},
    {"qwen35_35b", "b200", "fp8mx", 8, 1, 1, -1, 8, false, 1, 512, "alltoall", "none", true,
     "TFF---", 0},
    {"qwen35_35b", "b300", "bf16", 8, 1, 1, -1, 8, false, 8, 512, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_35b", "b300", "fp8cs", 8, 1, 1, -1, 8, false, 8, 512, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_35b", "b300", "fp8mx", 8, 1, 1, -1, 8, false, 8, 512, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_35b", "gb200", "bf16", 8, 1, 1, -1, 8, false, 2, 480, "hybridep", "none", false,
     "TFF---", 8},
    {"qwen35_35b", "gb200", "fp8cs", 8, 1, 1, -1, 8, false, 3, 480, "hybridep", "none", false,
     "TFF---", 8},
    {"qwen35_35b", "gb200", "fp8mx", 8, 1, 1, -1, 8, false, 3, 480, "hybridep", "router", false,
     "TFF---", 8},
    {"qwen35_397b", "h100", "bf16", 256, 2, 8, 4, 32, true, 1, 1024, "alltoall", "none[]", false,
     "FFFTTT", 0},
    {"qwen35_397b", "h100", "fp8cs", 256, 2, 8, 4, 32, true, 1, 1024, "alltoall", "none[]", false,
     "FFFTTT", 0},
    {"qwen35_397b", "b200", "bf16", 64, 1, 8, 4, 8, false, 1, 1024, "alltoall", "none[]", false,
     "TFFTTT", 0},
    {"qwen35_397b", "b200", "fp8cs", 64, 1, 8, 4, 8, false, 1, 1024, "alltoall", "none[]", false,
     "TFFTTT", 0},
    {"qwen35_397b", "b200", "fp8mx", 64, 1, 8, 4, 8, false, 1, 1024, "alltoall", "none[]", false,
     "TFF-TT", 0},
    {"qwen35_397b", "b300", "bf16", 64, 1, 1, -1, 64, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_397b", "b300", "fp8cs", 64, 1, 1, -1, 64, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_397b", "b300", "fp8mx", 64, 1, 1, -1, 64, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_397b", "gb200", "bf16", 64, 1, 8, -1, 8, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_397b", "gb200", "fp8cs", 64, 1, 8, -1, 8, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen35_397b", "gb200", "fp8mx", 64, 1, 8, -1, 8, false, 1, 1024, "hybridep", "none", true,
     "TFF---", 8},
    {"qwen3_235b", "h100", "bf16", 256, 2, 8, 4, 32, true, 1, 1024, "alltoall", "q3", false,
     "FFFTTT", 0},
    {"qwen3_235b", "h100", "fp8cs", 256, 2, 8, 4, 32, true, 1, 1024, "alltoall", "q3", false,
     "FFFTTT", 0},
    {"qwen3_235b", "b200", "bf16", 64, 1, 8, -1, 8, false, 1, 1024, "alltoall", "q3", false,
     "TFF---", 0},
    {"qwen3_235b", "b200", "fp8cs", 64, 1, 8, -1, 8, false, 1, 1024, "alltoall", "q3", false,
     "TFF---", 0},
    {"qwen3_235b", "b200", "fp8mx", 64, 1, 8, -1, 8, false, 1, 1024, "alltoall", "q3", false,
     "TFF---", 0},
    {"qwen3_235b", "gb200", "bf16", 64, 1, 8, -1, 8, false, 2, 1024, "hybridep", "q3", true,
     "TFF---", 8},
    {"qwen3_235b", "gb200", "fp8cs", 64, 1, 8, -1, 8, false, 2, 1024, "hybridep", "q3", true,
     "TFF---", 8},
    {"qwen3_235b", "gb200", "fp8mx", 64, 1, 8, -1, 8, false, 2, 1024, "hybridep", "q3", true,
     "TFF---", 8},
    {"qwen3_235b", "gb300", "bf16", 64, 1, 1, -1, 64, false, 1, 1024, "hybridep", "q3", true,
     "TFF---", 64},
    {"qwen3_235b", "gb300", "fp8cs", 64, 1, 1, -1, 64, false, 1, 1024, "hybridep", "q3", true,
     "TFF---", 64},
    {"qwen3_235b", "gb300", "fp8mx", 64, 1, 1, -1, 64, false, 1, 1024, "hybridep", "q3", true,
     "TFF---", 64},
    {"qwen3_30b", "h100", "bf16", 16, 1, 2, 12, 8, false, 1, 512, "alltoall", "q3", true, "TFFTTT",
     0},
    {"qwen3_30b", "h100", "fp8cs", 16, 1, 2, 12, 8, false, 1, 512, "alltoall", "q3", false,
     "TFFTTT", 0},
    {"qwen3_30b", "b200", "bf16", 8, 1, 1, -1, 8, false, 1, 512, "alltoall", "q3", true, "TFF---",
     0},
    {"qwen3_30b", "b200", "fp8cs", 8, 1, 1, -1, 8, false, 1, 512, "alltoall", "q3", true, "TFF---",
     0},
    {"qwen3_30b", "b200", "fp8mx", 8, 1, 1, -1, 8, false, 1, 512, "alltoall", "q3", true, "TFF---",
     0},
    {"qwen3_30b", "gb200", "bf16", 8, 1, 1, -1, 8, false, 4, 512, "hybridep", "q3", true, "TFF---",
     8},
    {"qwen3_30b", "gb200", "fp8cs", 8, 1, 1, -1, 8, false, 4, 512, "hybridep", "q3", true, "TFF---",
     8},
    {"qwen3_30b", "gb200", "fp8mx", 8, 1, 1, -1, 8, false, 4, 512, "hybridep", "q3", true, "TFF---",
     8},
    {"qwen3_30b", "gb300", "bf16", 8, 1, 1, -1, 8, false, 8, 512, "hybridep", "q3", true, "TFF---",
     8},
    {"qwen3_30b", "gb300", "fp8cs", 8, 1, 1, -1, 8, false, 8, 512, "hybridep", "q3", true, "TFF---",
     8},
    {"qwen3_30b", "gb300", "fp8mx", 8, 1, 1, -1, 8, false, 8, 512, "hybridep", "q3", true, "TFF---",
     8},
    // GDN branch (§2.3): GB300 35B-A3B and 397B-A17B, and VR200 taking them over.
    {"qwen35_35b", "gb300", "bf16", 8, 1, 1, -1, 8, false, 4, 512, "ncclep", "partial", true,
     "TFF---", 0},
    {"qwen35_35b", "gb300", "fp8cs", 8, 1, 1, -1, 8, false, 4, 512, "hybridep", "partial", true,
     "TFF---", 8},
    {"qwen35_35b", "gb300", "fp8mx", 8, 1, 1, -1, 8, false, 4, 512, "hybridep", "partial", true,
     "TFF---", 8},
    {"qwen35_397b", "gb300", "bf16", 64, 1, 1, -1, 32, false, 1, 1024, "hybridep", "partial", true,
     "TFF---", 32},
    {"qwen35_397b", "gb300", "fp8cs", 64, 1, 1, -1, 32, false, 1, 1024, "hybridep", "partial", true,
     "TFF---", 32},
    {"qwen35_397b", "gb300", "fp8mx", 64, 1, 1, -1, 32, false, 1, 1024, "hybridep", "partial", true,
     "TFF---", 32},
    {"qwen35_35b", "vr200", "bf16", 8, 1, 1, -1, 8, false, 4, 512, "ncclep", "partial", true,
     "TFF---", 0},
    {"qwen35_35b", "vr200", "fp8cs", 8, 1, 1, -1, 8, false, 4, 512, "hybridep", "partial", true,
     "TFF---", 8},
    {"qwen35_35b", "vr200", "fp8mx", 8, 1, 1, -1, 8, false, 4, 512, "hybridep", "partial", true,
     "TFF---", 8},
    {"qwen35_397b", "vr200", "bf16", 64, 1, 1, -1, 32, false, 1, 1024, "hybridep", "partial", true,
     "TFF---", 32},
    {"qwen35_397b", "vr200", "fp8cs", 64, 1, 1, -1, 32, false, 1, 1024, "hybridep", "partial", true,
     "TFF---", 32},
    {"qwen35_397b", "vr200", "fp8mx", 64, 1, 1, -1, 32, false, 1, 1024, "hybridep", "partial", true,
     "TFF---", 32},
};

std::string flag(const BuildResult& r, const std::string& path) {
  const std::string v = at(r, path);
  return v == "true" ? "T" : v == "false" ? "F" : "-";
}

} // namespace

TEST_CASE("every reference row, in the built config") {
  std::set<std::string> seen;
  for (const Row& row : kRows) {
    const std::string id = std::string(row.model) + "@" + row.gpu + ":" + row.precision;
    CAPTURE(id);
    seen.insert(id);
    const BuildResult r = build(row.model, row.gpu, row.precision);
    CHECK(r.recipe->entry->num_gpus == row.gpus);
    CHECK(at(r, "model.tensor_model_parallel_size") == std::to_string(row.tp));
    CHECK(at(r, "model.pipeline_model_parallel_size") == std::to_string(row.pp));
    CHECK(at(r, "model.virtual_pipeline_model_parallel_size") ==
          (row.vp < 0 ? "null" : std::to_string(row.vp)));
    CHECK(at(r, "model.expert_model_parallel_size") == std::to_string(row.ep));
    CHECK(at(r, "model.context_parallel_size") == "1");
    CHECK(at(r, "model.expert_tensor_parallel_size") == "1");
    CHECK(at(r, "model.sequence_parallel") == (row.sp ? "true" : "false"));
    CHECK(at(r, "train.micro_batch_size") == std::to_string(row.mbs));
    CHECK(at(r, "train.global_batch_size") == std::to_string(row.gbs));
    const std::string dispatcher = at(r, "model.moe_token_dispatcher_type") == "alltoall"
                                       ? "alltoall"
                                       : at(r, "model.moe_flex_dispatcher_backend");
    CHECK(dispatcher == row.dispatcher);
    const std::string impl = at(r, "model.cuda_graph_impl");
    const std::string graphs = at(r, "model.cuda_graph_modules");
    const std::string scope = at(r, "model.cuda_graph_scope");
    const std::string g = row.graphs;
    if (g == "none" || g == "none[]") {
      CHECK(impl == "none");
      CHECK(graphs == "[]");
      CHECK(scope == (g == "none" ? "null" : "[]"));
    } else if (g == "q3") {
      CHECK(impl == "transformer_engine");
      CHECK(graphs == "full");
      CHECK(scope == "[moe_router, moe_preprocess]");
    } else {
      CHECK(impl == "transformer_engine");
      CHECK(scope == "null");
      CHECK((graphs.find("_name_: attn") != std::string::npos) == (g == "partial"));
      CHECK(graphs.find("_name_: moe_router") != std::string::npos);
      CHECK(graphs.find("_name_: moe_preprocess") != std::string::npos);
    }
    CHECK(at(r, "model.use_te_rng_tracker") == (row.te_rng ? "true" : "false"));
    CHECK(at(r, "rng.te_rng_tracker") == (row.te_rng ? "true" : "false"));
    const std::string overlap = flag(r, "comm_overlap.tp_comm_overlap") +
                                flag(r, "comm_overlap.overlap_grad_reduce") +
                                flag(r, "comm_overlap.overlap_param_gather") +
                                flag(r, "comm_overlap.overlap_param_gather_with_optimizer_step") +
                                flag(r, "comm_overlap.overlap_moe_expert_parallel_comm") +
                                flag(r, "comm_overlap.delay_wgrad_compute");
    CHECK(overlap == row.overlap);
    CHECK(at(r, "env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN") ==
          (row.ranks == 0 ? "<absent>" : std::to_string(row.ranks)));
    CHECK(at(r, "env_vars.TORCH_NCCL_HIGH_PRIORITY") == "1");
    // Every row: sequence 4096, forced load balancing, no recompute, rope fusion off, 50 steps.
    CHECK(at(r, "model.seq_length") == "4096");
    CHECK(at(r, "dataset.seq_length") == "4096");
    CHECK(at(r, "model.moe_router_force_load_balancing") == "true");
    CHECK(at(r, "model.recompute_granularity") == "null");
    CHECK(at(r, "model.apply_rope_fusion") == "false");
    CHECK(at(r, "ddp.overlap_grad_reduce") == "false");
    CHECK(at(r, "ddp.overlap_param_gather") == "false");
    CHECK(at(r, "optimizer.overlap_param_gather") == "false");
    CHECK(at(r, "train.train_iters") == "50");
    CHECK(at(r, "tokenizer.tokenizer_type") == "NullTokenizer");
    CHECK(at(r, "tokenizer.vocab_size") == at(r, "model.vocab_size"));
  }
  // The catalogue has exactly these recipes.
  std::set<std::string> built;
  for (const RecipeSpec& s : compiler().catalog().all())
    built.insert(s.id());
  CHECK(built == seen);
}

TEST_CASE("GDN-branch specifics") {
  SECTION(
      "35B-A3B bf16 on GB300: NCCL EP dispatcher and its env, grouped tensors where they exist") {
    auto r = build("qwen35_35b", "gb300", "bf16", {}, "gdn");
    CHECK(at(r, "model.moe_use_grouped_tensor") == "true");
    CHECK(at(r, "env_vars.NCCL_EP_HT_EM_PULL_PUSH") == "1");
    CHECK(at(r, "env_vars.NVLINK_DOMAIN_SIZE") == "<absent>");
    CHECK(at(build("qwen35_35b", "gb300", "bf16"), "model.moe_use_grouped_tensor") == "<absent>");
  }
  SECTION("35B-A3B fp8mx on GB300: the fused grouped MLP's three settings") {
    auto r = build("qwen35_35b", "gb300", "fp8mx");
    CHECK(at(r, "model.use_transformer_engine_op_fuser") == "true");
    CHECK(at(r, "model.moe_mlp_glu_interleave_size") == "32");
    CHECK(at(r, "env_vars.NVTE_CUTEDSL_FUSED_GROUPED_MLP") == "1");
    CHECK(at(r, "mixed_precision.fp8_recipe") == "mxfp8");
  }
  SECTION(
      "gdn_kernel_backend: transformer_engine only on GB300 35B/397B, fla on every other Qwen3.5") {
    for (const RecipeSpec& s : compiler().catalog().all()) {
      if (s.model->name.rfind("qwen35_", 0) != 0)
        continue;
      CAPTURE(s.id());
      const bool te = s.gpu->name == "gb300" && s.model->name != "qwen35_122b";
      CHECK(at(build(s.model->name, s.gpu->name, s.precision, {}, "gdn"),
               "model.gdn_kernel_backend") == (te ? "transformer_engine" : "fla"));
      CHECK(at(build(s.model->name, s.gpu->name, s.precision), "model.gdn_kernel_backend") ==
            "<absent>");
    }
  }
  SECTION("GB200 35B-A3B: GBS 480, MBS 2/3/3, router graphs only for fp8mx") {
    CHECK(
        at(build("qwen35_35b", "gb200", "fp8mx"), "model.cuda_graph_modules").find("moe_router") !=
        std::string::npos);
    CHECK(at(build("qwen35_35b", "gb200", "fp8cs"), "model.cuda_graph_modules") == "[]");
  }
  SECTION("H100 35B-A3B bf16: PP 2 with 17 + 23 layers = 40, vision graphs") {
    auto r = build("qwen35_35b", "h100", "bf16");
    CHECK(at(r, "model.num_layers_in_first_pipeline_stage") == "17");
    CHECK(at(r, "model.num_layers_in_last_pipeline_stage") == "23");
    CHECK(at(r, "model.num_layers") == "40");
    CHECK(at(r, "model.vision_cuda_graph_impl") == "transformer_engine");
    CHECK(at(r, "optimizer.use_precision_aware_optimizer") == "true");
  }
}

TEST_CASE("names, aliases and combinations that do not exist") {
  CHECK(build("qwen36_35b", "gb300").recipe->model->name == "qwen35_35b");
  CHECK(build("qwen35_vl_397b_a17b", "gb300").recipe->model->name == "qwen35_397b");
  CHECK(build("qwen35_397b@gb300:fp8mx", "").recipe->precision == "fp8mx");
  CHECK(build("qwen35_397b@gb300:fp8mx", "gb300", "fp8mx").recipe->precision == "fp8mx");
  // A flag that disagrees with the spec is refused, never dropped.
  CHECK_THAT(error_of([] { build("qwen35_397b@gb300:fp8mx", "", "bf16"); }),
             Catch::Contains("names precision fp8mx but --precision is bf16"));
  CHECK_THAT(error_of([] { build("qwen35_397b@gb300", "", "fp8mx"); }),
             Catch::Contains("has no :PRECISION, so it means bf16, but --precision is fp8mx"));
  CHECK(build("qwen35_397b", "gb300").recipe->upstream_name() ==
        "qwen35_vl_397b_a17b_pretrain_64gpu_gb300_bf16_config");
  CHECK_THAT(error_of([] { build("qwen3_30b", "b300"); }),
             Catch::Contains("qwen3_30b has no recipe for b300; it has"));
  CHECK_THAT(error_of([] { build("qwen3_30b", "h100", "fp8mx"); }),
             Catch::Contains("has no fp8mx recipe; it has bf16, fp8cs"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "nvfp4"); }),
             Catch::Contains("no upstream Qwen-VL recipe uses nvfp4"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "fp16"); }),
             Catch::Contains("unknown precision 'fp16'"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "h200"); }), Catch::Contains("unknown GPU 'h200'"));
  CHECK_THAT(error_of([] { build("qwen35_397b", "gb300", "bf16", {}, "gdm"); }),
             Catch::Contains("unknown Megatron-Core profile 'gdm' (did you mean 'gdn'?)"));
}

TEST_CASE("recipes from a directory (--recipes-dir): the recipes/ tree on disk builds what the "
          "built-in copy builds") {
  const Compiler from_disk(directory_data(std::string(QR_SOURCE_DIR) + "/recipes"));
  BuildRequest req;
  req.recipe = "qwen35_35b@gb300:fp8mx";
  const BuildResult disk = from_disk.run(req, through(Stage::Invariants));
  CHECK(emit_config(disk, false) ==
        emit_config(compiler().run(req, through(Stage::Invariants)), false));
  // Its header's command names the directory, so that it rebuilds the same file.
  CHECK(disk.command ==
        "qwen-recipe --recipes-dir " + std::string(QR_SOURCE_DIR) +
            "/recipes build qwen35_35b --gpu gb300 --precision fp8mx --mcore pinned");
  CHECK_THAT(error_of([] { (void)directory_data("/no/such/recipes"); }),
             Catch::Contains("/no/such/recipes: not a directory"));
}

TEST_CASE("a recipe that waives an unknown name is refused when the catalogue loads") {
  namespace fs = std::filesystem;
  const fs::path tree = test::scratch_dir() / "recipes_unknown_waiver";
  fs::remove_all(tree);
  fs::copy(fs::path(QR_SOURCE_DIR) / "recipes", tree, fs::copy_options::recursive);
  const fs::path b200 = tree / "gpus" / "b200.yaml";
  std::string text = qr::test::read_bytes(b200);
  const std::string name = "      te-rng-tracker-with-graphs: >-\n";
  REQUIRE(text.find(name) != std::string::npos);
  text.replace(text.find(name), name.size(), "      te-rng-tracker-with-graph: >-\n");
  std::ofstream(b200, std::ios::binary) << text;
  CHECK_THAT(error_of([&] { (void)Compiler(directory_data(tree.string())); }),
             Catch::Matches(".*gpus/b200\\.yaml:26:7: waives unknown invariant or check "
                            "'te-rng-tracker-with-graph' \\(did you mean "
                            "'te-rng-tracker-with-graphs'\\?\\).*"));
  fs::remove_all(tree);
}
