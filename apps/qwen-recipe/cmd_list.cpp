// qwen-recipe list [recipes|gpus|passes|profiles|invariants|precisions|advisories]: what the
// registries hold.
#include "commands.h"
#include "compile/docs.h"
#include "support/error.h"
#include "validate/validate.h"

#include <memory>

namespace qr::cli {
namespace {

struct ListOptions {
  std::string what = "recipes", format = "human";
  bool markdown = false;
};

int run_list(const ListOptions& o, const GlobalOptions& g) {
  auto compiler = make_compiler(g);
  std::string out;
  if (o.format == "json" && o.markdown)
    throw Error("--markdown and --format json are two formats: give one");
  if (o.what == "advisories") {
    out = o.format == "json" ? advisories_json(compiler->advisories())
                             : advisories_text(compiler->advisories());
  } else if (o.format == "json") {
    out = list_json(o.what, compiler->catalog(), compiler->schema());
  } else if (o.what == "recipes") {
    out = o.markdown ? recipes_markdown(compiler->catalog()) : recipes_table(compiler->catalog());
  } else if (o.what == "passes") {
    out = o.markdown ? passes_markdown() : passes_table();
  } else if (o.what == "invariants") {
    out = invariants_table();
  } else if (o.what == "gpus") {
    for (const GpuInfo& gpu : compiler->catalog().gpus())
      out +=
          gpu.name + "\t" + std::to_string(gpu.gpus_per_node) + " GPUs/node\t" + gpu.title + "\n";
  } else if (o.what == "profiles") {
    for (const ProfileSpec& p : compiler->schema().profiles())
      out += p.name + (p.name == compiler->schema().default_profile() ? " (default)" : "") + "\t" +
             p.summary + "\n";
  } else if (o.what == "precisions") {
    for (const std::string& p : compiler->catalog().precisions())
      out += p + "\n";
  }
  write_output("", out);
  return 0;
}

} // namespace

void register_list(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<ListOptions>();
  CLI::App* cmd =
      app.add_subcommand("list", "list recipes, gpus, passes, profiles, invariants, precisions or "
                                 "upstream advisories");
  cmd->add_option("what", opts->what, "what to list (default: recipes)")
      ->check(one_of(
          {"recipes", "gpus", "passes", "profiles", "invariants", "precisions", "advisories"}));
  cmd->add_option("--format", opts->format,
                  "human (default: a table) or json ({\"WHAT\": [...]}, see docs/recipes.md)")
      ->check(one_of({"human", "json"}));
  cmd->add_flag("--markdown", opts->markdown, "Markdown, as in docs/ (recipes and passes)");
  cmd->fallthrough(); // -v, -q and --recipes-dir also after the subcommand
  cmd->callback(
      [opts, &global, &action] { action = [opts, &global] { return run_list(*opts, global); }; });
}

} // namespace qr::cli
