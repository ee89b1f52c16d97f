// lib/build: the stages a caller asks for are the ones that run, in order.
#include "helpers.h"

#include <filesystem>
#include <fstream>

using namespace qr;
using qr::test::compiler;
using qr::test::error_of;

namespace {

BuildRequest request(const std::string& spec, std::vector<std::string> overrides = {}) {
  BuildRequest req;
  req.recipe = spec;
  req.overrides = std::move(overrides);
  return req;
}

} // namespace

TEST_CASE("build: through(Pipeline) binds the steps and runs none of them") {
  const BuildResult r = compiler().run(request("qwen35_35b@gb300:fp8mx", {"train.train_iters=7"}),
                                       through(Stage::Pipeline));
  CHECK_FALSE(r.pipeline.passes().empty());
  CHECK(r.overrides.size() == 1);
  CHECK(r.config.writes().empty());
  CHECK(r.yaml.empty());
  CHECK(r.report.findings.empty());
}

TEST_CASE("build: the overrides are one step after the passes, logged as such") {
  const BuildResult passes_only = compiler().run(
      request("qwen35_35b@gb300:fp8mx", {"train.train_iters=7"}), through(Stage::Passes));
  for (const Write& w : passes_only.config.writes())
    CHECK(w.step.kind == StepId::Kind::Pass);
  CHECK(passes_only.config.at("train.train_iters").as_int() != 7);
  const BuildResult with = compiler().run(
      request("qwen35_35b@gb300:fp8mx", {"train.train_iters=7"}), through(Stage::Overrides));
  REQUIRE_FALSE(with.config.writes().empty());
  CHECK(with.config.writes().back().step == StepId::overrides());
  CHECK(with.config.at("train.train_iters").as_int() == 7);
}

TEST_CASE("build: Emit without the start-up checks is the same YAML, and checks nothing") {
  BuildRequest req = request("qwen35_397b@b200");
  const BuildResult plain = compiler().run(req, through(Stage::Invariants) | Stage::Emit);
  CHECK(plain.report.findings.empty());
  CHECK(plain.yaml == emit_config(plain));
  req.checks.enforce = false;
  const BuildResult checked = compiler().run(req, through(Stage::Emit));
  CHECK(checked.yaml == plain.yaml);
  // The recipe waives pipeline-layers: a warning, with the recipe's GPU count as world size.
  CHECK(checked.world_size == 64);
  CHECK(checked.report.count(Finding::Level::Warning) > 0);
  CHECK(checked.report.count(Finding::Level::Error) == 0);
}

TEST_CASE("build: a stage list with a gap is refused") {
  CHECK_THAT(error_of([&] {
               (void)compiler().run(request("qwen3_30b@h100"),
                                    Stage::Recipe | Stage::BaseConfig | Stage::Passes);
             }),
             Catch::StartsWith("internal: "));
  CHECK_THAT(error_of([&] {
               (void)compiler().run(request("qwen3_30b@h100"),
                                    through(Stage::Pipeline) | Stage::Emit);
             }),
             Catch::StartsWith("internal: "));
}

TEST_CASE("build: the start-up checks' world size: --num-gpus, else nodes x GPUs per node") {
  BuildRequest req = request("qwen35_35b@gb300");
  req.checks.enforce = false;
  req.checks.nodes = 4;
  CHECK(compiler().run(req, through(Stage::StartupChecks)).world_size == 16);
  req.checks.gpus_per_node = 2;
  CHECK(compiler().run(req, through(Stage::StartupChecks)).world_size == 8);
  req.checks.num_gpus = 32;
  CHECK(compiler().run(req, through(Stage::StartupChecks)).world_size == 32);
}

TEST_CASE("build: refuse_waived stops a recipe whose waived check fails (launch)") {
  BuildRequest req = request("qwen35_397b@b200");
  CHECK_NOTHROW(compiler().run(req, through(Stage::StartupChecks)));
  req.checks.refuse_waived = true;
  CHECK_THAT(error_of([&] { (void)compiler().run(req, through(Stage::StartupChecks)); }),
             Catch::StartsWith("qwen35_397b@b200:bf16 would stop once the job starts: "
                               "'pipeline-layers' fails (waived by the recipe: "));
}

TEST_CASE("build: a config taken as written is launched as the recipe its header names") {
  const std::filesystem::path dir = test::scratch_dir() / "build_as_written";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "fp8mx.yaml").string();
  std::ofstream(path, std::ios::binary)
      << compiler().run(request("qwen35_35b@gb300:fp8mx"), through(Stage::Emit)).yaml;
  BuildRequest req;
  req.config_file = path;
  CHECK(compiler().run(req, through(Stage::Emit)).recipe->id() == "qwen35_35b@gb300:fp8mx");
  // --precision and --gpu, given, win over the header.
  req.precision = "fp8cs";
  CHECK(compiler().run(req, through(Stage::Invariants)).recipe->id() == "qwen35_35b@gb300:fp8cs");
}

TEST_CASE("build: a config taken as written keeps its values and checks every invariant") {
  const std::filesystem::path dir = test::scratch_dir() / "build_as_written";
  std::filesystem::create_directories(dir);
  const std::string path = (dir / "cfg.yaml").string();
  const BuildResult built =
      compiler().run(request("qwen3_30b@h100", {"train.train_iters=9"}), through(Stage::Emit));
  std::ofstream(path, std::ios::binary) << built.yaml;
  BuildRequest req;
  req.config_file = path;
  const BuildResult r = compiler().run(req, through(Stage::Emit));
  CHECK(r.config.at("train.train_iters").as_int() == 9);
  CHECK(r.command == "launched as written; built by: " + built.command);
  CHECK(r.config.writes().empty());
  // An edit that breaks an invariant names the file.
  std::string edited = built.yaml;
  const std::string impl = "  cuda_graph_impl: transformer_engine\n";
  REQUIRE(edited.find(impl) != std::string::npos);
  edited.replace(edited.find(impl), impl.size(), "  cuda_graph_impl: local\n");
  std::ofstream(path, std::ios::binary) << edited;
  CHECK_THAT(error_of([&] { (void)compiler().run(req, through(Stage::Emit)); }),
             Catch::StartsWith(path + ": invariant 'cuda-graph-local-full-iteration-only' failed"));
}

TEST_CASE("build: one split of positional words into recipe, overrides and fields") {
  BuildRequest build;
  split_recipe_words({"qwen3_30b@h100", "a.b=1", "~c"}, build);
  CHECK(build.recipe == "qwen3_30b@h100");
  CHECK(build.overrides == std::vector<std::string>{"a.b=1", "~c"});
  // With --base, a first word that is an override is no recipe.
  BuildRequest base;
  split_recipe_words({"+a.b=1", "c=2"}, base, true);
  CHECK(base.recipe.empty());
  CHECK(base.overrides == std::vector<std::string>{"+a.b=1", "c=2"});
  BuildRequest explain;
  std::vector<std::string> fields;
  split_recipe_words({"qwen3_30b@h100", "model", "x=1", "train.seed", "++y=2"}, explain, false,
                     &fields);
  CHECK(fields == std::vector<std::string>{"model", "train.seed"});
  CHECK(explain.overrides == std::vector<std::string>{"x=1", "++y=2"});
}
