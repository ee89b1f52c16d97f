// qwen-recipe launch RECIPE --gpu G [OVERRIDES...]: builds and checks the config, writes it, and
// prints (or writes) the Slurm batch script, torchrun script or JSON that runs it.
#include "commands.h"
#include "config/error.h"
#include "launch/launch.h"

#include <filesystem>
#include <memory>
#include <spdlog/spdlog.h>

namespace qr::cli {
namespace {

struct LaunchCliOptions {
  std::vector<std::string> args; // RECIPE then overrides
  RecipeOptions recipe;
  std::string format = "slurm", output, config;
  LaunchOptions launch;
};

int run_launch(LaunchCliOptions o, const GlobalOptions& g) {
  if (o.args.empty())
    throw Error("no recipe given; e.g. qwen-recipe launch qwen35_397b --gpu gb300 --account A "
                "--partition P");
  auto compiler = make_compiler(g);
  BuildRequest req;
  req.recipe = o.args.front();
  o.recipe.fill(req);
  req.overrides.assign(o.args.begin() + 1, o.args.end());
  const BuildResult r = compiler->build(req);
  validate_built(r, validate_options_for(req, r));

  // The config goes next to the launch file: job.sbatch -> job.yaml.
  if (o.config.empty())
    o.config =
        o.output.empty() || o.output == "-"
            ? (o.launch.job_name.empty()
                   ? r.recipe->model->name + "-" + r.recipe->gpu->name + "-" + r.recipe->precision
                   : o.launch.job_name) +
                  ".yaml"
            : std::filesystem::path(o.output).replace_extension(".yaml").string();
  if (o.config == o.output)
    throw Error("--config and --output are both " + o.config + "; give them different names");
  o.launch.config_path = o.config;
  const LaunchPlan plan = plan_launch(r, o.launch);
  const std::string launch = o.format == "slurm"      ? slurm_script(plan, o.launch)
                             : o.format == "torchrun" ? torchrun_script(plan)
                                                      : launch_json(plan, o.launch);
  write_output(o.config, emit_config(r));
  spdlog::info("wrote the config to {} ({} nodes x {} GPUs)", o.config, plan.nodes,
               plan.gpus_per_node);
  write_output(o.output, launch);
  return 0;
}

} // namespace

void register_launch(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<LaunchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "write a recipe's config and the Slurm script (or torchrun command) that runs "
                "Megatron-Bridge's performance entry point on it");
  cmd->add_option("args", opts->args,
                  "RECIPE (a model, or MODEL@GPU[:PRECISION]) then Hydra overrides, as for build");
  opts->recipe.add_to(cmd);
  cmd->add_option("--format", opts->format,
                  "slurm (default: an sbatch script), torchrun (a script to run on every node) or "
                  "json (the launch config)")
      ->check(one_of({"slurm", "torchrun", "json"}));
  cmd->add_option("-o,--output", opts->output,
                  "write the launch file here (atomically) instead of standard output");
  cmd->add_option("--config", opts->config,
                  "where to write the config YAML (default: next to --output as NAME.yaml, else "
                  "JOB-NAME.yaml here)");
  cmd->add_option("--job-name", opts->launch.job_name,
                  "Slurm job name (default MODEL-GPU-PRECISION)");
  cmd->add_option("-A,--account", opts->launch.account, "Slurm account");
  cmd->add_option("-p,--partition", opts->launch.partition, "Slurm partition");
  cmd->add_option("-t,--time", opts->launch.time_limit, "Slurm time limit (default 00:30:00)");
  cmd->add_option("--container-image", opts->launch.container_image,
                  "container image for srun (pyxis), e.g. nvcr.io/nvidia/nemo:26.04; without it "
                  "the ranks run the nodes' own Python")
      ->check([](const std::string& s) {
        return s.find_first_of("\n'") == std::string::npos ? "" : "no quotes or newlines";
      });
  cmd->add_option("--container-mounts", opts->launch.container_mounts,
                  "extra SRC:DST container mounts (repeat, or separate with commas); the config's "
                  "directory is always mounted")
      ->delimiter(',')
      ->check([](const std::string& s) {
        return s.find_first_of("\"$`\\\n") == std::string::npos
                   ? ""
                   : "a mount may not hold quotes, $, backquotes or backslashes";
      });
  cmd->add_option("--gpus-per-node", opts->launch.gpus_per_node,
                  "GPUs per node (default: 4 on gb300, gb200, vr200; 8 on b300, b200, h100)")
      ->check(positive_count());
  cmd->add_option("--megatron-bridge", opts->launch.megatron_bridge,
                  "Megatron-Bridge checkout inside the container (default /opt/Megatron-Bridge)");
  cmd->footer("Examples:\n"
              "  qwen-recipe launch qwen35_397b --gpu gb300 -A my_account -p batch \\\n"
              "      --container-image nvcr.io/nvidia/nemo:26.04 -o q397.sbatch && sbatch "
              "q397.sbatch\n"
              "  qwen-recipe launch qwen3_30b@h100 --format torchrun train.train_iters=20\n"
              "  qwen-recipe launch qwen35_35b@gb300:fp8mx --format json");
  cmd->fallthrough();
  cmd->callback(
      [opts, &global, &action] { action = [opts, &global] { return run_launch(*opts, global); }; });
}

} // namespace qr::cli
