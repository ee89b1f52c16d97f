// qwen-recipe validate: every invariant and start-up check a build runs (CUDA graphs, parallelism
// arithmetic, cuDNN GDN packages) on a config file, standard input or a recipe spec. The report
// (text or JSON) goes to stdout; exit 2 on errors.
#include "commands.h"
#include "compile/operands.h"
#include "support/error.h"

#include <cstdint>
#include <memory>
#include <optional>

namespace qr::cli {
namespace {

struct ValidateCliOptions {
  std::string config, env, profile, format = "text";
  std::optional<std::int64_t> num_gpus;
  bool strict = false;
};

int run_validate(const ValidateCliOptions& o, const GlobalOptions& g) {
  hold_logs(); // as build: after an error, the one line is all there is
  auto compiler = make_compiler(g);
  ValidationReport report;
  std::string world_from;
  const std::string label = operand_label(o.config);
  if (is_recipe_spec(o.config)) {
    BuildRequest req;
    req.recipe = o.config;
    req.profile = o.profile;
    req.checks = {.num_gpus = o.num_gpus,
                  .env_file = o.env,
                  .strict = o.strict,
                  .report_invariants = true, // with the recipe's waivers, as every other check
                  .enforce = false};
    report = compiler->run(req, through(Stage::StartupChecks)).report;
  } else {
    const std::string text = read_operand_text(o.config);
    const Config config = load_config_text(compiler->schema(), text, label, o.profile);
    ValidateOptions options;
    options.world_size = o.num_gpus;
    // As `launch FILE`: without --num-gpus, the world size the header's recipe runs on.
    if (!o.num_gpus)
      if (const auto world = compiler->header_world(text, label)) {
        options.world_size = world->num_gpus;
        world_from = "world size " + std::to_string(world->num_gpus) + " from the header (" +
                     (world->from_option ? "its --num-gpus" : world->recipe + "'s GPU count") +
                     "); give --num-gpus N for another";
      }
    if (!o.env.empty())
      options.env = read_package_env(o.env);
    options.strict = o.strict;
    options.advisories = compiler->advisories();
    report = validate_config(config, options);
  }
  if (!world_from.empty())
    report.world_source = world_from;
  write_output("", o.format == "json" ? report_json(report, label) : report_text(report, label));
  return report.count(Finding::Level::Error) > 0 ? 2 : 0;
}

} // namespace

void register_validate(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<ValidateCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "validate", "check a config's parallelism arithmetic and GDN packages before a job starts");
  cmd->add_option("config", opts->config,
                  "a YAML config file, '-' for standard input, or a recipe spec "
                  "MODEL@GPU[xN][:PRECISION] (built, with the recipe's GPU count and waivers)")
      ->required();
  cmd->add_option("--num-gpus", opts->num_gpus,
                  "world size; without it, the checks that need it are skipped (a recipe spec "
                  "has its own)")
      ->check(positive_count());
  cmd->add_option("--env", opts->env,
                  "the training environment: `pip freeze` output or a YAML of package: version; "
                  "without it, the cuDNN GDN package checks are skipped");
  cmd->add_flag("--strict", opts->strict, "warnings are errors (exit 2)");
  cmd->add_option("--format", opts->format,
                  "text (default) or json (one object; its keys are in docs/validate.md)")
      ->check(one_of({"text", "json"}));
  cmd->add_option("--mcore", opts->profile,
                  "Megatron-Core profile to read the file with (default: the first that fits)");
  cmd->footer("Exit codes: 0 no errors (warnings allowed unless --strict), 2 errors.\n"
              "Examples:\n"
              "  qwen-recipe validate cfg.yaml --num-gpus 64\n"
              "  pip freeze > env.txt; qwen-recipe validate cfg.yaml --num-gpus 8 --env env.txt\n"
              "  qwen-recipe validate qwen35_397b@b200 --strict --format json");
  cmd->fallthrough();
  cmd->callback([opts, &global, &action] {
    action = [opts, &global] { return run_validate(*opts, global); };
  });
}

} // namespace qr::cli
