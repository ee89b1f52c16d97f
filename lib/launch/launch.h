// The launch that goes with a built config: nodes and ranks, the recipe's environment, and the
// command that runs Megatron-Bridge's performance entry point (scripts/performance/run_script.py)
// on that config, as a Slurm batch script, a torchrun command or JSON. What the entry point is
// and every assumption made about it: docs/launch.md.
#pragma once

#include "build/build.h"

#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct LaunchOptions {
  int num_gpus = 0;        // 0: the recipe's; else the world size the run is rescaled to
  int gpus_per_node = 0;   // 0: the GPU's (4 on NVL72 systems, 8 on HGX)
  std::string config_path; // where the YAML is (as written in the script)
  std::string job_name;    // default: MODEL-GPU-PRECISION
  std::string account, partition, time_limit = "00:30:00";
  std::string container_image; // empty: run on the host's Python
  std::vector<std::string> container_mounts;
  std::string megatron_bridge = "/opt/Megatron-Bridge"; // inside the container
  // Cluster specifics (docs/launch.md): extra #SBATCH options and srun options (each one word,
  // --NAME=VALUE or a valueless --NAME, judged as Slurm reads it: launch/slurm_options.h), the
  // reservation, and the segment size: "auto" (Megatron-Bridge's rule on 4-GPU nodes), "none",
  // or a node count.
  std::vector<std::string> sbatch_args, srun_args;
  std::string reservation, segment = "auto";
  // Site variables (--env-file, then --export, in order; a later one wins), exported as given.
  std::vector<std::pair<std::string, std::string>> site_env;
};

struct LaunchPlan {
  std::string recipe; // "qwen35_397b@gb300:bf16"
  int num_gpus = 0, gpus_per_node = 0, nodes = 0;
  std::string job_name, config_path, megatron_bridge, command; // command: qwen-recipe build ...
  Map env;                                                     // the recipe's env_vars
  std::vector<std::string> entry_args; // run_script.py's recipe selection flags
  int segment = 0;                     // #SBATCH --segment; 0: none
  std::vector<std::pair<std::string, std::string>> site_env; // one entry per name, in order
};

// One `KEY=VALUE` site variable (`what` names it in errors: "--export", "FILE:LINE"). The name is
// a shell variable name, not one the scripts set nor one bash, the loader or Slurm interprets
// (PS4, BASH_ENV, SLURM_*...); the value is taken literally, as sbatch --export and docker
// --env-file take it, and must be one printable line.
std::pair<std::string, std::string> parse_site_variable(const std::string& text,
                                                        const std::string& what);
// An env file's variables: one KEY=VALUE a line; blank lines and lines starting with '#' are
// skipped. Errors name `path` and the line.
std::vector<std::pair<std::string, std::string>> parse_env_file(const std::string& text,
                                                                const std::string& path);

// Throws qr::Error when the build has no recipe or its GPUs do not fill whole nodes. Every
// user-given text reaches the scripts as a shell word (shell_word) and, where it lands in a
// comment, an #SBATCH line or a file name, only as one printable line (require_one_line):
// config/script_text.h. The script functions throw qr::Error for what cannot be written so.
LaunchPlan plan_launch(const BuildResult& result, const LaunchOptions& options);

std::string slurm_script(const LaunchPlan& plan, const LaunchOptions& options);
std::string torchrun_script(const LaunchPlan& plan);
std::string launch_json(const LaunchPlan& plan, const LaunchOptions& options);

} // namespace qr
