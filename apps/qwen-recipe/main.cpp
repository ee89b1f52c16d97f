// qwen-recipe: compile Megatron-Bridge performance recipes for Qwen-VL models into checked YAML.
// One try/catch here turns every error into `error: <message>` on stderr and exit code 2; every
// message is printed through qr::message_line (escaped, one line, bounded).
#include "cli.h"
#include "commands.h"
#include "support/error.h"
#include "support/script_text.h"
#include "support/suggest.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

namespace {

// A command's long option names as typed ("--num-gpus"): the candidates for a "did you mean"
// (every one-letter option is one edit from any other, so those are never suggested).
std::vector<std::string> long_option_names(const CLI::App& cmd) {
  std::vector<std::string> names;
  for (const CLI::Option* opt : cmd.get_options())
    for (const std::string& n : opt->get_lnames())
      names.push_back("--" + n);
  return names;
}

// A parse error of a chosen subcommand, pointing at that subcommand's own help; an option it
// does not have gets the closest one it has (or a global one).
std::string parse_error_text(const CLI::App& app, const CLI::ParseError& e) {
  const std::vector<CLI::App*> chosen = app.get_subcommands();
  const CLI::App* sub = chosen.empty() ? nullptr : chosen.front();
  const std::string help =
      sub == nullptr ? "qwen-recipe --help" : "qwen-recipe " + sub->get_name() + " --help";
  std::vector<std::string> extras = app.remaining();
  if (sub != nullptr) {
    const std::vector<std::string> own = sub->remaining();
    extras.insert(extras.begin(), own.begin(), own.end());
  }
  const auto option = std::find_if(extras.begin(), extras.end(), [](const std::string& t) {
    return t.size() > 1 && t[0] == '-';
  });
  if (dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr && option != extras.end()) {
    const std::string word = option->substr(0, option->find('='));
    std::vector<std::string> names = long_option_names(app);
    if (sub != nullptr) {
      const std::vector<std::string> own = long_option_names(*sub);
      names.insert(names.begin(), own.begin(), own.end());
    }
    return "unknown option '" + word + "'" +
           (sub == nullptr ? std::string() : " for '" + sub->get_name() + "'") +
           (word.starts_with("--") ? qr::did_you_mean(word, names) : std::string()) + " (see '" +
           help + "')";
  }
  return std::string(e.what()) + " (see '" + help + "')";
}

} // namespace

int main(int argc, char** argv) {
  CLI::App app{"qwen-recipe: compile Megatron-Bridge performance recipes for Qwen-VL models into "
               "checked, reproducible YAML",
               "qwen-recipe"};
  app.set_version_flag("--version", QR_VERSION);
  app.require_subcommand(1);
  app.footer(
      "Exit codes: 0 success, 1 differences found (diff, check), 2 error.\n"
      "Examples:\n"
      "  qwen-recipe build qwen35_397b --gpu gb300 > cfg.yaml\n"
      "  qwen-recipe build qwen35_35b --gpu gb200 --precision fp8mx train.micro_batch_size=2\n"
      "  qwen-recipe build qwen35_397b --gpu gb300 --print-pipeline\n"
      "  qwen-recipe list recipes");
  qr::cli::GlobalOptions global;
  int quiet = 0;
  app.add_flag("-v,--verbose", global.verbosity, "more log output on stderr");
  app.add_flag("-q,--quiet", quiet, "only errors on stderr");
  app.add_option("--recipes-dir", global.recipes_dirs,
                 "a folder of your own recipe files, layered over the built-in catalogue "
                 "(docs/user-recipes.md); repeatable, a later one wins")
      ->allow_extra_args(false);

  std::function<int()> action;
  qr::cli::register_build(app, global, action);
  qr::cli::register_list(app, global, action);
  qr::cli::register_diff(app, global, action);
  qr::cli::register_explain(app, global, action);
  qr::cli::register_gdn_bench(app, global, action);
  qr::cli::register_validate(app, global, action);
  qr::cli::register_launch(app, global, action);
  qr::cli::register_completion(app, global, action);
  qr::cli::register_check(app, global, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 asks for a subcommand before it reports the words it did not know: name those.
    const std::vector<std::string> extras = app.remaining();
    if (app.get_subcommands().empty() && !extras.empty()) {
      std::vector<std::string> names;
      for (const CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; }))
        names.push_back(sub->get_name());
      std::string list;
      for (const std::string& n : names)
        list += (list.empty() ? "" : ", ") + n;
      const std::string message = "unknown command or option '" + extras.front() + "'" +
                                  qr::did_you_mean(extras.front(), names) + "; commands: " + list +
                                  " (see 'qwen-recipe --help')";
      std::fprintf(stderr, "error: %s\n", qr::message_line(message).c_str());
      return 2;
    }
    std::fprintf(stderr, "error: %s\n", qr::message_line(parse_error_text(app, e)).c_str());
    return 2;
  }
  if (quiet > 0)
    global.verbosity = -1;
  try {
    qr::cli::setup_logging(global);
    const int rc = action();
    qr::cli::release_logs(false);
    return rc;
  } catch (const qr::Error& e) {
    qr::cli::release_logs(true);
    std::fprintf(stderr, "error: %s\n", qr::message_line(e.what()).c_str());
    return 2;
  } catch (const std::exception& e) {
    qr::cli::release_logs(true);
    std::fprintf(stderr, "error: internal error: %s\n", qr::message_line(e.what()).c_str());
    return 2;
  }
}
