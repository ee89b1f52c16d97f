// Subcommand registration: each adds its options to the app and, when chosen, sets `action`.
#pragma once

#include "cli.h"

#include <CLI/CLI.hpp>
#include <functional>

namespace qr::cli {

void register_completion(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_diff(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_build(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_explain(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_gdn_bench(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_launch(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_list(CLI::App& app, GlobalOptions& global, std::function<int()>& action);
void register_validate(CLI::App& app, GlobalOptions& global, std::function<int()>& action);

} // namespace qr::cli
