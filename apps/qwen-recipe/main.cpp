// qwen-recipe: compile Megatron-Bridge performance recipes for Qwen-VL models into checked YAML.
// One try/catch here turns every error into `error: <message>` on stderr and exit code 2.
#include "cli.h"
#include "commands.h"
#include "config/error.h"
#include "config/suggest.h"

#include <CLI/CLI.hpp>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

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
  app.add_option("--recipes-dir", global.recipes_dir,
                 "read recipe data from this recipes/ tree instead of the built-in copy");

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
      std::fprintf(
          stderr,
          "error: unknown command or option '%s'%s; commands: %s (see 'qwen-recipe --help')\n",
          extras.front().c_str(), qr::did_you_mean(extras.front(), names).c_str(), list.c_str());
      return 2;
    }
    std::fprintf(stderr, "error: %s (see 'qwen-recipe --help')\n", e.what());
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
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    qr::cli::release_logs(true);
    std::fprintf(stderr, "error: internal error: %s\n", e.what());
    return 2;
  }
}
