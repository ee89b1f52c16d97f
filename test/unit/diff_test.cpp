// Semantic diff: what counts as a difference, dyff's kinds, the unified and JSON forms, and the
// dotlist round trip (build A + dotlist(A, B) == B) over shipped recipes.
#include "diff/diff.h"
#include "explain/explain.h"
#include "helpers.h"
#include "yaml/yaml_read.h"

#include <algorithm>

using namespace qr;
using qr::test::build;
using qr::test::compiler;

namespace {

Value yaml(const std::string& text) {
  auto doc = parse_yaml(text, "test");
  return to_untyped_value(*doc, *doc->root);
}

// The config's YAML as PyYAML would read it: what `diff` compares.
Value read_back(const BuildResult& r) {
  return yaml(emit_config(r, false));
}

std::vector<Difference> diff(const std::string& a, const std::string& b) {
  return diff_values(yaml(a), yaml(b));
}

} // namespace

TEST_CASE("diff: key order, quoting, flow style, comments and aliases are no differences") {
  CHECK(diff("a: 1\nb: {c: 'x', d: [1, 2]}\n", "# comment\nb:\n  d:\n  - 1\n  - 2\n  c: x\na: 1\n")
            .empty());
  CHECK(diff("a: yes\nb: 0x10\nc: ~\n", "a: true\nb: 16\nc: null\n").empty());
  CHECK(diff("x: &v [1, 2]\ny: *v\n", "x: [1, 2]\ny: [1, 2]\n").empty());
}

TEST_CASE("diff: value, type, map entry, list entry and order changes") {
  const auto d = diff("a: 1\nb: 1\nm: {k: 1, gone: 2}\nl: [1, 2, 3]\no: [1, 2]\nf: 1e-5\n",
                      "a: 2\nb: '1'\nm: {k: 1, new: 3}\nl: [1, 3, 4, 5]\no: [2, 1]\nf: 1.0e-05\n");
  REQUIRE(d.size() == 6);
  CHECK(d[0].path() == "a");
  CHECK(d[0].details[0].kind == Detail::Kind::ValueChange);
  CHECK(d[1].path() == "b");
  CHECK(d[1].details[0].kind == Detail::Kind::TypeChange);
  // `1e-5` is a string to PyYAML (and so to Megatron-Bridge's from_yaml), `1.0e-05` a float.
  CHECK(d[2].path() == "f");
  CHECK(d[2].details[0].kind == Detail::Kind::TypeChange);
  CHECK(d[3].path() == "l");
  REQUIRE(d[3].details.size() == 2);
  CHECK(d[3].details[0].kind == Detail::Kind::ItemsRemoved);
  CHECK(to_flow_yaml(Value(d[3].details[0].items)) == "[2]");
  CHECK(d[3].details[1].kind == Detail::Kind::ItemsAdded);
  CHECK(to_flow_yaml(Value(d[3].details[1].items)) == "[4, 5]");
  CHECK(d[4].path() == "m");
  CHECK(d[4].details[0].kind == Detail::Kind::EntriesRemoved);
  CHECK(d[4].details[1].kind == Detail::Kind::EntriesAdded);
  CHECK(d[5].details[0].kind == Detail::Kind::OrderChange);
  CHECK(dotlist(d) == std::vector<std::string>{"a=2", "b='1'", "f=1.0e-05", "l=[1, 3, 4, 5]",
                                               "~m.gone", "+m.new=3", "o=[2, 1]"});
}

TEST_CASE("diff: enums and dtypes are single values, shown by name") {
  const BuildResult a = build("qwen35_35b", "gb300");
  const BuildResult b =
      build("qwen35_35b", "gb300", "bf16",
            {"model.cuda_graph_modules=[attn]", "mixed_precision.params_dtype=float32"});
  const auto d = diff_values(read_back(a), read_back(b));
  REQUIRE(d.size() == 2);
  CHECK(d[0].path() == "mixed_precision.params_dtype");
  CHECK(show(d[0].details[0].from) == "torch.bfloat16");
  CHECK(show(d[0].details[0].to) == "torch.float32");
  CHECK(d[1].path() == "model.cuda_graph_modules");
  CHECK(show(d[1].details[0].to) == "[CudaGraphModule.attn]");
  CHECK(d[1].details[0].kind == Detail::Kind::ItemsRemoved);
}

TEST_CASE("diff: a section whose class changes starts over from the new class's defaults") {
  const auto d = diff("s: {_target_: x.A, a: 1, b: 2}\n", "s: {_target_: x.B, a: 1, c: 3}\n");
  REQUIRE(d.size() == 1);
  CHECK(d[0].details[0].kind == Detail::Kind::ClassChange);
  CHECK(dotlist(d) == std::vector<std::string>{"s={_target_: x.B, a: 1, c: 3}"});
  const SectionDefaults defaults = [](std::string_view t) -> std::optional<Value> {
    return t == "x.B" ? std::optional<Value>(yaml("{_target_: x.B, a: 0, c: 3}")) : std::nullopt;
  };
  CHECK(dotlist(d, defaults) == std::vector<std::string>{"s={_target_: x.B}", "s.a=1"});
}

TEST_CASE("diff: maps with keys no override can name are replaced whole") {
  const auto d = diff("m: {'a b': 1}\n", "m: {'a b': 2}\n");
  REQUIRE(d.size() == 1);
  CHECK(dotlist(d) == std::vector<std::string>{"m={a b: 2}"});
}

TEST_CASE("diff: unified output as diff -u prints it") {
  CHECK(unified_diff("a\nb\n", "a\nb\n", "x", "y").empty());
  CHECK(unified_diff("a\nb\nc\nd\ne\nf\ng\nh\ni\nj\n", "a\nb\nc\nd\nE\nf\ng\nh\ni\nj\nk\n", "x",
                     "y") == "--- x\n+++ y\n@@ -2,9 +2,10 @@\n b\n c\n d\n-e\n+E\n f\n g\n h\n i\n "
                             "j\n+k\n");
  CHECK(unified_diff("", "a\n", "x", "y") == "--- x\n+++ y\n@@ -0,0 +1 @@\n+a\n");
  CHECK(unified_diff("a\n", "", "x", "y") == "--- x\n+++ y\n@@ -1 +0,0 @@\n-a\n");
  // Far-apart changes make separate hunks.
  std::string a, b;
  for (int i = 0; i < 20; ++i) {
    a += std::to_string(i) + "\n";
    b += (i == 2 || i == 17 ? "x" : std::to_string(i)) + "\n";
  }
  CHECK(unified_diff(a, b, "x", "y") == "--- x\n+++ y\n@@ -1,6 +1,6 @@\n 0\n 1\n-2\n+x\n 3\n 4\n "
                                        "5\n@@ -15,6 +15,6 @@\n 14\n 15\n 16\n-17\n+x\n 18\n 19\n");
}

TEST_CASE("diff: JSON values") {
  CHECK(to_json(yaml("{b: [1, 2.5, null, true], a: \"q\\\"\\n\", c: .inf}")) ==
        "{\"a\": \"q\\\"\\n\", \"b\": [1, 2.5, null, true], \"c\": \".inf\"}");
}

// The round trip the dotlist promises: building A with the overrides that diff A B prints gives
// B's YAML exactly. Pairs: every recipe against the next in the catalogue and against the same
// model on every other GPU, in both Megatron-Core profiles.
TEST_CASE("diff: dotlist round trip, build A + dotlist(A, B) == build B") {
  const std::vector<RecipeSpec> all = compiler().catalog().all();
  int pairs = 0;
  // Every recipe as B: from its neighbours in the catalogue (other models and precisions) and
  // from the same model on another GPU; with --mcore gdn for the recipes that profile changes.
  for (const char* profile : {"pinned", "gdn"})
    for (std::size_t i = 0; i < all.size(); ++i) {
      const bool gdn_branch = all[i].model->name.rfind("qwen35_", 0) == 0 &&
                              (all[i].gpu->name == "gb300" || all[i].gpu->name == "vr200");
      if (std::string(profile) == "gdn" && !gdn_branch)
        continue;
      std::vector<const RecipeSpec*> others{&all[(i + 1) % all.size()], &all[(i + 7) % all.size()]};
      for (const RecipeSpec& s : all)
        if (s.model == all[i].model && s.precision == all[i].precision && s.gpu != all[i].gpu) {
          others.push_back(&s);
          break;
        }
      for (const RecipeSpec* other : others) {
        const RecipeSpec& a = *other;
        const RecipeSpec& b = all[i];
        CAPTURE(a.id(), b.id(), profile);
        BuildRequest ra, rb;
        ra.recipe = a.id();
        rb.recipe = b.id();
        ra.profile = rb.profile = profile;
        const BuildResult built_a = compiler().run(ra, through(Stage::Invariants));
        const BuildResult built_b = compiler().run(rb, through(Stage::Invariants));
        ra.overrides = dotlist(diff_values(read_back(built_a), read_back(built_b)),
                               section_defaults(compiler().schema(), profile));
        // B may break an invariant that only its own recipe waives: A's build then refuses it.
        const auto waives = [](const RecipeSpec& s, const std::string& name) {
          return s.variant->waivers.find(Waiver::Kind::Invariant, name) != nullptr;
        };
        if (waives(b, "te-rng-tracker-with-graphs") && !waives(a, "te-rng-tracker-with-graphs")) {
          CHECK_THAT(
              qr::test::error_of([&] { (void)compiler().run(ra, through(Stage::Invariants)); }),
              Catch::Contains("'te-rng-tracker-with-graphs' failed after overrides"));
          continue;
        }
        const BuildResult again = compiler().run(ra, through(Stage::Invariants));
        REQUIRE(emit_config(again, false) == emit_config(built_b, false));
        ++pairs;
      }
    }
  CHECK(pairs > 200);
}

TEST_CASE("diff --explain: the last pass or override that wrote a path") {
  const BuildResult r =
      build("qwen35_35b", "gb300", "fp8mx", {"train.micro_batch_size=2", "~env_vars.USE_MNNVL"});
  CHECK(last_writer(r, "mixed_precision.fp8") == "pass 'precision' (position 1)");
  CHECK(last_writer(r, "model.use_transformer_engine_op_fuser") ==
        "pass 'fused-grouped-mlp' (position 11)");
  CHECK(last_writer(r, "train.micro_batch_size") == "override 'train.micro_batch_size=2'");
  CHECK(last_writer(r, "env_vars.USE_MNNVL") == "override '~env_vars.USE_MNNVL'");
  CHECK(last_writer(r, "env_vars") == "override '~env_vars.USE_MNNVL'");
  CHECK(last_writer(r, "model.hidden_size").empty());
}

TEST_CASE("explain: base value, then every step that changed a field, in order") {
  const BuildResult r = build("qwen35_35b", "gb300", "bf16", {"model.cuda_graph_impl=none"});
  const auto h = explain_fields(compiler(), r, {"model.cuda_graph_impl", "mixed_precision.fp8"});
  REQUIRE(h.size() == 2);
  CHECK(h[0].path == "model.cuda_graph_impl");
  CHECK(to_flow_yaml(*h[0].base) == "none");
  CHECK(h[0].base_origin == "schema default");
  CHECK(to_flow_yaml(*h[0].final) == "none");
  REQUIRE(h[0].steps.size() == 3);
  CHECK(h[0].steps[0].who == "pass 'qwen35-vl-post' (position 8)");
  CHECK(h[0].steps[1].who == "pass 'partial-cuda-graphs' (position 9)");
  CHECK(to_flow_yaml(*h[0].steps[1].after) == "transformer_engine");
  CHECK(h[0].steps[2].who == "override 'model.cuda_graph_impl=none'");
  // A field set as part of a section replaced whole.
  CHECK(h[1].path == "mixed_precision.fp8");
  CHECK_FALSE(h[1].base);
  REQUIRE(h[1].steps.size() == 1);
  CHECK(h[1].steps[0].via == "mixed_precision");
  CHECK(h[1].steps[0].who == "pass 'precision' (position 1)");
  CHECK_FALSE(h[1].steps[0].before);
  CHECK(h[1].steps[0].after->is_null());
}

TEST_CASE("explain: with no field named, every field that differs from the base") {
  const BuildResult r = build("qwen35_35b", "b200");
  const auto h = explain_fields(compiler(), r, {});
  REQUIRE(h.size() > 20);
  for (const FieldHistory& f : h) {
    CAPTURE(f.path);
    CHECK(!(f.base == f.final));
    CHECK(!f.steps.empty());
  }
  // A section names the fields under it that changed.
  const auto train = explain_fields(compiler(), r, {"train"});
  for (const FieldHistory& f : train)
    CHECK(f.path.starts_with("train."));
  CHECK_THAT(qr::test::error_of([&] { (void)explain_fields(compiler(), r, {"model.hiden_size"}); }),
             Catch::Contains("did you mean 'model.hidden_size'"));
}

TEST_CASE("diff: unified output of big texts is a valid edit script beyond Myers' bounds") {
  // 30k lines, 15k of them changed: past the lines and edits Myers runs on, unique lines anchor
  // the rest. Applying the hunks to A must give B.
  std::string a, b;
  for (int i = 0; i < 30'000; ++i) {
    a += "k" + std::to_string(i) + ": " + std::to_string(i) + "\n";
    b += "k" + std::to_string(i) + ": " + std::to_string(i % 2 == 0 ? i : i + 1) + "\n";
  }
  const std::string u = unified_diff(a, b, "x", "y");
  // Rebuild B from A and the hunks.
  std::vector<std::string> la, out;
  for (std::size_t s = 0, e; s < a.size(); s = e + 1)
    la.push_back(a.substr(s, (e = a.find('\n', s)) - s));
  std::size_t next = 0; // first line of A not yet copied
  std::size_t pos = u.find("@@");
  REQUIRE(pos != std::string::npos);
  for (std::size_t s = pos, e; s < u.size(); s = e + 1) {
    e = u.find('\n', s);
    const std::string line = u.substr(s, e - s);
    if (line.starts_with("@@")) {
      const std::size_t start = std::stoul(line.substr(4)) - 1;
      while (next < start)
        out.push_back(la[next++]);
    } else if (line[0] == ' ') {
      out.push_back(la[next++]);
    } else if (line[0] == '-') {
      ++next;
    } else {
      out.push_back(line.substr(1));
    }
  }
  while (next < la.size())
    out.push_back(la[next++]);
  std::string rebuilt;
  for (const std::string& l : out)
    rebuilt += l + "\n";
  CHECK(rebuilt == b);
}

TEST_CASE("diff: maps of many keys compare, find and erase by key in any order") {
  Map a, b;
  for (int i = 0; i < 1000; ++i) {
    a.set("k" + std::to_string(i), Value(i));
    b.set("k" + std::to_string(999 - i), Value(999 - i));
  }
  CHECK(Value(a) == Value(b));
  REQUIRE(a.find("k500") != nullptr);
  CHECK(a.find("k500")->as_int() == 500);
  CHECK(a.erase("k500"));
  CHECK_FALSE(a.erase("k500"));
  CHECK(a.find("k500") == nullptr);
  CHECK(a.find("k999")->as_int() == 999); // positions after the erased entry moved
  const Map copy = a;
  CHECK(copy.find("k998")->as_int() == 998);
  a.set("k1", Value(-1));
  CHECK(a.find("k1")->as_int() == -1);
  CHECK(copy.find("k1")->as_int() == 1);
  Map more;
  more.set("k2", Value(-2));
  more.set("new", Value(7));
  a.merge(more);
  CHECK(a.find("k2")->as_int() == -2);
  CHECK(a.find("new")->as_int() == 7);
  CHECK(a.size() == 1000);
  CHECK_FALSE(Value(a) == Value(b));
}
