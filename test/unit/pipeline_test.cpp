// Pipeline text: parsing, named pipelines, option typing and ordering rules.
#include "helpers.h"
#include "passes/invariants.h"
#include "passes/registry.h"

#include <algorithm>
#include <set>

using namespace qr;
using qr::test::build_pipeline;
using qr::test::compiler;
using qr::test::error_of;

namespace {

Pipeline bound(const std::string& text) {
  Pipeline p = Pipeline::parse(text);
  Config base(
      std::shared_ptr<const Schema>(&compiler().schema(), [](const Schema*) {}), "pinned",
      compiler().catalog().base_config(compiler().catalog().model("qwen35_397b"), "pinned"));
  p.bind(base, compiler().catalog());
  return p;
}

} // namespace

TEST_CASE("pipeline text parses, expands named pipelines and prints back the same") {
  const Pipeline p = bound(" precision{p=fp8mx} , qwen35-vl-common,\n benchmark-common,"
                           "qwen35-vl-post-clear-scope-with-overlap,gdn-backend{backend=fla}");
  REQUIRE(p.passes().size() == 7);
  CHECK(p.passes()[3].info->name == "qwen35-vl-post");
  CHECK(p.passes()[3].via == "qwen35-vl-post-clear-scope-with-overlap");
  CHECK(p.passes()[5].info->name == "overlap-param-gather-with-optimizer-step");
  CHECK(p.passes()[6].position == 7);
  CHECK(p.text() == "precision{p=fp8mx},qwen35-vl-common,benchmark-common,qwen35-vl-post,"
                    "clear-cuda-graph-scope,overlap-param-gather-with-optimizer-step,"
                    "gdn-backend{backend=fla}");
  CHECK(bound(p.text()).text() == p.text());
}

TEST_CASE("pipeline syntax errors name the element and the fault") {
  CHECK_THAT(error_of([] { Pipeline::parse("precision{p=bf16,qwen35-vl-common"); }),
             Catch::Contains("unbalanced '{'"));
  CHECK_THAT(error_of([] { Pipeline::parse("precision}"); }), Catch::Contains("unbalanced '}'"));
  CHECK_THAT(error_of([] { Pipeline::parse("precision{p=bf16},,benchmark-common"); }),
             Catch::Contains("empty element at position 2 (two commas in a row)"));
  CHECK_THAT(error_of([] { Pipeline::parse("benchmark-common,"); }),
             Catch::Contains("(trailing comma)"));
  CHECK_THAT(error_of([] { Pipeline::parse(",benchmark-common"); }),
             Catch::Contains("(leading comma)"));
  CHECK_THAT(error_of([] { Pipeline::parse(""); }), Catch::Contains("empty pipeline"));
  CHECK_THAT(error_of([] { Pipeline::parse("qwen35-vl-pots"); }),
             Catch::Contains("unknown pass 'qwen35-vl-pots' at position 1") &&
                 Catch::Contains("did you mean 'qwen35-vl-post'"));
  CHECK_THAT(error_of([] { Pipeline::parse("Benchmark_Common"); }),
             Catch::Contains("bad pass name"));
  CHECK_THAT(error_of([] { Pipeline::parse("gdn-backend{backend}"); }),
             Catch::Contains("needs the form key=value"));
  CHECK_THAT(error_of([] { Pipeline::parse("qwen35-vl-post-clear-scope{x=1}"); }),
             Catch::Contains("is a named pipeline") && Catch::Contains("takes no options"));
  CHECK_THAT(error_of([] { Pipeline::parse("gdn-backend{backend=fla}x"); }),
             Catch::Contains("text after '}'"));
}

TEST_CASE("pass options are checked and typed") {
  CHECK_THAT(
      error_of([] { bound("gdn-backend{bakend=fla}"); }),
      Catch::Contains("has no option 'bakend' (did you mean 'backend'?); its options: backend"));
  CHECK_THAT(error_of([] { bound("gdn-backend"); }), Catch::Contains("needs option 'backend'"));
  CHECK_THAT(error_of([] { bound("gdn-backend{backend=cudnn}"); }),
             Catch::Contains("'cudnn' is not one of fla, transformer_engine"));
  CHECK_THAT(error_of([] { bound("batch{mbs=two}"); }), Catch::Contains("expected int, got 'two'"));
  CHECK_THAT(error_of([] { bound("batch{mbs=1,mbs=2}"); }),
             Catch::Contains("sets option 'mbs' twice"));
  CHECK_THAT(error_of([] { bound("set{model.hiden_size=1}"); }),
             Catch::Contains("did you mean 'model.hidden_size'"));
  CHECK_THAT(error_of([] { bound("env{presets=[perf,nvl72]}"); }),
             Catch::Contains("unknown env preset 'nvl72'"));
  CHECK_THAT(error_of([] { bound("env{bad-name=1}"); }),
             Catch::Contains("'bad-name' is not an environment variable name"));
  CHECK(bound("set{model.hidden_size=4096,dataset.prompt=hi}").passes()[0].args.items().size() ==
        2);
}

namespace {

// Pipeline text that gives `pass` its required properties: the first provider of each, with
// that provider's own requirements before it; each element ends in a comma.
std::string requirements_of(const std::string& pass) {
  std::string out;
  for (const PropertyRule& r : find_pass(pass)->required) {
    const std::string provider = providers_of(r.property).front();
    out += requirements_of(provider) + provider + ",";
  }
  return out;
}

} // namespace

TEST_CASE("every name in the pass table resolves") {
  std::set<std::string> names, properties, used;
  for (const PassProperty& prop : pass_properties()) {
    CAPTURE(prop.name);
    CHECK(properties.insert(prop.name).second);
    CHECK(!prop.meaning.empty());
  }
  for (const PassInfo& p : pass_registry()) {
    CAPTURE(p.name);
    CHECK(names.insert(p.name).second);
    CHECK(p.run != nullptr);
    CHECK(!p.summary.empty());
    for (const auto* rules : {&p.after, &p.required, &p.before})
      for (const PropertyRule& r : *rules) {
        CAPTURE(r.property);
        CHECK(properties.count(r.property) == 1);
        CHECK(!r.why.empty());
        // A rule on a property nothing provides could never fire.
        CHECK(!providers_of(r.property).empty());
        used.insert(r.property);
      }
    for (const auto* props : {&p.provided, &p.destroyed})
      for (const std::string& prop : *props) {
        CAPTURE(prop);
        CHECK(properties.count(prop) == 1);
      }
    for (const std::string& inv : p.ensures) {
      CAPTURE(inv);
      CHECK(find_invariant(inv) != nullptr);
    }
  }
  // Every property is some rule's subject.
  CHECK(used == properties);
  for (const NamedPipeline& n : named_pipelines()) {
    CAPTURE(n.name);
    CHECK(names.insert(n.name).second);
    std::string setup;
    const Pipeline expansion = Pipeline::parse(n.expansion);
    for (const PassInvocation& inv : expansion.passes())
      setup += requirements_of(inv.info->name);
    CHECK_NOTHROW(Pipeline::parse(setup + n.expansion).check_order());
  }
}

// Every declared ordering rule, both ways, with every pass that provides its property: the right
// order passes the check, the wrong one fails with both passes, their positions and the fix.
TEST_CASE("every ordering rule holds one way and fails the other") {
  int rules = 0;
  for (const PassInfo& p : pass_registry()) {
    for (const PropertyRule& r : p.after)
      for (const std::string& b : providers_of(r.property)) {
        CAPTURE(p.name, r.property, b);
        const std::string setup = requirements_of(p.name) + requirements_of(b);
        CHECK_NOTHROW(Pipeline::parse(setup + b + "," + p.name).check_order());
        const int at = static_cast<int>(std::count(setup.begin(), setup.end(), ',')) + 1;
        CHECK_THAT(error_of([&] { Pipeline::parse(setup + p.name + "," + b).check_order(); }),
                   Catch::Contains("pass '" + p.name + "' (position " + std::to_string(at) +
                                   ") must run after '" + b + "' (position " +
                                   std::to_string(at + 1) + "): " + r.why) &&
                       Catch::Contains("move '" + p.name + "' after '" + b + "'"));
        ++rules;
      }
    for (const PropertyRule& r : p.before)
      for (const std::string& b : providers_of(r.property)) {
        CAPTURE(p.name, r.property, b);
        CHECK_NOTHROW(Pipeline::parse(p.name + "," + b).check_order());
        CHECK_THAT(error_of([&] { Pipeline::parse(b + "," + p.name).check_order(); }),
                   Catch::Contains("must run before '" + b + "' (position 1): " + r.why));
        ++rules;
      }
    for (const PropertyRule& r : p.required) {
      CAPTURE(p.name, r.property);
      CHECK_THAT(error_of([&] { Pipeline::parse(p.name).check_order(); }),
                 Catch::Contains("pass '" + p.name + "' (position 1) requires property '" +
                                 r.property + "'") &&
                     Catch::Contains(r.why + "; add '" + providers_of(r.property).front() + "'"));
      for (const std::string& b : providers_of(r.property)) {
        CAPTURE(b);
        CHECK_THAT(error_of([&] { Pipeline::parse(p.name + "," + b).check_order(); }),
                   Catch::Contains("must run after '" + b + "' (position 2)"));
      }
      ++rules;
    }
  }
  CHECK(rules >= 20);
  CHECK_THAT(error_of([] { Pipeline::parse("env,benchmark-common").check_order(); }),
             Catch::Contains("must be the last pass"));
}

TEST_CASE("required properties: a base config may hold them, a destroying pass loses them") {
  const std::string missing = error_of([] { bound("finalize-qwen3-vl").check_order(); });
  CHECK(missing == "pipeline: pass 'finalize-qwen3-vl' (position 1) requires property "
                   "'comm-overlap-config' (comm_overlap is a CommOverlapConfig, not null), "
                   "which no pass before it provides: it tunes the recipe's CommOverlapConfig; "
                   "add 'comm-overlap' or 'qwen35-vl-35b-h100-exec' before it");
  // A base that already has a CommOverlapConfig needs no pass to provide one.
  Config base(std::shared_ptr<const Schema>(&compiler().schema(), [](const Schema*) {}), "pinned",
              compiler().catalog().base_config(compiler().catalog().model("qwen3_30b"), "pinned"));
  base.set("comm_overlap", compiler().schema().instantiate(
                               *compiler().schema().class_named("CommOverlapConfig"), "pinned"));
  Pipeline p = Pipeline::parse("finalize-qwen3-vl,moe-a2a-overlap");
  p.bind(base, compiler().catalog());
  CHECK_NOTHROW(p.check_order());
  // GCC's current = (current | provided) - destroyed, with passes of our own.
  const PassInfo give{.name = "give", .provided = {"comm-overlap-config"}};
  const PassInfo take{.name = "take", .destroyed = {"comm-overlap-config"}};
  const PassInfo need{.name = "need",
                      .required = {{"comm-overlap-config", "it edits the CommOverlapConfig"}}};
  auto order = [](std::vector<const PassInfo*> infos, std::set<std::string> initial = {}) {
    std::vector<PassInvocation> passes;
    for (const PassInfo* info : infos)
      passes.push_back({.info = info, .position = static_cast<int>(passes.size() + 1)});
    check_pass_order(passes, std::move(initial));
  };
  CHECK_NOTHROW(order({&give, &need}));
  CHECK_NOTHROW(order({&give, &take, &give, &need}));
  CHECK_NOTHROW(order({&need}, {"comm-overlap-config"}));
  CHECK_THAT(error_of([&] {
               order({&give, &take, &need});
             }),
             Catch::Contains("pass 'need' (position 3) requires property 'comm-overlap-config'") &&
                 Catch::Contains("which pass 'take' (position 2) destroys"));
  CHECK_THAT(error_of([&] {
               order({&take, &need}, {"comm-overlap-config"});
             }),
             Catch::Contains("which pass 'take' (position 1) destroys"));
}

TEST_CASE("the issue's rules: qwen35-vl-common between precision and benchmark-common, "
          "post after benchmark-common, partial graphs after post") {
  CHECK_THAT(
      error_of([] { Pipeline::parse("qwen35-vl-common,precision{p=bf16}").check_order(); }),
      Catch::Contains("'qwen35-vl-common' (position 1) must run after 'precision' (position 2)"));
  CHECK_THAT(
      error_of([] { Pipeline::parse("benchmark-common,qwen35-vl-common").check_order(); }),
      Catch::Contains(
          "'qwen35-vl-common' (position 2) must run before 'benchmark-common' (position 1)"));
  CHECK_THAT(error_of([] { Pipeline::parse("qwen35-vl-post,benchmark-common").check_order(); }),
             Catch::Contains("'qwen35-vl-post' (position 1) must run after 'benchmark-common'"));
  CHECK_THAT(error_of([] {
               build_pipeline("qwen35_397b", "gb300",
                              "precision{p=bf16},qwen35-vl-common,benchmark-common,"
                              "partial-cuda-graphs,qwen35-vl-post");
             }),
             Catch::Contains("pass 'partial-cuda-graphs' (position 4) must run after "
                             "'qwen35-vl-post' (position 5)"));
}

TEST_CASE("inherit inserts passes into the parsed pipeline, before its last env pass") {
  const Catalog& catalog = compiler().catalog();
  for (const char* model : {"qwen35_35b", "qwen35_397b"})
    for (const std::string& precision : catalog.precisions()) {
      if (precision == "nvfp4")
        continue;
      CAPTURE(model, precision);
      const Pipeline& parent = catalog.resolve(model, "gb300", precision).variant->pipeline;
      const Pipeline& child = catalog.resolve(model, "vr200", precision).variant->pipeline;
      REQUIRE(child.passes().size() == parent.passes().size() + 1);
      const std::size_t env = parent.last_index_of("env").value();
      CHECK(child.passes()[env].text() == "gdn-backend{backend=fla}");
      CHECK(child.passes()[env + 1].info->name == "env");
      for (std::size_t i = 0; i < child.passes().size(); ++i)
        CHECK(child.passes()[i].position == static_cast<int>(i + 1));
    }
  // A named pipeline inserted keeps its expansion's origin.
  Pipeline p = Pipeline::parse("precision{p=bf16},env");
  p.insert(1, Pipeline::parse("qwen35-vl-post-clear-scope"));
  CHECK(p.text() == "precision{p=bf16},qwen35-vl-post,clear-cuda-graph-scope,env");
  CHECK(p.passes()[2].via == "qwen35-vl-post-clear-scope");
  CHECK(p.passes()[3].position == 4);
  CHECK_FALSE(p.last_index_of("benchmark-common").has_value());
}
