// Golden files: every recipe x GPU x precision, compared byte for byte. UPDATE_GOLDENS=1
// rewrites them; review the diff like code. A mismatch prints a unified diff and leaves the
// received text in `<golden>.received`.
#include "check/check.h"
#include "helpers.h"
#include "passes/invariants.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

using namespace qr;
using qr::test::compiler;
namespace fs = std::filesystem;

namespace {

const fs::path kGoldenDir = fs::path(QR_SOURCE_DIR) / "test" / "golden";

struct Golden {
  RecipeSpec spec;
  std::string profile;
  fs::path path;
};

// Every recipe in the default profile; the GDN-branch GPUs' Qwen3.5 recipes also with --mcore gdn.
std::vector<Golden> goldens() {
  std::vector<Golden> out;
  for (const RecipeSpec& s : compiler().catalog().all()) {
    const std::string name = s.model->name + "-" + s.gpu->name + "-" + s.precision + ".yaml";
    out.push_back({s, "pinned", kGoldenDir / "pinned" / name});
    if (s.model->name.rfind("qwen35_", 0) == 0 &&
        (s.gpu->name == "gb300" || s.gpu->name == "vr200"))
      out.push_back({s, "gdn", kGoldenDir / "gdn" / name});
  }
  return out;
}

BuildResult build_golden(const Golden& g) {
  return qr::test::build(g.spec.model->name, g.spec.gpu->name, g.spec.precision, {}, g.profile);
}

} // namespace

TEST_CASE("golden files: every recipe builds to its golden YAML byte for byte") {
  std::set<fs::path> expected;
  for (const Golden& g : goldens()) {
    expected.insert(g.path);
    qr::test::check_golden(g.path, emit_config(build_golden(g)),
                           g.spec.id() + " --mcore " + g.profile);
  }
  // No golden (nor received file) left behind by a recipe that no longer exists.
  for (const auto& dir : {kGoldenDir / "pinned", kGoldenDir / "gdn"})
    for (const auto& entry : fs::directory_iterator(dir)) {
      CAPTURE(entry.path().string());
      fs::path golden = entry.path();
      if (golden.extension() == ".received")
        golden.replace_extension();
      CHECK(expected.count(golden) == 1);
    }
  CHECK(expected.size() == 73 + 18);
}

// test/golden/manifest.yaml, which `qwen-recipe check` runs in CTest, lists these same goldens
// with the same builds.
TEST_CASE("golden files: the check manifest lists every golden and its build") {
  const Manifest m = read_manifest((kGoldenDir / "manifest.yaml").string());
  std::vector<std::string> listed, expected;
  for (const GoldenEntry& e : m.entries)
    listed.push_back(fs::path(e.golden_path).lexically_normal().string() + " " + e.request.recipe +
                     " " + e.request.profile);
  for (const Golden& g : goldens())
    expected.push_back(g.path.lexically_normal().string() + " " + g.spec.id() + " " + g.profile);
  std::sort(listed.begin(), listed.end());
  std::sort(expected.begin(), expected.end());
  CHECK(listed == expected);
}

TEST_CASE("building is deterministic: the same request twice gives the same bytes") {
  for (const Golden& g : goldens())
    CHECK(emit_config(build_golden(g)) == emit_config(build_golden(g)));
}

// Compiling the output again through the same pipeline changes nothing, except where an upstream
// quirk makes the recipe depend on its own starting state: recipes that waive the TE RNG tracker
// check turn graphs on after benchmark-common, and a second run sees the graphs already on.
TEST_CASE("idempotence: output -> same pipeline -> same output") {
  const fs::path tmp = test::scratch_dir() / "idempotence.yaml";
  int checked = 0;
  for (const Golden& g : goldens()) {
    if (g.profile != "pinned")
      continue;
    CAPTURE(g.spec.id());
    const BuildResult first = build_golden(g);
    std::ofstream(tmp, std::ios::binary) << emit_config(first, false);
    BuildRequest again;
    again.base_file = tmp.string();
    again.pipeline_text = first.pipeline.text();
    const auto& waivers = g.spec.variant->waivers.listed;
    const bool quirk = std::any_of(waivers.begin(), waivers.end(), [](const Waiver& w) {
      return w.kind == Waiver::Kind::Invariant;
    });
    if (quirk)
      continue;
    const BuildResult second = compiler().run(again, through(Stage::Invariants));
    CHECK(emit_config(second, false) == emit_config(first, false));
    ++checked;
  }
  CHECK(checked >= 60);
}
