// Start-up checks: one failing case (at least) per rule, the waivers of shipped recipes, and the
// cuDNN GDN package checks against environments.
#include "helpers.h"
#include "passes/invariants.h"
#include "validate/validate.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

using namespace qr;
using qr::test::build;
using qr::test::error_of;

namespace {

// Findings of one check, formatted, for a config built from `recipe` with `overrides`.
std::vector<std::string> findings(const BuildResult& r, const std::string& check,
                                  std::optional<std::int64_t> world = 8,
                                  std::optional<PackageEnv> env = std::nullopt) {
  ValidateOptions o;
  o.world_size = world;
  o.env = std::move(env);
  std::vector<std::string> out;
  for (const Finding& f : validate_config(r.config, o).findings)
    if (f.check == check)
      out.push_back(format_finding(f));
  return out;
}

// qwen35_35b on B200: 8 GPUs, TP 1, PP 1, EP 8, 40 layers, 16 heads in 2 groups, GDN 16/32.
BuildResult b200(const std::vector<std::string>& overrides = {}) {
  return build("qwen35_35b", "b200", "bf16", overrides);
}

std::string only(const std::vector<std::string>& v) {
  REQUIRE(v.size() == 1);
  return v.front();
}

} // namespace

TEST_CASE("validate: a shipped recipe passes with its own world size") {
  const BuildResult r = b200();
  ValidateOptions o;
  o.world_size = 8;
  const ValidationReport rep = validate_config(r.config, o);
  CHECK(rep.count(Finding::Level::Error) == 0);
  // 16 invariants, 7 parallelism checks and 28 ported finalize checks that apply to this model.
  CHECK(rep.checks == 51);
  CHECK(rep.layout == "world 8 = TP 1 x PP 1 x CP 1 x DP 8; experts: EP 8 x ETP 1 (expert DP 1)");
}

TEST_CASE("validate: world size divisible by TP x PP x CP") {
  CHECK_THAT(
      only(findings(b200({"model.pipeline_model_parallel_size=2"}), "world-size-divisible", 9)),
      Catch::StartsWith("error: check 'world-size-divisible' failed: world size 9 is not "
                        "divisible by TP x PP x CP = model.tensor_model_parallel_size=1 x "
                        "model.pipeline_model_parallel_size=2 x "
                        "model.context_parallel_size=1 = 2"));
  CHECK(findings(b200(), "world-size-divisible", 16).empty());
  CHECK_THAT(only(findings(b200(), "world-size-divisible", std::nullopt)),
             Catch::StartsWith("skipped: check 'world-size-divisible': no world size"));
}

TEST_CASE("validate: EP x ETP fits the expert-data-parallel group") {
  CHECK_THAT(only(findings(b200(), "expert-parallel-fits", 12)),
             Catch::Contains("ETP x EP x PP = model.expert_tensor_parallel_size=1 x "
                             "model.expert_model_parallel_size=8 x "
                             "model.pipeline_model_parallel_size=1 = 8 does not divide world size "
                             "12"));
  CHECK(findings(b200(), "expert-parallel-fits", 16).empty());
  // ETP unset means 1 with EP > 1 (Megatron-Bridge's default), else TP.
  CHECK(findings(
            b200({"model.expert_tensor_parallel_size=null", "model.tensor_model_parallel_size=2"}),
            "expert-parallel-fits", 8)
            .empty());
  CHECK_THAT(only(findings(
                 b200({"model.expert_tensor_parallel_size=null",
                       "model.expert_model_parallel_size=1", "model.tensor_model_parallel_size=4"}),
                 "expert-parallel-fits", 6)),
             Catch::Contains("model.expert_tensor_parallel_size=null (so TP, 4)"));
}

TEST_CASE("validate: experts divisible by EP") {
  CHECK_THAT(
      only(findings(b200({"model.expert_model_parallel_size=3"}), "experts-divisible-by-ep")),
      Catch::Contains("model.num_moe_experts=256 is not divisible by "
                      "model.expert_model_parallel_size=3"));
}

TEST_CASE("validate: global batch divisible by micro batch x DP") {
  CHECK_THAT(only(findings(b200({"train.global_batch_size=500"}), "global-batch-divisible")),
             Catch::Contains("train.global_batch_size=500 is not divisible by "
                             "train.micro_batch_size=1 x DP 8 = 8"));
  CHECK_THAT(only(findings(b200({"train.micro_batch_size=3"}), "global-batch-divisible", 16)),
             Catch::Contains("train.micro_batch_size=3 x DP 16 = 48"));
  CHECK(findings(b200(), "global-batch-divisible", 16).empty());
}

TEST_CASE("validate: layers split over PP, honouring first/last-stage counts") {
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=3"}), "pipeline-layers", 9)),
             Catch::Contains("model.num_layers=40 is not divisible by "
                             "model.pipeline_model_parallel_size=3"));
  // 10 + 2 x 10 + 10 = 40 is fine; 10 + 19 over two middle stages is not.
  CHECK(findings(b200({"model.pipeline_model_parallel_size=4",
                       "model.num_layers_in_first_pipeline_stage=10",
                       "model.num_layers_in_last_pipeline_stage=10"}),
                 "pipeline-layers")
            .empty());
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=4",
                                 "model.num_layers_in_first_pipeline_stage=10",
                                 "model.num_layers_in_last_pipeline_stage=11"}),
                           "pipeline-layers")),
             Catch::Contains("leave 19 of model.num_layers=40 for 2 middle stages") &&
                 Catch::Contains("does not divide evenly"));
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=2",
                                 "model.num_layers_in_first_pipeline_stage=17",
                                 "model.num_layers_in_last_pipeline_stage=20"}),
                           "pipeline-layers")),
             Catch::Contains("leave 3 of model.num_layers=40 for 0 middle stages"));
  CHECK_THAT(only(findings(b200({"model.num_layers_in_first_pipeline_stage=17",
                                 "model.num_layers_in_last_pipeline_stage=23"}),
                           "pipeline-layers")),
             Catch::Contains("need 2 pipeline stages but model.pipeline_model_parallel_size=1"));
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=2",
                                 "model.num_layers_in_first_pipeline_stage=0"}),
                           "pipeline-layers")),
             Catch::Contains("model.num_layers_in_first_pipeline_stage=0 must be larger than 0"));
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=2",
                                 "model.num_layers_in_first_pipeline_stage=20",
                                 "model.account_for_loss_in_pipeline_split=true"}),
                           "pipeline-layers")),
             Catch::Contains("cannot be combined with"));
  // The embedding and loss stand-ins count: 40 + 1 + 1 over 2 stages is fine, over 4 is not.
  CHECK(findings(b200({"model.pipeline_model_parallel_size=2",
                       "model.account_for_embedding_in_pipeline_split=true",
                       "model.account_for_loss_in_pipeline_split=true"}),
                 "pipeline-layers")
            .empty());
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=4",
                                 "model.account_for_embedding_in_pipeline_split=true",
                                 "model.account_for_loss_in_pipeline_split=true"}),
                           "pipeline-layers")),
             Catch::Contains("model.num_layers=40 + 1 (model.account_for_embedding_in_pipeline_"
                             "split) + 1 (model.account_for_loss_in_pipeline_split) is not "
                             "divisible by model.pipeline_model_parallel_size=4"));
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=3",
                                 "model.pipeline_model_parallel_layout='Et*13|t*13|t*14L'"}),
                           "pipeline-layers", 9)),
             Catch::StartsWith("skipped: check 'pipeline-layers': "
                               "model.pipeline_model_parallel_layout is set"));
}

TEST_CASE("validate: VP needs PP > 1") {
  CHECK_THAT(only(findings(b200({"model.virtual_pipeline_model_parallel_size=2"}),
                           "virtual-pipeline-needs-pp")),
             Catch::Contains("model.virtual_pipeline_model_parallel_size=2 needs "
                             "model.pipeline_model_parallel_size > 1, but it is 1"));
}

TEST_CASE("validate: every virtual pipeline stage holds the same number of layers") {
  CHECK_THAT(only(findings(b200({"model.pipeline_model_parallel_size=2",
                                 "model.virtual_pipeline_model_parallel_size=3"}),
                           "virtual-pipeline-layers")),
             Catch::Contains("gives 20 layers per stage, not divisible by "
                             "model.virtual_pipeline_model_parallel_size=3"));
  CHECK(findings(b200({"model.pipeline_model_parallel_size=2",
                       "model.virtual_pipeline_model_parallel_size=4"}),
                 "virtual-pipeline-layers")
            .empty());
  const std::vector<std::string> uneven{
      "model.pipeline_model_parallel_size=4", "model.virtual_pipeline_model_parallel_size=4",
      "model.num_layers_in_first_pipeline_stage=8", "model.num_layers_in_last_pipeline_stage=8"};
  CHECK(findings(b200(uneven), "virtual-pipeline-layers").empty());
  auto bad = uneven;
  bad[2] = "model.num_layers_in_first_pipeline_stage=10";
  bad[3] = "model.num_layers_in_last_pipeline_stage=10";
  const auto f = findings(b200(bad), "virtual-pipeline-layers");
  REQUIRE(f.size() == 3);
  CHECK_THAT(f[0], Catch::Contains("model.num_layers_in_first_pipeline_stage=10 is not divisible "
                                   "by model.virtual_pipeline_model_parallel_size=4"));
  CHECK_THAT(f[2], Catch::Contains("the 10 layers of each middle pipeline stage"));
}

TEST_CASE("validate: attention heads and query groups against TP") {
  CHECK_THAT(only(findings(b200({"model.tensor_model_parallel_size=3"}),
                           "attention-heads-divisible-by-tp", 9)),
             Catch::Contains("model.num_attention_heads=16 is not divisible by "
                             "model.tensor_model_parallel_size=3"));
  // Two groups on TP 4: the groups are replicated, which Megatron-Core allows.
  CHECK(findings(b200({"model.tensor_model_parallel_size=4"}), "query-groups-fit-tp").empty());
  CHECK_THAT(only(findings(b200({"model.tensor_model_parallel_size=2", "model.num_query_groups=3"}),
                           "query-groups-fit-tp")),
             Catch::Contains("model.num_query_groups=3 is neither a multiple nor a divisor of "
                             "model.tensor_model_parallel_size=2"));
}

TEST_CASE("validate: GDN key and value heads divisible by TP x CP") {
  const auto f = findings(b200({"model.context_parallel_size=3"}), "gdn-heads-divisible", 24);
  REQUIRE(f.size() == 2);
  CHECK_THAT(f[0], Catch::Contains("model.linear_num_key_heads=16 is not divisible by TP x CP = "
                                   "model.tensor_model_parallel_size=1 x "
                                   "model.context_parallel_size=3 = 3"));
  CHECK_THAT(f[1], Catch::Contains("model.linear_num_value_heads=32"));
  // Qwen3-VL has no GDN layers.
  CHECK(findings(build("qwen3_30b", "b200", "bf16", {"model.context_parallel_size=3"}),
                 "gdn-heads-divisible", 24)
            .empty());
}

TEST_CASE("validate: sequence parallel with TP 1 is turned off, and said") {
  CHECK_THAT(only(findings(b200({"model.sequence_parallel=true"}), "sequence-parallel-needs-tp")),
             Catch::StartsWith("warning: check 'sequence-parallel-needs-tp': "
                               "model.sequence_parallel=true with "
                               "model.tensor_model_parallel_size=1: Megatron-Bridge turns "
                               "sequence parallelism off"));
  CHECK(findings(b200({"model.sequence_parallel=true", "model.tensor_model_parallel_size=2"}),
                 "sequence-parallel-needs-tp")
            .empty());
}

TEST_CASE("validate: sequence lengths fit CP and SP") {
  CHECK(findings(b200({"model.context_parallel_size=2"}), "seq-length-cp-sp", 16).empty());
  const auto f = findings(
      b200({"model.context_parallel_size=2", "model.seq_length=4098", "dataset.seq_length=4098"}),
      "seq-length-cp-sp", 16);
  REQUIRE(f.size() == 2);
  CHECK_THAT(f[0], Catch::Contains("model.seq_length=4098 is not a multiple of 2 x "
                                   "model.context_parallel_size=2"));
  CHECK_THAT(f[1], Catch::Contains("dataset.seq_length=4098 is not a multiple of 4 (2 x "
                                   "model.context_parallel_size=2"));
  CHECK_THAT(only(findings(b200({"model.tensor_model_parallel_size=4",
                                 "model.sequence_parallel=true", "dataset.seq_length=4098"}),
                           "seq-length-cp-sp")),
             Catch::Contains("dataset.seq_length=4098 is not a multiple of 4 (TP x CP with "
                             "model.sequence_parallel (4 x 1)"));
}

TEST_CASE("validate: shipped recipes build and validate clean or waived, both profiles") {
  for (const RecipeSpec& s : qr::test::compiler().catalog().all())
    for (const char* profile : {"pinned", "gdn"}) {
      CAPTURE(s.id(), profile);
      BuildRequest req;
      req.recipe = s.id();
      req.profile = profile;
      req.checks.enforce = false;
      const BuildResult r = qr::test::compiler().run(req, through(Stage::StartupChecks));
      const ValidationReport& rep = r.report;
      CHECK(rep.count(Finding::Level::Error) == 0);
      // A waiver that no longer fires is stale.
      for (const Waiver& w : r.recipe->variant->waivers.listed)
        if (w.kind == Waiver::Kind::Check)
          CHECK(std::any_of(rep.findings.begin(), rep.findings.end(), [&](const Finding& f) {
            return f.check == w.name && f.level == Finding::Level::Warning;
          }));
    }
}

TEST_CASE("validate: a waived check warns with the recipe's reason; without it, it fails") {
  BuildRequest req;
  req.recipe = "qwen35_397b@b200";
  req.checks.enforce = false;
  const BuildResult r = qr::test::compiler().run(req, through(Stage::StartupChecks));
  const ValidationReport& waived = r.report;
  CHECK_THAT(format_finding(waived.findings.front()),
             Catch::StartsWith("warning: check 'pipeline-layers': (waived by the recipe: "
                               "upstream parity: 60 layers"));
  ValidateOptions bare;
  bare.world_size = 64;
  CHECK(validate_config(r.config, bare).count(Finding::Level::Error) == 1);
}

TEST_CASE("validate: waivers are sorted into invariants and checks; an unknown name is refused") {
  const Waivers w =
      classify_waivers({{"pipeline-layers", "a"}, {"te-rng-tracker-with-graphs", "b"}});
  REQUIRE(w.listed.size() == 2);
  CHECK(w.listed[0].kind == Waiver::Kind::Check);
  CHECK(w.listed[1].kind == Waiver::Kind::Invariant);
  CHECK(w.find(Waiver::Kind::Check, "pipeline-layers") == &w.listed[0]);
  CHECK(w.find(Waiver::Kind::Invariant, "pipeline-layers") == nullptr);
  CHECK_THAT(error_of([&] {
               (void)classify_waivers({{"pipeline-layer", "x"}});
             }),
             Catch::StartsWith("waives unknown invariant or check 'pipeline-layer' (did you mean "
                               "'pipeline-layers'?)"));
}

TEST_CASE("validate: release tuples as Python compares them") {
  CHECK(release_tuple("4.6") == std::vector<int>{4, 6, 0});
  CHECK(release_tuple("1.29.0rc1") == std::vector<int>{1, 29, 0});
  CHECK(release_tuple("2.19.0+cu13.abc") == std::vector<int>{2, 19, 0});
  CHECK(release_tuple("1.2.3.4") == std::vector<int>{1, 2, 3});
  CHECK(release_tuple("dev").empty());
  CHECK(release_tuple("").empty());
}

TEST_CASE("validate: environments from pip freeze or YAML") {
  const PackageEnv freeze =
      parse_package_env("# pip freeze\nTransformer_Engine==2.19.1\n-e git+https://x/y#egg=z\n"
                        "nvidia-cudnn-frontend===1.29.0\nnvidia-cutlass-dsl[cu13]==4.7.0\n"
                        "torch @ file:///wheels/torch.whl\n\n",
                        "env.txt");
  REQUIRE(freeze.version("transformer-engine") != nullptr);
  CHECK(*freeze.version("transformer-engine") == "2.19.1");
  CHECK(*freeze.version("nvidia_cudnn_frontend") == "1.29.0");
  CHECK(*freeze.version("nvidia-cutlass-dsl") == "4.7.0");
  CHECK(*freeze.version("torch") == "");
  CHECK(freeze.version("z") == nullptr);
  const PackageEnv yaml = parse_package_env("transformer-engine: 2.20\nnvidia-cudnn-frontend: "
                                            "'1.29.0'\n",
                                            "env.yaml");
  CHECK(*yaml.version("transformer-engine") == "2.20");
  CHECK_THAT(error_of([] { parse_package_env("torch==2.6\n>=1.0\n", "env.txt"); }),
             Catch::Contains("env.txt:2: '>=1.0' is neither a pip freeze line"));
  CHECK_THAT(error_of([] { parse_package_env("torch: [1, 2]\n", "env.yaml"); }),
             Catch::Contains("package 'torch' needs a version string"));
}

TEST_CASE("validate: cuDNN GDN package checks, only for the transformer_engine backend") {
  const BuildResult gdn = build("qwen35_35b", "gb300", "bf16", {}, "gdn");
  const BuildResult fp8 = build("qwen35_35b", "gb300", "fp8mx", {}, "gdn");
  auto env = [](const std::string& text) { return parse_package_env(text, "env.txt"); };
  const std::string good = "transformer-engine==2.20.2\nnvidia-cudnn-frontend==1.29.0\n"
                           "nvidia-cutlass-dsl==4.7.0\n";
  CHECK(findings(gdn, "gdn-packages", 8, env(good)).empty());
  CHECK(findings(fp8, "gdn-packages", 8, env(good)).empty());
  CHECK_THAT(only(findings(gdn, "gdn-packages", 8)),
             Catch::StartsWith("skipped: check 'gdn-packages': no environment"));
  // fla backend, or a profile without the field: nothing to check.
  CHECK(findings(build("qwen35_35b", "vr200", "bf16", {}, "gdn"), "gdn-packages", 8).empty());
  CHECK(findings(build("qwen35_35b", "gb300"), "gdn-packages", 8).empty());

  const std::string te_old = only(findings(gdn, "gdn-packages", 8,
                                           env("transformer-engine==2.18.0\nnvidia-cudnn-frontend=="
                                               "1.29.0\nnvidia-cutlass-dsl==4.7.0\n")));
  CHECK_THAT(te_old, Catch::StartsWith("warning: check 'gdn-packages': "
                                       "model.gdn_kernel_backend='transformer_engine' cannot run "
                                       "GatedDeltaNet on cuDNN's fast kernels in this environment "
                                       "(env.txt): transformer-engine 2.18.0 has no "
                                       "GatedDeltaNetAttention") &&
                         Catch::EndsWith("Install transformer-engine>=2.19.0, "
                                         "nvidia-cudnn-frontend>=1.29.0 and "
                                         "nvidia-cutlass-dsl[cu13]>=4.7.0, or set "
                                         "model.gdn_kernel_backend=fla"));
  CHECK_THAT(only(findings(gdn, "gdn-packages", 8, env("transformer-engine==2.19.0\n"))),
             Catch::Contains("nvidia-cudnn-frontend is not installed, so the first GatedDeltaNet "
                             "forward will fail") &&
                 !Catch::Contains("CuTe DSL"));
  CHECK_THAT(only(findings(gdn, "gdn-packages", 8,
                           env("transformer-engine==2.19.0\nnvidia-cudnn-frontend==1.26.0\n"))),
             Catch::Contains("nvidia-cudnn-frontend 1.26.0 has no cudnn.linear_attention"));
  CHECK_THAT(
      only(findings(gdn, "gdn-packages", 8,
                    env("transformer-engine==2.19.0\nnvidia-cudnn-frontend==1.28.1\n"))),
      Catch::Contains("nvidia-cudnn-frontend 1.28.1 is older than 1.29.0, and its GatedDeltaNet "
                      "kernels can return NaN"));
  CHECK_THAT(only(findings(gdn, "gdn-packages", 8,
                           env("transformer-engine==2.19.0\nnvidia-cudnn-frontend==1.29.0\n"))),
             Catch::Contains("cutlass (nvidia-cutlass-dsl) is not installed"));
  CHECK_THAT(only(findings(gdn, "gdn-packages", 8,
                           env("transformer-engine==2.19.0\nnvidia-cudnn-frontend==1.29.0\n"
                               "nvidia-cutlass-dsl==4.6.1\n"))),
             Catch::Contains("nvidia-cutlass-dsl 4.6.1 is older than 4.7.0"));
  // The internal DSL build passes, as in cuDNN frontend's own gate.
  CHECK(findings(gdn, "gdn-packages", 8,
                 env("transformer-engine==2.19.0\nnvidia-cudnn-frontend==1.29.0\n"
                     "nvidia-cutlass-dsl-internal==4.5.0\n"))
            .empty());
  // Transformer Engine 2.19 raises under FP8 autocast: only when fp8 (or fp4) is on.
  const std::string te219 =
      "transformer-engine==2.19.1\nnvidia-cudnn-frontend==1.29.0\nnvidia-cutlass-dsl==4.7.0\n";
  CHECK(findings(gdn, "gdn-packages", 8, env(te219)).empty());
  CHECK_THAT(only(findings(fp8, "gdn-packages", 8, env(te219))),
             Catch::Contains("transformer-engine 2.19.1's GatedDeltaNetAttention raises under FP8 "
                             "autocast, which model.fp8 turns on") &&
                 Catch::Contains("Install transformer-engine>=2.20.2"));
  // Warnings never fail validation.
  ValidateOptions o;
  o.world_size = 8;
  o.env = env("");
  CHECK(validate_config(gdn.config, o).count(Finding::Level::Error) == 0);
}

TEST_CASE("validate: config files are typed by the schema, under the profile that fits") {
  const Schema& schema = qr::test::compiler().schema();
  const std::string gdn_yaml = emit_config(build("qwen35_35b", "gb300", "bf16", {}, "gdn"));
  const Config c = load_config_text(schema, gdn_yaml, "cfg.yaml", "");
  CHECK(c.profile() == "gdn");
  CHECK_THAT(error_of([&] { (void)load_config_text(schema, gdn_yaml, "cfg.yaml", "pinned"); }),
             Catch::Contains("--mcore gdn"));
  CHECK_THAT(error_of([&] { (void)load_config_text(schema, "- 1\n", "cfg.yaml", ""); }),
             Catch::Contains("cfg.yaml: expected a mapping"));
}

namespace {

// A recipe's YAML as `validate FILE` reads it: no header, no waivers, the given world size.
ValidationReport validate_text(const std::string& yaml, std::optional<std::int64_t> world,
                               bool strict = false) {
  const Config c = load_config_text(qr::test::compiler().schema(), yaml, "f.yaml", "");
  ValidateOptions o;
  o.world_size = world;
  o.strict = strict;
  return validate_config(c, o);
}

std::vector<std::string> failed(const ValidationReport& rep) {
  std::vector<std::string> out;
  for (const Finding& f : rep.findings)
    if (f.level == Finding::Level::Error)
      out.push_back(f.check);
  return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
  const std::size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}

} // namespace

TEST_CASE("validate FILE runs the invariants a build runs") {
  // The recipe waives te-rng-tracker-with-graphs; its YAML, read back, has no waiver.
  const std::string fp8mx = emit_config(build("qwen35_35b", "gb200", "fp8mx"), false);
  CHECK(failed(validate_text(fp8mx, 8)) == std::vector<std::string>{"te-rng-tracker-with-graphs"});
  // An EP edit that the HybridEP ranks no longer match.
  const std::string q397 = emit_config(build("qwen35_397b", "gb300"), false);
  CHECK(failed(validate_text(q397, 64)).empty());
  const std::string ep16 =
      replaced(q397, "  expert_model_parallel_size: 32\n", "  expert_model_parallel_size: 16\n");
  CHECK(failed(validate_text(ep16, 64)) == std::vector<std::string>{"hybridep-ranks-match-ep"});
  // A build's own validation leaves them to its pipeline.
  BuildRequest req;
  req.recipe = "qwen35_35b@gb200:fp8mx";
  req.checks.enforce = false;
  const BuildResult r = qr::test::compiler().run(req, through(Stage::StartupChecks));
  CHECK(std::none_of(r.report.findings.begin(), r.report.findings.end(),
                     [](const Finding& f) { return find_invariant(f.check) != nullptr; }));
}

TEST_CASE("validate: every shipped recipe's YAML fails exactly the checks its recipe waives") {
  for (const RecipeSpec& s : qr::test::compiler().catalog().all())
    for (const char* profile : {"pinned", "gdn"}) {
      CAPTURE(s.id(), profile);
      const BuildResult r = build(s.model->name, s.gpu->name, s.precision, {}, profile);
      std::set<std::string> waived;
      for (const Waiver& w : s.variant->waivers.listed)
        waived.insert(w.name);
      const std::vector<std::string> fails =
          failed(validate_text(emit_config(r), s.entry->num_gpus));
      CHECK(std::set<std::string>(fails.begin(), fails.end()) == waived);
    }
}

TEST_CASE("validate --strict: warnings are errors") {
  BuildRequest req;
  req.recipe = "qwen35_35b@gb200:fp8mx";
  req.checks.enforce = false;
  req.checks.report_invariants = true;
  CHECK(qr::test::compiler()
            .run(req, through(Stage::StartupChecks))
            .report.count(Finding::Level::Error) == 0);
  req.checks.strict = true;
  const ValidationReport strict =
      qr::test::compiler().run(req, through(Stage::StartupChecks)).report;
  REQUIRE(strict.count(Finding::Level::Error) == 1);
  CHECK_THAT(format_finding(strict.findings.front()),
             Catch::StartsWith("error: check 'te-rng-tracker-with-graphs' failed: (--strict) "
                               "(waived by the recipe: upstream parity"));
  CHECK_THAT(report_text(strict, "x"), Catch::EndsWith("(--strict: warnings are errors)\n"));
}

TEST_CASE("validate: without a world size the report names the skipped checks") {
  const std::string text =
      report_text(validate_text(emit_config(b200(), false), std::nullopt), "f.yaml");
  CHECK_THAT(text, Catch::Contains("skipped: check 'world-size-divisible': no world size (give "
                                   "--num-gpus N)\n"));
  CHECK_THAT(text, Catch::EndsWith("f.yaml: 0 errors, 0 warnings, 4 skipped (world-size-divisible, "
                                   "expert-parallel-fits, global-batch-divisible, "
                                   "eval-batch-divisible); 47 checks ran\n"));
}

TEST_CASE("validate --format json: the documented keys, in order") {
  ValidationReport rep;
  rep.layout = "TP 1 x PP 1 x CP 1 (world size unknown)";
  rep.checks = 2;
  rep.findings = {{Finding::Level::Error, "pipeline-layers", "a \"quoted\"\nline"},
                  {Finding::Level::Skipped, "world-size-divisible", "no world size"}};
  CHECK(report_json(rep, "f.yaml") ==
        "{\"config\": \"f.yaml\", \"layout\": \"TP 1 x PP 1 x CP 1 (world size unknown)\", "
        "\"world_size\": null, \"world_size_from\": null, \"strict\": false,\n"
        " \"findings\": [\n"
        "  {\"level\": \"error\", \"check\": \"pipeline-layers\", \"source\": \"Megatron-Core "
        "TransformerConfig, get_num_layers_to_build\", \"message\": \"a \\\"quoted\\\"\\nline\"},\n"
        "  {\"level\": \"skipped\", \"check\": \"world-size-divisible\", \"source\": "
        "\"Megatron-Core initialize_model_parallel\", \"message\": \"no world size\"}\n"
        " ],\n"
        " \"errors\": 1, \"warnings\": 0, \"skipped\": 1, \"checks_ran\": 2, \"ok\": false}\n");
  ValidationReport clean;
  clean.world_size = 8;
  clean.world_source = "world size 8 from the header (q@b200:bf16's GPU count)";
  clean.strict = true;
  CHECK(report_json(clean, "-") ==
        "{\"config\": \"-\", \"layout\": \"\", \"world_size\": 8, \"world_size_from\": "
        "\"world size 8 from the header (q@b200:bf16's GPU count)\", \"strict\": true,\n"
        " \"findings\": [],\n"
        " \"errors\": 0, \"warnings\": 0, \"skipped\": 0, \"checks_ran\": 0, \"ok\": true}\n");
}

namespace {

struct PortedCase {
  const char* check;
  std::vector<std::string> overrides; // on qwen35_35b@b200 (TP 1, PP 1, EP 8, alltoall, bf16)
  const char* expected;               // in the check's error
};

} // namespace

// Each ported Megatron-Bridge / Megatron-Core check fails on a config that breaks it (and the
// unmodified recipe passes them all: "a shipped recipe passes with its own world size").
TEST_CASE("validate: the checks ported from Megatron-Bridge's validate() each refuse a config") {
  const std::vector<PortedCase> cases{
      {"mixed-precision-fp4-xor-fp8",
       {"mixed_precision.fp4=nvfp4", "mixed_precision.fp8=hybrid"},
       "mixed_precision.fp4=nvfp4 and mixed_precision.fp8=hybrid cannot be used together"},
      {"mixed-precision-name",
       {"mixed_precision=bf16_mixd"},
       "mixed_precision='bf16_mixd' is no mixed-precision recipe (did you mean 'bf16_mixed'?)"},
      // A named recipe is built, then copied onto the optimizer, as upstream.
      {"optimizer-settings",
       {"mixed_precision=bf16_with_mxfp8_mixed",
        "comm_overlap.overlap_param_gather_with_optimizer_step=true"},
       "not supported with reuse_grad_buf_for_mxfp8_param_ag"},
      {"comm-overlap-moe",
       {"comm_overlap.delay_wgrad_compute=true",
        "comm_overlap.overlap_moe_expert_parallel_comm=true", "model.cuda_graph_modules=[attn]",
        "model.cuda_graph_impl=transformer_engine"},
       "needs model.gradient_accumulation_fusion=true"},
      {"num-epochs-needs-sft-dataset",
       {"train.num_epochs=1.0"},
       "needs a finite GPTSFTDatasetConfig"},
      {"mock-vlm-dataset-settings",
       {"dataset.image_size=[256]"},
       "dataset.image_size=[256] must be two positive dimensions"},
      {"mock-vlm-dataset-settings", {"dataset.prompt=''"}, "must be a non-empty string"},
      {"ddp-settings", {"ddp.num_buckets=0"}, "ddp.num_buckets=0 must be greater than 0"},
      {"ddp-settings",
       {"mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=true"},
       "ddp.fp8_param_gather is off"},
      {"optimizer-settings",
       {"optimizer.use_precision_aware_optimizer=true", "optimizer.optimizer=sgd"},
       "works only with adam"},
      {"pipeline-comm-settings",
       {"comm_overlap=null", "model.defer_embedding_wgrad_compute=true"},
       "needs pipeline parallelism"},
      // With a comm_overlap section its own deferral settings apply: no limit given is -1.
      {"pipeline-comm-settings",
       {"model.pipeline_model_parallel_size=2", "model.gradient_accumulation_fusion=true",
        "comm_overlap.defer_embedding_wgrad_compute=true"},
       "a wgrad deferral limit of at least 0, but it is -1 (comm_overlap.wgrad_deferral_limit"},
      {"pipeline-comm-settings",
       {"model.overlap_p2p_comm_warmup_flush=true"},
       "needs overlap_p2p_comm on and batch_p2p_comm off"},
      {"optimizer-settings",
       {"mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=true",
        "comm_overlap.overlap_param_gather_with_optimizer_step=true"},
       "optimizer.overlap_param_gather_with_optimizer_step is not supported with "
       "reuse_grad_buf_for_mxfp8_param_ag"},
      {"precision-flags", {"model.fp8_output_proj=true"}, "model.fp8_output_proj=true needs fp8"},
      {"precision-flags", {"mixed_precision.fp16=true"}, "model.fp16 and model.bf16 are both true"},
      {"gdn-settings",
       {"model.linear_num_value_heads=24"},
       "model.linear_num_value_heads=24 must be a multiple of model.linear_num_key_heads=16"},
      {"moe-settings",
       {"model.moe_pad_expert_input_to_capacity=true"},
       "needs model.moe_expert_capacity_factor"},
      {"moe-settings",
       {"model.moe_router_enable_expert_bias=true"},
       "needs model.moe_router_score_function sigmoid or sqrtsoftplus"},
      {"recompute-settings",
       {"model.recompute_granularity=selective", "model.recompute_num_layers=2"},
       "needs model.recompute_num_layers=null"},
      {"moe-settings",
       {"model.moe_single_grouped_weight=true"},
       "model.moe_single_grouped_weight=true needs model.use_transformer_engine_op_fuser=true"},
      {"moe-settings",
       {"model.moe_deepep_num_sms=20", "model.moe_hybridep_num_sms=24"},
       "(both deprecated) conflict"},
      {"recompute-modules",
       {"model.recompute_granularity=selective", "model.recompute_modules=[core_attn,attn]"},
       "'attn' in model.recompute_modules is not one of"},
      {"recompute-modules",
       {"model.recompute_granularity=selective", "model.recompute_modules=[mla_up_proj]"},
       "mla_up_proj in model.recompute_modules needs model.multi_latent_attention=true"},
      {"recompute-modules",
       {"model.moe_layer_recompute=true", "model.recompute_granularity=full",
        "model.recompute_method=uniform", "model.recompute_num_layers=1"},
       "model.moe_layer_recompute=true does not work with model.recompute_granularity=full"},
      {"activation-offload-modules",
       {"model.fine_grained_activation_offloading=true", "model.offload_modules=[attn_proj]"},
       "attn_proj in model.offload_modules needs core_attn too"},
      {"activation-offload-modules",
       {"model.fine_grained_activation_offloading=true", "model.offload_modules=[core_attn]",
        "model.activation_offload_fraction=1.5"},
       "model.activation_offload_fraction=1.5 must be between 0 and 1"},
      {"activation-offload-modules",
       {"model.moe_paged_stash=true"},
       "model.moe_paged_stash=true needs model.moe_expert_rank_capacity_factor"},
      {"activation-settings",
       {"model.use_te_activation_func=true"},
       "model.bias_activation_fusion and model.use_te_activation_func cannot both be true"},
      {"activation-settings",
       {"model.fused_residual_rmsnorm=true", "model.normalization=LayerNorm"},
       "model.fused_residual_rmsnorm=true needs model.normalization=RMSNorm"},
      {"activation-settings",
       {"model.activation_func_clamp_value=-1.0"},
       "model.activation_func_clamp_value=-1.0 must be finite and above 0"},
      {"no-rope-freq",
       {"model.no_rope_freq=7"},
       "model.no_rope_freq=7 does not divide model.num_layers=40"},
      {"moe-a2a-overlap",
       {"comm_overlap.overlap_moe_expert_parallel_comm=true", "model.moe_layer_recompute=true"},
       "moe must not be in model.recompute_modules"},
      {"moe-a2a-overlap",
       {"comm_overlap.overlap_moe_expert_parallel_comm=true",
        "model.moe_shared_expert_overlap=true"},
       "model.moe_shared_expert_overlap must be false"},
      {"moe-a2a-overlap",
       {"comm_overlap.delay_wgrad_compute=true"},
       "model.delay_wgrad_compute=true needs model.overlap_moe_expert_parallel_comm=true"},
      {"logger-settings", {"logger.mlflow_experiment=exp"}, "logger.mlflow_run_name is not"},
      {"train-length",
       {"train.train_samples=1000"},
       "train.train_iters=50 and train.train_samples=1000 are set"},
      {"train-length", {"train.train_iters=null"}, "none of train.train_iters"},
      {"scheduler-settings",
       {"scheduler.end_weight_decay=0.01"},
       "scheduler.end_weight_decay=0.01 is below scheduler.start_weight_decay=0.033"},
      {"scheduler-settings", {"scheduler.max_steps=0"}, "scheduler.max_steps=0 must be positive"},
      {"checkpoint-settings",
       {"checkpoint.async_save=true"},
       "checkpoint.async_save=true but checkpoint.save is not set"},
      {"checkpoint-settings",
       {"checkpoint.async_save=true", "checkpoint.save=/ckpt",
        "checkpoint.use_persistent_ckpt_worker=false"},
       "needs checkpoint.use_persistent_ckpt_worker=true"},
      {"profiling-settings",
       {"profiling.use_pytorch_profiler=true", "profiling.use_nsys_profiler=true"},
       "are both true: enable one"},
      {"profiling-settings",
       {"profiling.profile_step_end=5"},
       "profiling.profile_step_end=5 is before profiling.profile_step_start=10"},
      {"nvrx-straggler-settings",
       {"nvrx_straggler={enabled: true, report_time_interval: 0}"},
       "nvrx_straggler.report_time_interval=0 must be positive"},
      {"eval-batch-divisible",
       {"validation.eval_global_batch_size=100"},
       "the evaluation global batch 100"},
      {"eval-batch-divisible",
       {"dist.eval_context_parallel_size=3"},
       "world size 8 is not divisible by TP x PP x dist.eval_context_parallel_size=3 = 3"},
      {"fsdp-settings",
       {"dist.use_megatron_fsdp=true", "dist.use_torch_fsdp2=true"},
       "dist.use_megatron_fsdp and dist.use_torch_fsdp2 are both true"},
      {"mxfp8-param-gather-reuses-grad-buffer",
       {"mixed_precision.fp8=e4m3", "mixed_precision.fp8_recipe=mxfp8",
        "mixed_precision.fp8_param_gather=true"},
       "needs mixed_precision.reuse_grad_buf_for_mxfp8_param_ag=true"},
      {"deterministic-mode", {"model.deterministic_mode=true"}, "cross_entropy_loss_fusion=false"},
      {"precision-consistency",
       {"mixed_precision=null", "optimizer.fp16=true"},
       "optimizer.bf16 and optimizer.fp16 are both true"},
      {"activation-offloading-needs-te",
       {"model.fine_grained_activation_offloading=true", "model.transformer_impl=local"},
       "needs model.transformer_impl=transformer_engine"},
      {"full-iteration-graph-no-nan-check",
       {"model.cuda_graph_impl=full_iteration", "rerun_state_machine.check_for_nan_in_loss=true"},
       "needs rerun_state_machine.check_for_nan_in_loss=false"},
      {"modelopt-no-grad-accumulation-fusion",
       {"model.restore_modelopt_state=true", "model.gradient_accumulation_fusion=true"},
       "needs model.gradient_accumulation_fusion=false"},
      {"checkpoint-format",
       {"dist.use_decentralized_pg=true"},
       "set dist.use_gloo_process_groups=false"},
      // The DDP flag alone turns the distributed optimizer on (validate() syncs them first).
      {"checkpoint-format",
       {"dist.use_gloo_process_groups=false", "optimizer.use_distributed_optimizer=false",
        "ddp.use_distributed_optimizer=true", "checkpoint.ckpt_format=torch"},
       "without Gloo process groups the distributed optimizer needs checkpoint.ckpt_format"},
      {"full-iteration-graph-no-nan-check",
       {"model.cuda_graph_impl=local", "model.cuda_graph_scope=[full_iteration]",
        "model.cuda_graph_modules=null", "rerun_state_machine.check_for_nan_in_loss=true"},
       "needs rerun_state_machine.check_for_nan_in_loss=false"},
      {"moe-settings",
       {"model.moe_expert_capacity_factor=-1.0", "model.moe_router_load_balancing_type=sinkhorn"},
       "moe_router_load_balancing_type is sinkhorn"},
      {"training-scheduler-compatible",
       {"scheduler.lr_decay_samples=100"},
       "iteration-based training takes scheduler.lr_decay_iters, not scheduler.lr_decay_samples"},
      {"scheduler-steps",
       {"scheduler.max_steps=10"},
       "scheduler.max_steps=10 is below train.train_iters=50"},
      {"context-parallel-sft-loss",
       {"model.context_parallel_size=2"},
       "needs ddp.average_in_collective=false"},
      {"cp-comm-type",
       {"model.context_parallel_size=2", "model.cp_comm_type=a2a+p2p"},
       "needs model.hierarchical_context_parallel_sizes"},
      {"cp-comm-type",
       {"model.context_parallel_size=2", "model.hierarchical_context_parallel_sizes=[2,3]"},
       "model.hierarchical_context_parallel_sizes [2, 3] multiply to 6, not "
       "model.context_parallel_size=2"},
      {"cp-comm-type",
       {"model.context_parallel_size=2",
        "model.hierarchical_context_parallel_sizes=[4294967296,4294967296]"},
       "multiply to more than 2^63"},
      {"in-batch-packing-micro-batch",
       {"dataset.enable_in_batch_packing=true"},
       "needs train.micro_batch_size > 1"},
      {"peft-needs-pretrained-checkpoint",
       {"peft={dim: 8}"},
       "peft needs checkpoint.pretrained_checkpoint"},
      {"seq-length-match",
       {"model.seq_length=8192"},
       "model.seq_length=8192 and dataset.seq_length=4096 differ"},
  };
  for (const PortedCase& pc : cases) {
    CAPTURE(pc.check, pc.overrides);
    REQUIRE(find_check(pc.check) != nullptr);
    const std::vector<std::string> found = findings(b200(pc.overrides), pc.check);
    REQUIRE(found.size() >= 1);
    const bool hit = std::any_of(found.begin(), found.end(), [&](const std::string& f) {
      return f.starts_with("error: check '" + std::string(pc.check) + "' failed: ") &&
             f.find(pc.expected) != std::string::npos &&
             f.find(find_check(pc.check)->source) != std::string::npos;
    });
    CHECK(hit);
    if (!hit)
      for (const std::string& f : found)
        UNSCOPED_INFO(f);
  }
}

// Megatron-Bridge's runtime_config_update copies mixed_precision onto the model and optimizer,
// and comm_overlap's MoE overlap onto the model, before validate() checks them.
TEST_CASE("validate: the ported checks see the config after mixed precision and comm overlap") {
  for (const std::vector<std::string>& accepted : std::vector<std::vector<std::string>>{
           {"model.fp16=true"},
           {"optimizer.fp16=true"},
           {"model.overlap_moe_expert_parallel_comm=true", "model.moe_shared_expert_overlap=true"},
           // bf16-mixed makes the model bf16.
           {"mixed_precision=bf16-mixed", "comm_overlap.overlap_moe_expert_parallel_comm=true"},
           // comm_overlap sets the model's deferral off.
           {"model.defer_embedding_wgrad_compute=true"}}) {
    CAPTURE(accepted);
    ValidateOptions o;
    o.world_size = 8;
    CHECK(validate_config(b200(accepted).config, o).count(Finding::Level::Error) == 0);
  }
}

// docs/validate.md has a row for every check, naming its upstream source.
TEST_CASE("validate: docs/validate.md has a row for every check") {
  std::ifstream in(std::filesystem::path(QR_SOURCE_DIR) / "docs" / "validate.md");
  REQUIRE(in);
  std::stringstream text;
  text << in.rdbuf();
  for (const CheckInfo& c : check_registry()) {
    CAPTURE(c.name);
    CHECK(text.str().find("| `" + c.name + "` |") != std::string::npos);
    CHECK(!c.source.empty());
  }
}
