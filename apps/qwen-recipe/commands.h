// Subcommand registration: each adds its options to the app and, when chosen, sets `action`.
#pragma once

#include "cli.h"
#include "overrides/shortcuts.h"
#include "support/suggest.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <functional>
#include <string>
#include <vector>

namespace qr::cli {

// The recipe a subcommand builds: --gpu, --precision and --mcore, the overrides files and the
// launcher shortcuts (--tp ...), shared by build, explain and launch.
struct RecipeOptions {
  std::string gpu, precision, profile; // empty precision: the spec's, else bf16
  std::vector<std::string> override_files;
  std::vector<std::pair<std::string, std::string>> shortcuts; // name, text, as given

  void add_to(CLI::App* cmd) {
    cmd->add_option("--gpu", gpu, "gb300, gb200, b300, b200, h100 or vr200");
    cmd->add_option("--precision", precision,
                    "bf16 (default), fp8cs or fp8mx; with a MODEL@GPU[:PRECISION] spec it must "
                    "agree with the spec");
    cmd->add_option("--mcore", profile,
                    "Megatron-Core profile: pinned (default; Megatron-Bridge main's pin) or gdn "
                    "(has model.gdn_kernel_backend)");
    cmd->add_option("--overrides", override_files,
                    "Hydra overrides from a YAML file: a list of overrides, or a mapping of the "
                    "fields to set (train: {global_batch_size: 256}); repeatable, applied in "
                    "order before the command line's")
        ->allow_extra_args(false);
    // As Megatron-Bridge's run_script.py -tp ... -gb: a step before the overrides.
    for (const ShortcutInfo& info : shortcut_table()) {
      const std::string name = info.name;
      cmd->add_option_function<std::string>(
             "--" + name,
             [this, name](const std::string& text) { shortcuts.emplace_back(name, text); },
             std::string(info.help) + " (sets " + info.field + "; a step before the overrides)")
          ->type_name(info.nullable ? "N|None" : "N");
    }
  }
  // `with_shortcuts` false: a sweep reads their texts itself (--multirun --tp 1,2).
  void fill(BuildRequest& req, bool with_shortcuts = true) const {
    req.gpu = gpu;
    req.precision = precision;
    req.profile = profile;
    req.override_files = override_files;
    if (with_shortcuts)
      for (const auto& [name, text] : shortcuts)
        req.shortcuts.push_back(parse_shortcut(name, text));
  }
};

// A count such as --num-gpus: a whole number from 1 up. The message says what is wrong with the
// value, where CLI::PositiveNumber prints the range of a double.
inline CLI::Validator positive_count() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        const bool digits =
            !text.empty() && text.find_first_not_of("0123456789") == std::string::npos;
        if (!digits)
          return "expected a whole number from 1 up, got '" + text + "'";
        if (text.find_first_not_of('0') == std::string::npos)
          return "must be at least 1, got " + text;
        if (text[0] == '0')
          return "write " + text + " without leading zeros";
        if (text.size() > 9)
          return "must be at most 999999999, got " + text;
        return {};
      },
      "N>=1");
}

// A value from a fixed list (--format, diff -o, list WHAT): an unknown one gets the closest and
// the list, where CLI::IsMember prints only the set.
inline CLI::Validator one_of(std::vector<std::string> choices) {
  std::string list;
  for (const std::string& c : choices)
    list += (list.empty() ? "" : ", ") + c;
  return CLI::Validator(
      [choices, list](const std::string& value) -> std::string {
        if (std::find(choices.begin(), choices.end(), value) != choices.end())
          return {};
        return "unknown value '" + value + "'" + did_you_mean(value, choices) + "; one of " + list;
      },
      list);
}

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
