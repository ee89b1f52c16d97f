// qwen-recipe build: recipe -> pipeline -> overrides -> invariants -> YAML on stdout (or -o).
#include "commands.h"
#include "support/error.h"
#include "yaml/yaml_write.h"

#include <cstdint>
#include <cstdio>
#include <memory>
#include <optional>
#include <spdlog/spdlog.h>

namespace qr::cli {
namespace {

struct BuildOptions {
  std::vector<std::string> args; // RECIPE then overrides (only overrides with --base)
  RecipeOptions recipe;
  std::string pipeline, base, output, env;
  std::vector<std::string> override_files;
  std::optional<std::int64_t> num_gpus;
  bool print_pipeline = false, print_after_all = false, no_header = false;
};

std::string pipeline_listing(const BuildResult& r) {
  std::string out = "pipeline";
  if (r.recipe)
    out += " of " + r.recipe->id();
  out += " (Megatron-Core profile " + r.config.profile() + "):\n";
  char buf[32];
  for (const PassInvocation& inv : r.pipeline.passes()) {
    std::snprintf(buf, sizeof buf, "%4d  ", inv.position);
    out += buf + inv.text();
    if (!inv.via.empty())
      out += "    (from " + inv.via + ")";
    out += "\n";
  }
  std::snprintf(buf, sizeof buf, "%4d  ", static_cast<int>(r.pipeline.passes().size() + 1));
  out += buf + std::string("overrides:");
  if (r.overrides.empty())
    out += " (none)";
  for (const Override& o : r.overrides)
    out += " " + to_token(o);
  out += "    (Hydra dotlist, applied after the passes; invariants checked after)\n";
  out += "text: " + r.pipeline.text() + "\n";
  return out;
}

int run_build(const BuildOptions& o, const GlobalOptions& g) {
  hold_logs();
  auto compiler = make_compiler(g);
  BuildRequest req;
  o.recipe.fill(req);
  req.pipeline_text = o.pipeline;
  req.base_file = o.base;
  split_recipe_words(o.args, req, !o.base.empty());
  req.override_files = o.override_files;
  if (o.print_pipeline) {
    const BuildResult r = compiler->run(req, through(Stage::Pipeline));
    write_output(o.output, pipeline_listing(r));
    return 0;
  }
  req.checks.num_gpus = o.num_gpus;
  req.checks.env_file = o.env;
  req.header = !o.no_header;
  RunHooks hooks;
  if (o.print_after_all)
    hooks.after_change = [](const std::string& step, const Config& c) {
      hold_text("*** Config after " + step + " ***\n" + to_yaml(c.root()));
    };
  write_output(o.output, compiler->run(req, through(Stage::Emit), hooks).yaml);
  return 0;
}

} // namespace

void register_build(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<BuildOptions>();
  CLI::App* cmd =
      app.add_subcommand("build", "compile a recipe into the YAML Megatron-Bridge loads");
  cmd->add_option("args", opts->args,
                  "RECIPE (a model such as qwen35_397b, or MODEL@GPU[:PRECISION]) then Hydra "
                  "overrides: key.path=value, +key=value (add), ++key=value (add or set), ~key "
                  "(delete)");
  opts->recipe.add_to(cmd);
  cmd->add_option("--pipeline", opts->pipeline,
                  "replace the recipe's pipeline, e.g. 'precision{p=bf16},qwen35-vl-common,...'");
  cmd->add_option("--base", opts->base,
                  "start from this YAML config instead of a recipe (needs --pipeline)");
  cmd->add_option("--overrides", opts->override_files,
                  "Hydra overrides from a YAML file: a list of overrides, or a mapping of the "
                  "fields to set (train: {global_batch_size: 256}); repeatable, applied in order "
                  "before the command line's")
      ->allow_extra_args(false);
  cmd->add_option("-o,--output", opts->output,
                  "write the YAML here (atomically) instead of standard output");
  cmd->add_flag("--print-pipeline", opts->print_pipeline,
                "print the pipeline (passes, then the overrides step) and stop");
  cmd->add_flag("--print-after-all", opts->print_after_all,
                "print the config to stderr after each step that changed it");
  cmd->add_flag("--no-header", opts->no_header, "leave out the comment header");
  cmd->add_option("--num-gpus", opts->num_gpus,
                  "world size for the start-up checks (default: the recipe's GPU count)")
      ->check(positive_count());
  cmd->add_option("--env", opts->env,
                  "the training environment for the cuDNN GDN package checks: `pip freeze` "
                  "output or a YAML of package: version");
  cmd->footer(
      "Examples:\n"
      "  qwen-recipe build qwen35_397b --gpu gb300 > cfg.yaml\n"
      "  qwen-recipe build qwen35_397b@gb300:fp8mx --mcore gdn model.gdn_kernel_backend=fla\n"
      "  qwen-recipe build qwen3_30b --gpu h100 --precision fp8cs -o cfg.yaml "
      "train.train_iters=100\n"
      "  qwen-recipe build --base my.yaml --pipeline 'benchmark-common,qwen35-vl-post'");
  cmd->fallthrough(); // -v, -q and --recipes-dir also after the subcommand
  cmd->callback(
      [opts, &global, &action] { action = [opts, &global] { return run_build(*opts, global); }; });
}

} // namespace qr::cli
