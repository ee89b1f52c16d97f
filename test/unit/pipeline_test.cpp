// Pipeline text: parsing, named pipelines, option typing and ordering rules.
#include "helpers.h"
#include "passes/registry.h"

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

// Every declared ordering rule, both ways: the right order passes the check, the wrong one fails
// with both passes, their positions and the fix.
TEST_CASE("every ordering rule holds one way and fails the other") {
  int rules = 0;
  for (const PassInfo* p : pass_registry()) {
    for (const OrderRule& r : p->after) {
      CAPTURE(p->name, r.pass);
      CHECK_NOTHROW(Pipeline::parse(r.pass + "," + p->name).check_order());
      const std::string msg =
          error_of([&] { Pipeline::parse(p->name + "," + r.pass).check_order(); });
      CHECK_THAT(msg, Catch::Contains("pass '" + p->name + "' (position 1) must run after '" +
                                      r.pass + "' (position 2)") &&
                          Catch::Contains("move '" + p->name + "' after '" + r.pass + "'"));
      ++rules;
    }
    for (const OrderRule& r : p->before) {
      CAPTURE(p->name, r.pass);
      CHECK_NOTHROW(Pipeline::parse(p->name + "," + r.pass).check_order());
      CHECK_THAT(error_of([&] { Pipeline::parse(r.pass + "," + p->name).check_order(); }),
                 Catch::Contains("must run before '" + r.pass + "' (position 1)"));
      ++rules;
    }
  }
  CHECK(rules >= 20);
  CHECK_THAT(error_of([] { Pipeline::parse("env,benchmark-common").check_order(); }),
             Catch::Contains("must be the last pass"));
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
