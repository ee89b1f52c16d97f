// qwen-recipe build: recipe -> passes -> shortcuts -> overrides -> checks -> YAML on stdout (or
// -o);
// --multirun: one config per combination of a sweep, into --out-dir.
#include "build/sweep_runs.h"
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
  std::string pipeline, base, output, env, out_dir;
  std::optional<std::int64_t> num_gpus;
  bool print_pipeline = false, print_after_all = false, no_header = false, multirun = false;
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
  int step = static_cast<int>(r.pipeline.passes().size() + 1);
  if (!r.shortcuts.empty()) {
    std::snprintf(buf, sizeof buf, "%4d  ", step++);
    out += buf + std::string("shortcuts:");
    for (const Shortcut& sc : r.shortcuts)
      out += " " + shortcut_words(sc);
    out += "    (launcher shortcuts and what follows them, before the overrides)\n";
  }
  std::snprintf(buf, sizeof buf, "%4d  ", step);
  out += buf + std::string("overrides:");
  if (r.overrides.empty())
    out += " (none)";
  for (const Override& o : r.overrides)
    out += " " + to_token(o);
  out += "    (Hydra dotlist, applied after the passes; invariants checked after)\n";
  out += "text: " + r.pipeline.text() + "\n";
  return out;
}

// --multirun: every combination is built and checked before any file is written; then the
// configs and multirun.yaml are written as one.
int run_build_sweep(const BuildOptions& o, const BuildRequest& req, const Compiler& compiler) {
  if (o.out_dir.empty())
    throw Error("--multirun needs --out-dir DIR, the directory its configs go to");
  if (!o.output.empty())
    throw Error("-o writes one config; with --multirun the configs go to --out-dir");
  if (o.print_pipeline || o.print_after_all)
    throw Error(std::string(o.print_pipeline ? "--print-pipeline" : "--print-after-all") +
                " shows one build; leave out --multirun, or the option");
  BuildRequest swept = req;
  swept.checks.single_error = true; // one line, named by the run
  const SweepPlan plan = plan_sweep(swept, o.recipe.shortcuts);
  std::vector<OutputFile> files;
  std::vector<std::string> configs;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const BuildResult r = in_run(
        plan, i, [&](const BuildRequest& rq) { return compiler.run(rq, through(Stage::Emit)); });
    add_sweep_bytes(bytes, r.yaml, plan, i);
    configs.push_back(plan.runs[i].name + ".yaml");
    files.push_back({sweep_path(o.out_dir, configs.back()), r.yaml});
  }
  files.push_back({sweep_path(o.out_dir, "multirun.yaml"),
                   to_yaml(sweep_index(plan.sweep, plan.runs, configs, {}))});
  write_sweep(o.out_dir, files, true);
  spdlog::info("wrote {} configs and multirun.yaml to {}", configs.size(), o.out_dir);
  return 0;
}

int run_build(const BuildOptions& o, const GlobalOptions& g) {
  hold_logs();
  auto compiler = make_compiler(g);
  BuildRequest req;
  o.recipe.fill(req, !o.multirun);
  req.pipeline_text = o.pipeline;
  req.base_file = o.base;
  split_recipe_words(o.args, req, !o.base.empty());
  req.checks.num_gpus = o.num_gpus;
  req.checks.env_file = o.env;
  req.header = !o.no_header;
  if (o.multirun)
    return run_build_sweep(o, req, *compiler);
  if (!o.out_dir.empty())
    throw Error("--out-dir is where --multirun writes its configs; give --multirun, or -o FILE "
                "for one config");
  if (o.print_pipeline) {
    const BuildResult r = compiler->run(req, through(Stage::Pipeline));
    write_output(o.output, pipeline_listing(r));
    return 0;
  }
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
                  "RECIPE (a model such as qwen35_397b, or MODEL@GPU[xN][:PRECISION]) then Hydra "
                  "overrides: key.path=value, +key=value (add), ++key=value (add or set), ~key "
                  "(delete)");
  opts->recipe.add_to(cmd);
  cmd->add_option("--pipeline", opts->pipeline,
                  "replace the recipe's pipeline, e.g. 'precision{p=bf16},qwen35-vl-common,...'");
  cmd->add_option("--base", opts->base,
                  "start from this YAML config instead of a recipe (needs --pipeline)");
  cmd->add_option("-o,--output", opts->output,
                  "write the YAML here (atomically) instead of standard output");
  cmd->add_flag("--print-pipeline", opts->print_pipeline,
                "print the pipeline (passes, then the overrides step) and stop");
  cmd->add_flag("--print-after-all", opts->print_after_all,
                "print the config to stderr after each step that changed it");
  cmd->add_flag("--no-header", opts->no_header, "leave out the comment header");
  cmd->add_flag("--multirun,-m", opts->multirun,
                "sweep: overrides in Hydra's sweep syntax (a=1,2  a=choice(1,2)  "
                "a=range(1,5)) give one config per combination, written to --out-dir with a "
                "multirun.yaml index; every one is built and checked before any is written");
  cmd->add_option("--out-dir", opts->out_dir,
                  "with --multirun: the directory the configs go to (created if missing; files "
                  "named from the swept values, e.g. global_batch_size=256.yaml)");
  cmd->add_option("--num-gpus", opts->num_gpus,
                  "the recipe's variant for N GPUs (MODEL@GPUxN); with none, the default recipe, "
                  "checked at world size N (default: the recipe's GPU count)")
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
