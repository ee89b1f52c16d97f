// qwen-recipe launch RECIPE --gpu G [OVERRIDES...]: builds and checks the config, writes it, and
// prints (or writes) the Slurm batch script, torchrun script or JSON that runs it.
#include "build/sweep_runs.h"
#include "commands.h"
#include "compile/operands.h"
#include "launch/launch.h"
#include "support/error.h"
#include "support/input.h"
#include "support/script_text.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <filesystem>
#include <memory>
#include <optional>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <utility>

namespace qr::cli {
namespace {

struct LaunchCliOptions {
  std::vector<std::string> args; // RECIPE then overrides
  RecipeOptions recipe;
  std::string format = "slurm", output, config, out_dir;
  bool force = false, allow_waived = false, multirun = false;
  int nodes = 0;
  std::vector<std::string> env_files, exports;
  LaunchOptions launch;
};

// The config's file name when neither --config nor -o gives one: JOB-NAME.yaml here, so the
// job name must be one plain file name.
std::string config_name_from_job(const std::string& job_name) {
  require_one_line(job_name, "--job-name");
  if (job_name.find('/') != std::string::npos || job_name == "." || job_name == "..")
    throw Error("--job-name '" + escaped_for_message(job_name) +
                "' also names the config file (JOB-NAME.yaml in the current directory), so it "
                "may not be a path: give --config FILE or -o FILE, or a job name without '/'");
  return job_name + ".yaml";
}

// Standard output, or a path that is a device or a pipe (/dev/stdout, /dev/full, a FIFO, or a
// link to one): written in place, not renamed, so no config file name can be made from it.
bool is_stream(const std::string& path) {
  struct stat st {};
  return path.empty() || path == "-" ||
         (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode) && !S_ISDIR(st.st_mode));
}

// The file a path's write lands on: the write renames a new file into the path's folder, as the
// kernel reaches that folder (through symbolic links, '..' after them), under the path's last
// name. Two paths write the same file exactly when both match; nullopt: no such folder.
struct WriteTarget {
  dev_t dev;
  ino_t ino;
  std::string name;
  bool operator==(const WriteTarget&) const = default;
};
std::optional<WriteTarget> write_target(const std::filesystem::path& path) {
  const std::filesystem::path folder = path.has_parent_path() ? path.parent_path() : ".";
  struct stat st {};
  if (::stat(folder.c_str(), &st) != 0)
    return std::nullopt;
  return WriteTarget{st.st_dev, st.st_ino, path.filename().string()};
}

bool same_file(const std::string& a, const std::string& b) {
  namespace fs = std::filesystem;
  const auto ta = write_target(a), tb = write_target(b);
  return fs::absolute(a).lexically_normal() == fs::absolute(b).lexically_normal() ||
         (ta && tb && *ta == *tb);
}

// The config file the script will read: a file name (not standard output, a device or a pipe),
// and one whose absolute spelling, which the script holds, reaches the file the write makes
// (it does not where '..' follows a symbolic link).
void check_config_path(const std::string& config) {
  if (is_stream(config))
    throw Error("--config '" + escaped_for_message(config) + "' is " +
                (config == "-" || config.empty() ? std::string("standard output")
                                                 : std::string("a device or a pipe")) +
                ", and the script reads the config from a file: give a file name");
  const auto as_written = write_target(config);
  const auto in_script = write_target(std::filesystem::absolute(config).lexically_normal());
  if (as_written && !(in_script && *in_script == *as_written))
    throw Error("--config '" + escaped_for_message(config) +
                "' reaches another folder than its spelling (a '..' after a symbolic link), and "
                "the script names the config by that spelling: give the path without '..'");
}

// The Slurm-only options are refused with torchrun; the site variables are read once.
void finish_launch_options(LaunchCliOptions& o) {
  if (o.format == "torchrun" && (!o.launch.sbatch_args.empty() || !o.launch.srun_args.empty() ||
                                 !o.launch.reservation.empty() || o.launch.segment != "auto"))
    throw Error("--sbatch-arg, --srun-arg, --reservation and --segment are for Slurm: give them "
                "with --format slurm or json, not torchrun");
  for (const std::string& file : o.env_files) {
    require_one_line(file, "--env-file");
    const auto vars = parse_env_file(read_input_file(file), file);
    o.launch.site_env.insert(o.launch.site_env.end(), vars.begin(), vars.end());
  }
  for (const std::string& e : o.exports)
    o.launch.site_env.push_back(parse_site_variable(e, "--export"));
}

std::string launch_text(const LaunchCliOptions& o, const LaunchPlan& plan,
                        const LaunchOptions& options) {
  return o.format == "slurm"      ? slurm_script(plan, options)
         : o.format == "torchrun" ? torchrun_script(plan)
                                  : launch_json(plan, options);
}

std::string default_job_name(const BuildResult& r) {
  return r.recipe->model->name + "-" + r.recipe->gpu->name + "-" + r.recipe->precision;
}

// launch --multirun: every combination is built, checked (waivers refused as for one launch) and
// planned before any file is written; then each run's config and launch file, and multirun.yaml,
// are written as one.
int run_launch_sweep(LaunchCliOptions o, const BuildRequest& req, const Compiler& compiler) {
  if (o.out_dir.empty())
    throw Error("--multirun needs --out-dir DIR, the directory its configs and launch files go to");
  if (!o.output.empty() || !o.config.empty())
    throw Error(std::string(o.output.empty() ? "--config" : "-o") +
                " names one launch's file; with --multirun every run's files go to --out-dir");
  finish_launch_options(o);
  BuildRequest swept = req;
  swept.checks.single_error = true; // one line, named by the run
  const SweepPlan plan = plan_sweep(swept, o.recipe.shortcuts);
  const std::string ext = o.format == "slurm"      ? ".sbatch"
                          : o.format == "torchrun" ? ".sh"
                                                   : ".json";
  std::vector<OutputFile> files;
  std::vector<std::string> configs, launches;
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < plan.runs.size(); ++i) {
    const std::string& name = plan.runs[i].name;
    const BuildResult r = in_run(
        plan, i, [&](const BuildRequest& rq) { return compiler.run(rq, through(Stage::Emit)); });
    configs.push_back(name + ".yaml");
    launches.push_back(name + ext);
    const std::string config = sweep_path(o.out_dir, configs.back());
    LaunchOptions options = o.launch;
    options.num_gpus = static_cast<int>(r.world_size.value_or(0));
    options.config_path = std::filesystem::absolute(config).lexically_normal().string();
    options.job_name =
        (o.launch.job_name.empty() ? default_job_name(r) : o.launch.job_name) + "-" + name;
    const LaunchPlan launch =
        in_run(plan, i, [&](const BuildRequest&) { return plan_launch(r, options); });
    add_sweep_bytes(bytes, r.yaml, plan, i);
    files.push_back({config, r.yaml});
    files.push_back({sweep_path(o.out_dir, launches.back()), launch_text(o, launch, options)});
  }
  files.push_back({sweep_path(o.out_dir, "multirun.yaml"),
                   to_yaml(sweep_index(plan.sweep, plan.runs, configs, launches))});
  write_sweep(o.out_dir, files, o.force);
  spdlog::info("wrote {} configs and launch files, and multirun.yaml, to {}", configs.size(),
               o.out_dir);
  return 0;
}

int run_launch(LaunchCliOptions o, const GlobalOptions& g) {
  if (o.args.empty())
    throw Error("no recipe given; e.g. qwen-recipe launch qwen35_397b --gpu gb300 --account A "
                "--partition P");
  hold_logs(); // as build: after an error, the one line is all there is
  auto compiler = make_compiler(g);
  const std::string& first = o.args.front();
  // A file, a pipe or a device is read (bounded, as every operand); a folder is no config.
  std::error_code ec;
  const bool from_file = !is_recipe_spec(first) && std::filesystem::exists(first, ec) &&
                         !std::filesystem::is_directory(first, ec);
  if (from_file && (o.args.size() > 1 || !o.config.empty() || !o.recipe.shortcuts.empty() ||
                    !o.recipe.override_files.empty() || o.multirun))
    throw Error(escaped_for_message(first) +
                " is launched as it is: give no overrides, shortcuts, --overrides, "
                "--multirun or --config (edit the file, or launch the recipe with "
                "overrides)");
  BuildRequest req;
  o.recipe.fill(req, !o.multirun);
  split_recipe_words(o.args, req);
  if (from_file) {
    req.config_file = std::exchange(req.recipe, {});
    req.allow_waived = o.allow_waived;
  }
  // --num-gpus / --nodes pick the recipe's variant for that many GPUs where it has one, else
  // rescale as Megatron-Bridge's -ng does: the parallel layout and the
  // global batch stay, data parallelism follows, and every start-up check runs on the new size.
  if (o.launch.num_gpus > 0)
    req.checks.num_gpus = o.launch.num_gpus;
  req.checks.nodes = o.nodes;
  req.checks.gpus_per_node = o.launch.gpus_per_node;
  req.checks.refuse_waived = !o.allow_waived;
  if (o.multirun)
    return run_launch_sweep(std::move(o), req, *compiler);
  if (!o.out_dir.empty())
    throw Error("--out-dir is where --multirun writes its runs; give --multirun, or -o FILE for "
                "one launch");
  const BuildResult r = compiler->run(req, through(Stage::Emit));
  o.launch.num_gpus = static_cast<int>(r.world_size.value_or(0));

  // The config goes next to the launch file (job.sbatch -> job.yaml); with the launch file on
  // standard output, a device or a pipe, it is JOB-NAME.yaml here.
  const bool to_stream = is_stream(o.output);
  if (from_file)
    o.config = first;
  else if (o.config.empty())
    o.config = to_stream ? config_name_from_job(o.launch.job_name.empty() ? default_job_name(r)
                                                                          : o.launch.job_name)
                         : std::filesystem::path(o.output).replace_extension(".yaml").string();
  require_one_line(o.config, "--config");
  check_config_path(o.config);
  if (!o.output.empty() && o.output != "-") {
    require_one_line(o.output, "--output");
    if (same_file(o.config, o.output))
      throw Error("--config and --output are both " + escaped_for_message(o.config) +
                  "; give them different names");
  }
  // The script names the config by its absolute path, so that it finds it wherever it is
  // submitted from (sbatch runs a copy of the script, from the submitting directory).
  o.launch.config_path = std::filesystem::absolute(o.config).lexically_normal().string();
  finish_launch_options(o);
  const LaunchPlan plan = plan_launch(r, o.launch);
  const std::string launch = launch_text(o, plan, o.launch);
  if (from_file)
    write_outputs({{o.output, launch}}, o.force);
  else
    write_outputs({{o.config, r.yaml}, {o.output, launch}}, o.force);
  spdlog::info("wrote the config to {} ({} nodes x {} GPUs)", o.config, plan.nodes,
               plan.gpus_per_node);
  return 0;
}

} // namespace

void register_launch(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<LaunchCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "launch", "write a recipe's config and the Slurm script (or torchrun command) that runs "
                "Megatron-Bridge's performance entry point on it");
  cmd->add_option(
      "args", opts->args,
      "RECIPE (a model, or MODEL@GPU[xN][:PRECISION]) then Hydra overrides, as for build; "
      "or a config FILE.yaml that build wrote (and you edited), launched as it is");
  opts->recipe.add_to(cmd);
  cmd->add_option("--format", opts->format,
                  "slurm (default: an sbatch script), torchrun (a script to run on every node) or "
                  "json (the launch config)")
      ->check(one_of({"slurm", "torchrun", "json"}));
  cmd->add_option("-o,--output", opts->output,
                  "write the launch file here instead of standard output; it and the config are "
                  "written together, or neither");
  cmd->add_option("--config", opts->config,
                  "where to write the config YAML, a file (default: next to --output as "
                  "NAME.yaml; with the launch file on standard output or a device, JOB-NAME.yaml "
                  "here)");
  cmd->add_option("--job-name", opts->launch.job_name,
                  "Slurm job name (default MODEL-GPU-PRECISION)");
  cmd->add_option("-A,--account", opts->launch.account, "Slurm account");
  cmd->add_option("-p,--partition", opts->launch.partition, "Slurm partition");
  cmd->add_option("-t,--time", opts->launch.time_limit, "Slurm time limit (default 00:30:00)");
  cmd->add_option("--container-image", opts->launch.container_image,
                  "container image for srun (pyxis), e.g. nvcr.io/nvidia/nemo:26.04; without it "
                  "the ranks run the nodes' own Python");
  cmd->add_option("--container-mounts", opts->launch.container_mounts,
                  "extra SRC:DST container mounts (repeat, or separate with commas); the config's "
                  "directory is always mounted")
      ->delimiter(',');
  cmd->add_flag("--multirun,-m", opts->multirun,
                "sweep: overrides in Hydra's sweep syntax (a=1,2  a=choice(1,2)  a=range(1,5)) "
                "give one config and one launch file per combination, written to --out-dir with "
                "a multirun.yaml index; every run is built and checked before any is written");
  cmd->add_option("--out-dir", opts->out_dir,
                  "with --multirun: the directory the runs' files go to (created if missing)");
  cmd->add_flag("--force", opts->force,
                "replace the config and launch files if they exist (without it, launch refuses)");
  cmd->add_flag("--allow-waived", opts->allow_waived,
                "launch a recipe whose upstream original fails a start-up check (a waiver), as "
                "upstream has it; without it, launch refuses, naming the check and the fix");
  auto* num_gpus =
      cmd->add_option("--num-gpus", opts->launch.num_gpus,
                      "run on N GPUs: the recipe's variant for N (MODEL@GPUxN) where it has "
                      "one, else the recipe rescaled as Megatron-Bridge's -ng: data parallelism "
                      "follows, the global batch stays, every start-up check runs on N")
          ->check(CLI::PositiveNumber);
  cmd->add_option("--nodes", opts->nodes, "run on N nodes: --num-gpus N x GPUs per node")
      ->check(CLI::PositiveNumber)
      ->excludes(num_gpus);
  cmd->add_option("--gpus-per-node", opts->launch.gpus_per_node,
                  "GPUs per node (default: 4 on gb300, gb200, vr200; 8 on b300, b200, h100)")
      ->check(positive_count());
  cmd->add_option("--sbatch-arg", opts->launch.sbatch_args,
                  "an extra #SBATCH option, one word --NAME=VALUE (or --NAME for a flag; "
                  "repeat), e.g. --sbatch-arg=--qos=high")
      ->allow_extra_args(false);
  cmd->add_option("--srun-arg", opts->launch.srun_args,
                  "an extra srun option, one word --NAME=VALUE (or --NAME for a flag; repeat), "
                  "e.g. --srun-arg=--cpu-bind=none")
      ->allow_extra_args(false);
  cmd->add_option("--reservation", opts->launch.reservation, "Slurm reservation (#SBATCH)");
  cmd->add_option("--segment", opts->launch.segment,
                  "#SBATCH --segment: auto (default: as Megatron-Bridge's Slurm executor on 4-GPU "
                  "nodes, the job up to 18 nodes, else the largest divisor of the nodes up to 18), "
                  "none, or a node count that divides the nodes");
  cmd->add_option("--env-file", opts->env_files,
                  "site variables to export, one KEY=VALUE a line ('#' lines and blank lines "
                  "skipped; repeat), before --export")
      ->allow_extra_args(false);
  cmd->add_option("--export", opts->exports,
                  "a site variable KEY=VALUE to export (repeat; a later one wins); set as given, "
                  "over the job's environment and the recipe's env_vars")
      ->allow_extra_args(false);
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
