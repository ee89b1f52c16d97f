// The launch that goes with a built config: nodes and ranks, the recipe's environment, and the
// command that runs Megatron-Bridge's performance entry point (scripts/performance/run_script.py)
// on that config, as a Slurm batch script, a torchrun command or JSON. What the entry point is
// and every assumption made about it: docs/launch.md.
#pragma once

#include "compile/compile.h"
#include "validate/validate.h"

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
};

struct LaunchPlan {
  std::string recipe; // "qwen35_397b@gb300:bf16"
  int num_gpus = 0, gpus_per_node = 0, nodes = 0;
  std::string job_name, config_path, megatron_bridge, command; // command: qwen-recipe build ...
  Map env;                                                     // the recipe's env_vars
  std::vector<std::string> entry_args; // run_script.py's recipe selection flags
};

// Throws qr::Error when the build has no recipe or its GPUs do not fill whole nodes. Every
// user-given text reaches the scripts as a shell word (shell_word) and, where it lands in a
// comment, an #SBATCH line or a file name, only as one printable line (require_one_line):
// config/script_text.h. The script functions throw qr::Error for what cannot be written so.
LaunchPlan plan_launch(const BuildResult& result, const LaunchOptions& options);

// What the recipe's waivers let through that would stop the job once it starts: for each waived
// invariant or start-up check that fails on the built config, "'NAME' fails (waived by the
// recipe: REASON): PROBLEM". `checks` are the options the build was validated with.
std::vector<std::string> waived_failures(const BuildResult& result, const ValidateOptions& checks);

std::string slurm_script(const LaunchPlan& plan, const LaunchOptions& options);
std::string torchrun_script(const LaunchPlan& plan);
std::string launch_json(const LaunchPlan& plan, const LaunchOptions& options);

} // namespace qr
