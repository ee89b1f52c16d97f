// Subcommand registration: each adds its options to the app and, when chosen, sets `action`.
#pragma once

#include "cli.h"

#include <CLI/CLI.hpp>
#include <functional>

namespace qr::cli {

// The recipe a subcommand builds: --gpu, --precision and --mcore, shared by build, explain and
// launch.
struct RecipeOptions {
  std::string gpu, precision = "bf16", profile;

  void add_to(CLI::App* cmd) {
    cmd->add_option("--gpu", gpu, "gb300, gb200, b300, b200, h100 or vr200");
    cmd->add_option("--precision", precision, "bf16 (default), fp8cs or fp8mx");
    cmd->add_option("--mcore", profile,
                    "Megatron-Core profile: pinned (default; Megatron-Bridge main's pin) or gdn "
                    "(has model.gdn_kernel_backend)");
  }
  void fill(BuildRequest& req) const {
    req.gpu = gpu;
    req.precision = precision;
    req.profile = profile;
  }
};

void register_check(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_completion(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_diff(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_build(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_explain(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_gdn_bench(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_launch(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_list(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_validate(CLI::App& app, GlobalOptions& global, std::function<int()>& action);

} // namespace qr::cli
