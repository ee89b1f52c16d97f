// qwen-recipe check MANIFEST: build every entry of a golden-file manifest and compare it with its
// golden byte for byte. Exit 0 all match, 1 any mismatch, 2 any error (nothing written then).
#include "check/check.h"
#include "commands.h"
#include "support/error.h"
#include "support/script_text.h"

#include <cstdio>
#include <filesystem>
#include <memory>
#include <spdlog/spdlog.h>

namespace qr::cli {
namespace {

struct CheckOptions {
  std::string manifest, format = "human", junit;
  bool update = false;
  unsigned jobs = 0;
};

int run_check(const CheckOptions& o, const GlobalOptions& g) {
  const Manifest manifest = read_manifest(o.manifest);
  // The builds' own log lines (the same warnings for many entries, in the threads' order) are not
  // the report; -v shows them.
  if (g.verbosity <= 0)
    spdlog::set_level(spdlog::level::err);
  const std::vector<GoldenResult> results =
      check_goldens(manifest, recipe_sources(g.recipes_dirs), o.jobs);
  const GoldenResult* last_error = nullptr;
  for (const GoldenResult& r : results)
    if (r.status == GoldenResult::Status::Error) {
      if (last_error != nullptr)
        std::fprintf(stderr, "error: %s\n", message_line(last_error->error).c_str());
      last_error = &r;
    }
  if (last_error != nullptr)
    throw Error(last_error->error);
  bool differ = false;
  for (std::size_t i = 0; i < results.size(); ++i) {
    if (results[i].status == GoldenResult::Status::Missing && !o.update)
      throw Error(manifest.entries[i].where + ": " + manifest.entries[i].golden +
                  ": no such golden file (check --update creates it)");
    differ = differ || results[i].status != GoldenResult::Status::Match;
  }
  // Every golden's directory is there before the first is rewritten, so --update rewrites all
  // or (bar a full disk) none.
  if (o.update)
    for (std::size_t i = 0; i < results.size(); ++i) {
      const std::filesystem::path dir =
          std::filesystem::path(manifest.entries[i].golden_path).parent_path();
      std::error_code ec;
      if (results[i].status != GoldenResult::Status::Match && !dir.empty() &&
          !std::filesystem::is_directory(dir, ec))
        throw Error(manifest.entries[i].where + ": " + manifest.entries[i].golden + ": " +
                    dir.string() + " is not a directory");
    }
  // The JUnit file first, so that a bad --junit path fails before any golden is rewritten.
  if (!o.junit.empty())
    write_output(o.junit, junit_report(manifest, results, o.update));
  if (o.update)
    for (std::size_t i = 0; i < results.size(); ++i)
      if (results[i].status != GoldenResult::Status::Match)
        write_output(manifest.entries[i].golden_path, results[i].actual);
  write_output("", o.format == "json" ? json_report(manifest, results, o.update)
                                      : human_report(manifest, results, o.update));
  return differ && !o.update ? 1 : 0;
}

} // namespace

void register_check(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<CheckOptions>();
  CLI::App* cmd = app.add_subcommand(
      "check", "build every entry of a golden-file manifest and compare it with its golden, byte "
               "for byte (exit 0 all match, 1 any mismatch, 2 error)");
  cmd->add_option("manifest", opts->manifest,
                  "the manifest: YAML with a 'goldens' list (see docs/check.md)")
      ->required();
  cmd->add_flag("--update", opts->update,
                "rewrite the goldens that differ (and create missing ones), atomically, and "
                "report what changed");
  cmd->add_option("--format", opts->format, "human (default) or json")
      ->check(one_of({"human", "json"}));
  cmd->add_option("--junit", opts->junit,
                  "also write a JUnit XML report here (one testcase per entry)");
  cmd->add_option("-j,--jobs", opts->jobs, "entries built at once (default: one per CPU thread)")
      ->check(positive_count());
  cmd->footer("Examples:\n"
              "  qwen-recipe check goldens.yaml\n"
              "  qwen-recipe check goldens.yaml --junit check.xml\n"
              "  qwen-recipe check goldens.yaml --update");
  cmd->fallthrough();
  cmd->callback(
      [opts, &global, &action] { action = [opts, &global] { return run_check(*opts, global); }; });
}

} // namespace qr::cli
