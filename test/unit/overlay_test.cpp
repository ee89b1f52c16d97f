// --recipes-dir overlays and GPU-count variants (docs/user-recipes.md): what a user folder adds,
// replaces and refuses, how specs and --num-gpus pick a variant, and what launch passes.
#include "helpers.h"
#include "launch/launch.h"

#include <filesystem>
#include <fstream>

namespace qr::test {
namespace {

namespace fs = std::filesystem;

// A fresh folder under the test scratch directory with the given files.
std::string folder(const std::string& name,
                   const std::vector<std::pair<std::string, std::string>>& files) {
  const fs::path dir = test::scratch_dir() / "overlay" / name;
  fs::remove_all(dir);
  for (const auto& [path, text] : files) {
    fs::create_directories((dir / path).parent_path());
    std::ofstream(dir / path) << text;
  }
  fs::create_directories(dir);
  return dir.string();
}

const std::string kVariant = "recipes:\n"
                             "  qwen35_397b@gb300x128:\n"
                             "    inherit: qwen35_397b@gb300\n"
                             "    insert_before_env: set{train.global_batch_size=2048}\n";

BuildResult build_spec(const Compiler& c, const std::string& spec, int num_gpus = 0) {
  BuildRequest req;
  req.recipe = spec;
  if (num_gpus > 0)
    req.checks.num_gpus = num_gpus;
  return c.run(req, through(Stage::Invariants));
}

} // namespace

TEST_CASE("recipe specs: MODEL@GPU[xN][:PRECISION]") {
  const RecipeRef variant = parse_recipe_ref("qwen35_397b@gb300x128:fp8mx");
  CHECK(variant.model == "qwen35_397b");
  CHECK(variant.gpu == "gb300");
  CHECK(variant.num_gpus == 128);
  CHECK(variant.precision == "fp8mx");
  const RecipeRef plain = parse_recipe_ref("qwen35_397b@gb300");
  CHECK(plain.gpu == "gb300");
  CHECK(plain.num_gpus == 0);
  CHECK(plain.precision == "bf16");
  CHECK_THAT(error_of([] { (void)parse_recipe_ref("qwen35_397b@gb300x012"); }),
             Catch::Contains("without leading zeros"));
  CHECK_THAT(error_of([] { (void)parse_recipe_ref("qwen35_397b@gb300x1234567890"); }),
             Catch::Contains("from 1 to 999999999"));
  // The count is read off the end only: a GPU word without digits after its last x is a GPU.
  CHECK(parse_recipe_ref("m@x128").gpu == "x128");
  CHECK(parse_recipe_ref("m@gb300x").gpu == "gb300x");
}

TEST_CASE("GPU-count variants: the default recipe, a variant by spec or --num-gpus, and the "
          "-ng rescale where there is none") {
  const Compiler c(recipe_sources({folder("variant", {{"v.yaml", kVariant}})}));
  const BuildResult def = build_spec(c, "qwen35_397b@gb300");
  CHECK(def.recipe->entry->num_gpus == 64);
  CHECK(def.recipe->id() == "qwen35_397b@gb300:bf16");
  const BuildResult by_spec = build_spec(c, "qwen35_397b@gb300x128");
  const BuildResult by_flag = build_spec(c, "qwen35_397b@gb300", 128);
  CHECK(by_spec.recipe->id() == "qwen35_397b@gb300x128:bf16");
  CHECK(by_spec.recipe->upstream_name() == "qwen35_vl_397b_a17b_pretrain_128gpu_gb300_bf16_config");
  CHECK(emit_config(by_spec) == emit_config(by_flag));
  CHECK(by_spec.command.find(" --num-gpus 128 --mcore pinned") != std::string::npos);
  CHECK(by_spec.config.find("train.global_batch_size")->as_int() == 2048);
  CHECK(def.config.find("train.global_batch_size")->as_int() == 1024);
  // The spec's count names a variant that must exist; --num-gpus without one rescales.
  CHECK_THAT(error_of([&] { (void)build_spec(c, "qwen35_397b@gb300x96"); }),
             Catch::Contains("has no 96-GPU recipe; it has 64, 128 GPUs"));
  const BuildResult rescaled = build_spec(c, "qwen35_397b@gb300", 96);
  CHECK(rescaled.recipe->entry->num_gpus == 64);
  CHECK(emit_config(rescaled) == emit_config(def));
  CHECK_THAT(error_of([&] { (void)build_spec(c, "qwen35_397b@gb300x128", 64); }),
             Catch::Contains("names 128 GPUs but --num-gpus is 64"));
  // Launch passes Megatron-Bridge's model recipe name and the variant's count.
  const LaunchPlan plan = plan_launch(by_spec, LaunchOptions{});
  CHECK(plan.nodes == 32);
  const std::vector<std::string>& args = plan.entry_args;
  CHECK(std::find(args.begin(), args.end(), "qwen35_vl_397b_a17b") != args.end());
  CHECK(*(std::find(args.begin(), args.end(), "-ng") + 1) == "128");
}

TEST_CASE("overlays: a new model from existing layers and one of its own, launched as its "
          "upstream model") {
  const std::string dir = folder(
      "model", {{"m.yaml", "models:\n"
                           "  mine:\n"
                           "    title: Mine\n"
                           "    upstream: qwen35_397b\n"
                           "    bases: [pretrain_common, qwen35_vl, qwen35_vl_397b_a17b, top8]\n"
                           "recipes:\n"
                           "  mine@gb300x64:\n"
                           "    inherit: qwen35_397b@gb300\n"},
                {"models/top8.yaml", "model: {moe_router_topk: 8}\n"}});
  const Compiler c(recipe_sources({dir}));
  const BuildResult r = build_spec(c, "mine@gb300");
  CHECK(r.config.find("model.moe_router_topk")->as_int() == 8);
  CHECK(r.recipe->entry->origin == dir + "/m.yaml:7:3");
  CHECK(r.recipe->entry->layer == 1);
  const LaunchPlan plan = plan_launch(r, LaunchOptions{});
  CHECK(std::find(plan.entry_args.begin(), plan.entry_args.end(), "mine") == plan.entry_args.end());
  CHECK(std::find(plan.entry_args.begin(), plan.entry_args.end(), "qwen35_vl_397b_a17b") !=
        plan.entry_args.end());
  // The built-in recipes are untouched by it.
  CHECK(emit_config(build_spec(c, "qwen35_397b@gb300"), false) ==
        emit_config(build_spec(compiler(), "qwen35_397b@gb300"), false));
}

TEST_CASE("overlays: replace: true changes a built-in recipe in place; a later folder replaces "
          "an earlier one's") {
  const std::string replace =
      folder("replace", {{"r.yaml", "recipes:\n"
                                    "  qwen35_397b@gb300:\n"
                                    "    replace: true\n"
                                    "    inherit: qwen35_397b@gb300\n"
                                    "    insert_before_env: set{train.global_batch_size=512}\n"}});
  const Compiler c(recipe_sources({replace}));
  const BuildResult r = build_spec(c, "qwen35_397b@gb300");
  CHECK(r.recipe->entry->is_default);
  CHECK(r.recipe->id() == "qwen35_397b@gb300:bf16");
  CHECK(r.config.find("train.global_batch_size")->as_int() == 512);
  CHECK(c.catalog().recipes().size() == compiler().catalog().recipes().size());
  // Still where the built-in one was, in list order.
  for (std::size_t i = 0; i < c.catalog().recipes().size(); ++i)
    CHECK(c.catalog().recipes()[i].key() == compiler().catalog().recipes()[i].key());

  const std::string later =
      folder("later", {{"v.yaml", "recipes:\n"
                                  "  qwen35_397b@gb300x128:\n"
                                  "    inherit: qwen35_397b@gb300\n"
                                  "    insert_before_env: set{train.global_batch_size=4096}\n"}});
  const std::string first = folder("first", {{"v.yaml", kVariant}});
  const Compiler layered(recipe_sources({first, later}));
  CHECK(build_spec(layered, "qwen35_397b@gb300x128")
            .config.find("train.global_batch_size")
            ->as_int() == 4096);
  const Compiler reversed(recipe_sources({later, first}));
  CHECK(build_spec(reversed, "qwen35_397b@gb300x128")
            .config.find("train.global_batch_size")
            ->as_int() == 2048);
  CHECK(build_spec(layered, "qwen35_397b@gb300x128")
            .command.find("--recipes-dir " + first + " --recipes-dir " + later + " build") !=
        std::string::npos);
}

TEST_CASE("overlays: what a folder may hold") {
  CHECK_THAT(error_of([] { (void)recipe_sources({"/no/such/folder"}); }),
             Catch::Contains("/no/such/folder: not a directory"));
  CHECK_THAT(error_of([] { (void)Compiler(recipe_sources({folder("empty", {})})); }),
             Catch::Contains("no .yaml files"));
  std::vector<std::pair<std::string, std::string>> many;
  for (std::size_t i = 0; i <= kMaxOverlayFiles; ++i)
    many.emplace_back("f" + std::to_string(i) + ".yaml", "recipes: {}\n");
  CHECK_THAT(error_of([&] { (void)Compiler(recipe_sources({folder("many", many)})); }),
             Catch::Contains("1001 YAML files, more than 1000"));
  // A link within the folder is fine; one out of it is refused.
  const std::string linked = folder("linked", {{"real/v.txt", kVariant}});
  fs::create_symlink("real/v.txt", fs::path(linked) / "v.yaml");
  CHECK(Compiler(recipe_sources({linked})).catalog().recipes().size() ==
        compiler().catalog().recipes().size() + 1);
}

} // namespace qr::test
