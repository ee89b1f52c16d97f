// qwen-recipe explain RECIPE --gpu G [FIELD...] [OVERRIDES...]: for each field, the final value,
// the base value, and every pass or override that changed it, in order.
#include "commands.h"
#include "diff/diff.h"
#include "explain/explain.h"
#include "support/error.h"

#include <memory>

namespace qr::cli {
namespace {

struct ExplainOptions {
  std::vector<std::string> args; // RECIPE, then fields and overrides in any order
  RecipeOptions recipe;
  std::string format = "human";
};

std::string shown(const std::optional<Value>& v) {
  return v ? show(*v) : "(absent)";
}

int run_explain(const ExplainOptions& o, const GlobalOptions& g) {
  hold_logs(); // as build: after an error, the one line is all there is
  if (o.args.empty())
    throw Error("no recipe given; e.g. qwen-recipe explain qwen35_397b --gpu gb300 "
                "model.cuda_graph_impl");
  auto compiler = make_compiler(g);
  BuildRequest req;
  o.recipe.fill(req);
  std::vector<std::string> fields;
  split_recipe_words(o.args, req, false, &fields);
  const BuildResult r = compiler->run(req, through(Stage::Invariants));
  const std::vector<FieldHistory> histories = explain_fields(*compiler, r, fields);
  if (o.format == "json") {
    write_output("", explain_json(r, histories));
    return 0;
  }
  const std::size_t n = histories.size();
  std::string out = r.recipe->id() + " (Megatron-Core profile " + r.config.profile() +
                    "): " + std::to_string(n) + (n == 1 ? " field" : " fields") +
                    (fields.empty() ? " differ from the model's base config" : "") + "\n";
  for (const FieldHistory& h : histories) {
    out += "\n" + h.path + ": " + shown(h.final) + "\n";
    out +=
        "  base: " + (h.base ? show(*h.base) + " (" + h.base_origin + ")" : h.base_origin) + "\n";
    if (h.steps.empty())
      out += "  no pass or override changed it\n";
    for (const FieldStep& s : h.steps)
      out += "  " + s.who + (s.via.empty() ? "" : ", replacing " + s.via) + ": " +
             (s.before == s.after ? shown(s.after) + " (unchanged)"
                                  : shown(s.before) + " -> " + shown(s.after)) +
             "\n";
  }
  write_output("", out);
  return 0;
}

} // namespace

void register_explain(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<ExplainOptions>();
  CLI::App* cmd = app.add_subcommand(
      "explain", "show where a recipe's values come from: base value, then each pass or override "
                 "that changed them");
  cmd->add_option("args", opts->args,
                  "RECIPE (a model, or MODEL@GPU[xN][:PRECISION]), then FIELDs (dotted paths; a "
                  "section names the fields under it that changed) and Hydra overrides; with no "
                  "FIELD, every field that differs from the model's base config");
  opts->recipe.add_to(cmd);
  cmd->add_option("--format", opts->format,
                  "human (default) or json (one object; schema in docs/explain.md)")
      ->check(one_of({"human", "json"}));
  cmd->footer("Examples:\n"
              "  qwen-recipe explain qwen35_397b --gpu gb300 model.cuda_graph_impl\n"
              "  qwen-recipe explain qwen35_35b@gb300:fp8mx --mcore gdn model\n"
              "  qwen-recipe explain qwen3_30b --gpu h100 train train.micro_batch_size=2");
  cmd->fallthrough();
  cmd->callback([opts, &global, &action] {
    action = [opts, &global] { return run_explain(*opts, global); };
  });
}

} // namespace qr::cli
