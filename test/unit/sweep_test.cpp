// Sweeps (--multirun): Hydra's sweep grammar, the expansion order, the run names and the index;
// the launcher shortcuts (--tp ...) and what follows them.
#include "helpers.h"
#include "overrides/shortcuts.h"
#include "overrides/sweep.h"

using namespace qr;
using qr::test::at;
using qr::test::error_of;

namespace {

std::vector<std::string> names_of(const std::vector<SweepRun>& runs) {
  std::vector<std::string> out;
  for (const SweepRun& r : runs)
    out.push_back(r.name);
  return out;
}

std::vector<std::string> values_of(const std::string& token) {
  return parse_sweep({token}).axes.at(0).values;
}

using Strings = std::vector<std::string>;

} // namespace

TEST_CASE("sweep grammar: choice lists, choice(), range()") {
  CHECK(values_of("a.b=1,2,3") == Strings{"1", "2", "3"});
  CHECK(values_of("a.b=choice(x, y)") == Strings{"x", "y"});
  CHECK(values_of("a.b=choice(x)") == Strings{"x"});
  CHECK(values_of("a.b=range(1,5)") == Strings{"1", "2", "3", "4"});
  CHECK(values_of("a.b=range(3)") == Strings{"0", "1", "2"});
  CHECK(values_of("a.b=range(0,10,4)") == Strings{"0", "4", "8"});
  CHECK(values_of("a.b=range(4,0,-2)") == Strings{"4", "2"});
  CHECK(values_of("a.b=range(start=2,stop=4)") == Strings{"2", "3"});
  CHECK(values_of("a.b=range(1,stop=3)") == Strings{"1", "2"});
  // Quoted values and brackets are one element each, as in Hydra.
  CHECK(values_of("a.b='x,y',z") == Strings{"'x,y'", "z"});
  CHECK(values_of("a.b=\"x,y\",'z'") == Strings{"\"x,y\"", "'z'"});
  CHECK(values_of("a.b=[1,2],[3]") == Strings{"[1,2]", "[3]"});
  CHECK(values_of(R"(a.b="x\",y",'it''s,z',w)") == Strings{R"("x\",y")", "'it''s,z'", "w"});
  CHECK(values_of("a.b={x: 1, y: 2},{x: 3}") == Strings{"{x: 1, y: 2}", "{x: 3}"});
  CHECK(values_of("+env_vars.X=1,2") == Strings{"1", "2"});
  // No top-level comma: a fixed override.
  const Sweep fixed = parse_sweep({"a.b=[1,2]", "c='x,y'", "d=", "~e", "it=it's"});
  CHECK(fixed.axes.empty());
  CHECK(fixed.axis_of_token == std::vector<int>{-1, -1, -1, -1, -1});
}

TEST_CASE("sweep grammar errors name the token") {
  auto err = [](const std::string& token) { return error_of([&] { parse_sweep({token}); }); };
  CHECK_THAT(err("a=interval(0,1)"),
             Catch::StartsWith("sweep 'a=interval(0,1)': Hydra's interval() is not supported"));
  CHECK_THAT(err("a=glob(*)"), Catch::Contains("glob() is not supported"));
  CHECK_THAT(err("a=sort(3,1)"), Catch::Contains("sort() is not supported"));
  CHECK_THAT(err("a=shuffle(1,2)"), Catch::Contains("shuffle()"));
  CHECK_THAT(err("a=tag(x,choice(1,2))"), Catch::Contains("tag()"));
  CHECK_THAT(err("a=int(3)"), Catch::Contains("casts are not supported"));
  CHECK_THAT(err("a=foo(1)"), Catch::Contains("quote it: 'foo(1)'"));
  CHECK_THAT(err("a=range(0.1,0.5,0.1)"), Catch::Contains("ranges over floats are not supported"));
  CHECK_THAT(err("a=range(1,x)"), Catch::Contains("'x' is not a whole number"));
  CHECK_THAT(err("a=range(1,1)"), Catch::Contains("is empty"));
  CHECK_THAT(err("a=range(1,5,0)"), Catch::Contains("step is 0"));
  CHECK_THAT(err("a=range()"), Catch::Contains("an empty element"));
  CHECK_THAT(err("a=range(start=1)"), Catch::Contains("needs a stop"));
  CHECK_THAT(err("a=range(1,2,3,4)"), Catch::Contains("at most 3 arguments"));
  CHECK_THAT(err("a=range(stop=3,1)"), Catch::Contains("positional argument after a named"));
  CHECK_THAT(err("a=range(begin=3)"), Catch::Contains("no argument 'begin'"));
  CHECK_THAT(err("a=range(stop=3,stop=4)"), Catch::Contains("'stop' given twice"));
  CHECK_THAT(err("a=range(0,100000)"), Catch::Contains("more than 4096 values"));
  CHECK_THAT(err("a=1,range(1,3)"), Catch::Contains("must be the whole value"));
  CHECK_THAT(err("a=choice()"), Catch::Contains("at least one value"));
  CHECK_THAT(err("a=choice(1,range(2))"), Catch::Contains("a function inside choice()"));
  CHECK_THAT(err("a=1,,2"), Catch::Contains("an empty element"));
  CHECK_THAT(err("a=1,"), Catch::Contains("an empty element"));
  CHECK_THAT(err("a='x,y"), Catch::Contains("quote is never closed"));
  CHECK_THAT(err("a=[1,2"), Catch::Contains("'[' is never closed"));
  CHECK_THAT(err("a=1],2"), Catch::Contains("']' at column 2 of the value closes nothing"));
  CHECK_THAT(err("a=1,1"), Catch::Contains("value '1' is given twice"));
  CHECK_THAT(err("~a=1,2"), Catch::Contains("a delete cannot be swept"));
  CHECK_THAT(err("a..b=1,2"), Catch::Contains("empty name between dots"));
  CHECK_THAT(error_of([] {
               parse_sweep({"a=1,2", "a=3,4"});
             }),
             Catch::Contains("'a' is already swept by 'a=1,2'"));
}

TEST_CASE("sweeps expand in Hydra's order, with names from the swept values") {
  const Sweep s = parse_sweep({"train.global_batch_size=256,512", "train.train_iters=10",
                               "model.tensor_model_parallel_size=range(1,3)"});
  const std::vector<SweepRun> runs = expand_sweep(s);
  CHECK(names_of(runs) == Strings{"global_batch_size=256,tensor_model_parallel_size=1",
                                  "global_batch_size=256,tensor_model_parallel_size=2",
                                  "global_batch_size=512,tensor_model_parallel_size=1",
                                  "global_batch_size=512,tensor_model_parallel_size=2"});
  CHECK(runs[1].overrides == Strings{"train.global_batch_size=256", "train.train_iters=10",
                                     "model.tensor_model_parallel_size=2"});
  CHECK(runs[1].choices ==
        Strings{"train.global_batch_size=256", "model.tensor_model_parallel_size=2"});
  // Two axes with the same last name keep their whole keys apart.
  const Sweep same = parse_sweep({"train.micro_batch_size=1,2", "validation.micro_batch_size=3"});
  CHECK(same.axes.size() == 1);
  CHECK(same.axes[0].short_key == "micro_batch_size");
  const Sweep clash = parse_sweep({"a.x=1,2", "b.x=3,4"});
  CHECK(expand_sweep(clash).front().name == "a.x=1,b.x=3");
  // No sweep: one run with the overrides as given.
  const std::vector<SweepRun> one = expand_sweep(parse_sweep({"a=1"}));
  REQUIRE(one.size() == 1);
  CHECK(one[0].name == "run");
  CHECK(one[0].overrides == Strings{"a=1"});
}

TEST_CASE("the launcher shortcuts sweep too, after the overrides' sweeps") {
  const Sweep s = parse_sweep({"train.train_iters=5,6"}, {{"tp", "1,2"}, {"gbs", "512"}});
  const std::vector<SweepRun> runs = expand_sweep(s);
  CHECK(names_of(runs) == Strings{"train_iters=5,tp=1", "train_iters=5,tp=2", "train_iters=6,tp=1",
                                  "train_iters=6,tp=2"});
  CHECK(runs[1].choices == Strings{"train.train_iters=5", "--tp 2"});
  using Pairs = std::vector<std::pair<std::string, std::string>>;
  CHECK(runs[1].shortcuts == Pairs{{"tp", "2"}, {"gbs", "512"}});
  CHECK(parse_sweep({}, {{"vp", "range(1,3)"}}).axes.at(0).values == Strings{"1", "2"});
  CHECK_THAT(error_of([] {
               parse_sweep({}, {{"tp", "1,x"}});
             }),
             Catch::StartsWith("sweep '--tp 1,x': --tp 'x': expected a whole number"));
  CHECK_THAT(error_of([] {
               parse_sweep({}, {{"pp", "2,2"}});
             }),
             Catch::Contains("value '2' is given twice"));
  CHECK_THAT(error_of([] {
               parse_sweep({}, {{"tp", "1,2"}, {"tp", "4,8"}});
             }),
             Catch::Contains("--tp is already swept by '--tp 1,2'"));
  CHECK_THAT(error_of([] { parse_shortcut("tp", "1,2"); }),
             Catch::EndsWith("; to sweep it, give --multirun --out-dir DIR"));
}

TEST_CASE("run names are safe file names, encoded so that distinct values stay distinct") {
  CHECK(file_name_part("256") == "256");
  CHECK(file_name_part("1e-4") == "1e-4");
  CHECK(file_name_part("a/b") == "a%2Fb");
  CHECK(file_name_part("../x") == "..%2Fx");
  CHECK(file_name_part("'x,y'") == "%27x%2Cy%27");
  CHECK(file_name_part("a b\n") == "a%20b%0A");
  CHECK(file_name_part("50%") == "50%25");
  CHECK(file_name_part("\xc3\xa9") == "%C3%A9");
  CHECK(expand_sweep(parse_sweep({"+env_vars.P=a/b,'x y'"})).back().name == "P=%27x%20y%27");
  const std::string long_value(250, 'x');
  CHECK_THAT(error_of([&] { (void)expand_sweep(parse_sweep({"a=1," + long_value})); }),
             Catch::Contains("more than 200; sweep fewer keys or shorter values"));
}

TEST_CASE("a sweep is bounded, and the error names the product") {
  const Sweep s = parse_sweep({"a=range(64)", "b=range(64)", "c=1,2"});
  CHECK_THAT(
      error_of([&] { (void)expand_sweep(s); }),
      Catch::Equals("sweep: 64 x 64 x 2 combinations is more than 4096; sweep fewer values"));
  CHECK(expand_sweep(parse_sweep({"a=range(64)", "b=range(64)"})).size() == 4096);
}

TEST_CASE("the sweep index lists axes and runs in order") {
  const Sweep s = parse_sweep({"train.global_batch_size=256,512"});
  const auto runs = expand_sweep(s);
  const std::string yaml = to_yaml(sweep_index(s, runs, {"a.yaml", "b.yaml"}, {"a.sh"}));
  CHECK(yaml == "runs:\n"
                "- choices:\n"
                "  - train.global_batch_size=256\n"
                "  config: a.yaml\n"
                "  launch: a.sh\n"
                "  name: global_batch_size=256\n"
                "- choices:\n"
                "  - train.global_batch_size=512\n"
                "  config: b.yaml\n"
                "  name: global_batch_size=512\n"
                "sweep:\n"
                "- key: train.global_batch_size\n"
                "  values:\n"
                "  - '256'\n"
                "  - '512'\n");
}

namespace {

BuildResult build_with(const std::string& spec,
                       const std::vector<std::pair<std::string, std::string>>& flags,
                       const std::vector<std::string>& overrides = {}) {
  BuildRequest req;
  req.recipe = spec;
  for (const auto& [name, text] : flags)
    req.shortcuts.push_back(parse_shortcut(name, text));
  req.overrides = overrides;
  return qr::test::compiler().run(req, through(Stage::Invariants));
}

} // namespace

TEST_CASE("shortcuts set their fields and what follows them, as upstream's set_user_overrides") {
  const BuildResult r = build_with("qwen35_397b@gb300:fp8cs", {{"tp", "2"},
                                                               {"pp", "4"},
                                                               {"vp", "2"},
                                                               {"ep", "16"},
                                                               {"etp", "None"},
                                                               {"mbs", "2"},
                                                               {"gbs", "512"}});
  CHECK(at(r, "model.tensor_model_parallel_size") == "2");
  CHECK(at(r, "model.sequence_parallel") == "true");
  CHECK(at(r, "model.pipeline_model_parallel_size") == "4");
  CHECK(at(r, "model.virtual_pipeline_model_parallel_size") == "2");
  CHECK(at(r, "model.expert_model_parallel_size") == "16");
  CHECK(at(r, "model.expert_tensor_parallel_size") == "null");
  CHECK(at(r, "train.micro_batch_size") == "2");
  CHECK(at(r, "train.global_batch_size") == "512");
  // HybridEP on an NVL72 rack: the ranks per NVLink domain are EP.
  CHECK(at(r, "env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN") == "16");
  CHECK(at(r, "env_vars.CUDA_DEVICE_MAX_CONNECTIONS") == "32");
  CHECK_THAT(r.command, Catch::Contains("--mcore pinned --tp 2 --pp 4 --vp 2 --ep 16 --etp None "
                                        "--mbs 2 --gbs 512"));
  // TP 1 turns sequence parallelism off; the dotlist comes after and wins.
  CHECK(at(build_with("qwen3_235b@h100", {{"tp", "1"}}), "model.sequence_parallel") == "false");
  CHECK(at(build_with("qwen3_235b@h100", {{"tp", "2"}}, {"model.sequence_parallel=false"}),
           "model.sequence_parallel") == "false");
  // The last of a shortcut given twice wins.
  CHECK(at(build_with("qwen3_235b@h100", {{"gbs", "64"}, {"gbs", "128"}}),
           "train.global_batch_size") == "128");
}

TEST_CASE("shortcut dependents follow upstream's flat-recipe environment rules") {
  // H100: TP > 1 without MoE a2a overlap is one connection; with it (qwen3_30b's) 32, as with
  // DeepEP or HybridEP at TP 1.
  CHECK(at(build_with("qwen35_35b@h100", {{"tp", "2"}}), "env_vars.CUDA_DEVICE_MAX_CONNECTIONS") ==
        "1");
  CHECK(at(build_with("qwen3_30b@h100", {{"tp", "2"}}), "env_vars.CUDA_DEVICE_MAX_CONNECTIONS") ==
        "32");
  CHECK(at(build_with("qwen35_35b@h100", {{"tp", "1"}}), "env_vars.CUDA_DEVICE_MAX_CONNECTIONS") ==
        "32");
  // HybridEP inside an 8-GPU domain caps the ranks at the domain.
  CHECK(at(build_with("qwen35_35b@h100", {{"ep", "16"}}),
           "env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN") == "8");
  CHECK_THAT(error_of([] {
               (void)build_with("qwen35_397b@gb300", {{"ep", "128"}});
             }),
             Catch::StartsWith("--ep 128: HybridEP's expert parallel size must not exceed the "
                               "72-GPU NVLink domain"));
  // Without HybridEP the ranks variable is not added.
  CHECK(at(build_with("qwen3_30b@h100", {{"ep", "4"}}),
           "env_vars.NUM_OF_HYBRID_EP_RANKS_PER_NVLINK_DOMAIN") == "<absent>");
}

TEST_CASE("shortcut values are checked and the write log names them") {
  CHECK_THAT(error_of([] { parse_shortcut("tp", "0"); }),
             Catch::Equals("--tp '0': expected a whole number from 1 to 999999999 without leading "
                           "zeros"));
  CHECK_THAT(error_of([] { parse_shortcut("pp", "None"); }), Catch::StartsWith("--pp 'None'"));
  CHECK_THAT(error_of([] { parse_shortcut("vp", "x"); }), Catch::EndsWith(", or None for null"));
  CHECK_THAT(error_of([] { parse_shortcut("tpp", "1"); }),
             Catch::Contains("unknown shortcut '--tpp'") && Catch::Contains("did you mean"));
  const BuildResult r = build_with("qwen3_30b@h100", {{"tp", "2"}});
  bool seen = false;
  for (const Write& w : r.config.writes())
    if (w.path == "model.sequence_parallel" && w.step.kind == StepId::Kind::Shortcut)
      seen = w.step.pass == "--tp 2";
  CHECK(seen);
}

TEST_CASE("the shortcuts are a stage of their own, between the passes and the overrides") {
  BuildRequest req;
  req.recipe = "qwen3_30b@b200";
  req.shortcuts.push_back(parse_shortcut("gbs", "256"));
  req.overrides = {"train.global_batch_size=128"};
  const auto gbs = [](const BuildResult& r) { return at(r, "train.global_batch_size"); };
  CHECK(gbs(qr::test::compiler().run(req, through(Stage::Passes))) == "512");
  CHECK(gbs(qr::test::compiler().run(req, through(Stage::Shortcuts))) == "256");
  CHECK(gbs(qr::test::compiler().run(req, through(Stage::Overrides))) == "128");
  CHECK_THAT(
      error_of([&] { (void)qr::test::compiler().run(req, Stage::Recipe | Stage::Shortcuts); }),
      Catch::Contains("skip one the later ones need"));
}
