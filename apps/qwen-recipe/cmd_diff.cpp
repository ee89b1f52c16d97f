// qwen-recipe diff A B: a semantic diff of two configs (files, '-' or recipe specs), in dyff's
// layout or as brief, unified, dotlist or JSON output. Exit 0 same, 1 different, 2 error.
#include "commands.h"
#include "compile/operands.h"
#include "diff/diff.h"
#include "diff/human.h"
#include "explain/explain.h"
#include "support/error.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <memory>
#include <optional>
#include <tuple>

namespace qr::cli {
namespace {

struct DiffOptions {
  std::string a, b, format = "human", profile;
  std::string profile_a, profile_b; // --mcore-a, --mcore-b: one side's profile, over --mcore
  bool explain = false;
};

struct Operand {
  std::string label;
  Value root;
  std::optional<BuildResult> build; // recipe specs only
};

// Both sides are compared as PyYAML reads them (what Megatron-Bridge's from_yaml sees), so a
// recipe goes through its own YAML text.
Operand load(const Compiler& compiler, const std::string& arg, const std::string& profile) {
  Operand op;
  std::string text;
  if (is_recipe_spec(arg)) {
    BuildRequest req;
    req.recipe = arg;
    req.profile = profile;
    req.header = false;
    op.build.emplace(compiler.run(req, through(Stage::Invariants) | Stage::Emit));
    op.label = op.build->recipe->id();
    text = op.build->yaml;
  } else {
    op.label = operand_label(arg);
    text = read_operand_text(arg);
  }
  auto doc = parse_yaml(text, op.label);
  op.root = doc->root == nullptr ? Value() : to_untyped_value(*doc, *doc->root);
  return op;
}

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

std::string explain_line(const Difference& d, const Operand& a, const Operand& b) {
  std::string out;
  for (const auto& [tag, op] : {std::pair{"A", &a}, std::pair{"B", &b}}) {
    if (!op->build)
      continue;
    const std::string who = last_writer(*op->build, d.path());
    out += std::string(out.empty() ? "" : "; ") + tag + ": " + (who.empty() ? "base config" : who);
  }
  return out;
}

std::string brief(const std::vector<Difference>& diffs, const Operand& a, const Operand& b) {
  std::string lines;
  std::size_t n = 0;
  for (const Difference& d : diffs)
    for (const Detail& det : d.details) {
      if (det.kind == Detail::Kind::EntriesAdded || det.kind == Detail::Kind::EntriesRemoved) {
        for (const Map::Entry* e : det.entries.sorted()) {
          lines += (det.kind == Detail::Kind::EntriesAdded ? "+ " : "- ") +
                   (d.keys.empty() ? e->first.text : d.path() + "." + e->first.text) + "\n";
          ++n;
        }
      } else if (&det == &d.details.front()) {
        lines += "± " + d.path() + "\n";
        ++n;
      }
    }
  return "between " + a.label + " and " + b.label + ": " +
         (n == 0 ? "no differences" : count_of(n, "difference", "differences")) + "\n" + lines;
}

std::string json(const std::vector<Difference>& diffs, const Operand& a, const Operand& b,
                 bool explain) {
  std::string out = "{\"a\": " + json_string(a.label) + ", \"b\": " + json_string(b.label) +
                    ", \"differences\": [";
  bool first = true;
  for (const Difference& d : diffs)
    for (const Detail& det : d.details) {
      out += first ? "\n  " : ",\n  ";
      first = false;
      out += "{\"path\": " + json_string(d.path()) + ", \"section\": " + json_string(d.section()) +
             ", \"change\": \"" + change_name(det.kind) + "\"";
      if (det.kind == Detail::Kind::EntriesAdded || det.kind == Detail::Kind::EntriesRemoved)
        out += ", \"entries\": " + to_json(Value(det.entries));
      else if (det.kind == Detail::Kind::ItemsAdded || det.kind == Detail::Kind::ItemsRemoved)
        out += ", \"items\": " + to_json(Value(det.items));
      else if (det.kind == Detail::Kind::ClassChange)
        out += ", \"from\": " + json_string(std::string(det.from.target())) +
               ", \"to\": " + json_string(std::string(det.to.target()));
      else
        out += ", \"from\": " + to_json(det.from) + ", \"to\": " + to_json(det.to);
      if (explain) {
        out += ", \"set_by\": {";
        bool first_side = true;
        for (const auto& [tag, op] : {std::pair{"a", &a}, std::pair{"b", &b}})
          if (op->build) {
            const std::string who = last_writer(*op->build, d.path());
            out += std::string(first_side ? "" : ", ") + "\"" + tag +
                   "\": " + json_string(who.empty() ? "base config" : who);
            first_side = false;
          }
        out += "}";
      }
      out += "}";
    }
  return out + (first ? "]}\n" : "\n]}\n");
}

int run_diff(const DiffOptions& o, const GlobalOptions& g) {
  hold_logs(); // as build: after an error, the one line is all there is
  if (o.a == "-" && o.b == "-")
    throw Error("only one operand can be '-' (standard input)");
  auto compiler = make_compiler(g);
  for (const auto& [given, operand, flag] :
       {std::tuple{&o.profile_a, &o.a, "--mcore-a"}, {&o.profile_b, &o.b, "--mcore-b"}})
    if (!given->empty() && !is_recipe_spec(*operand))
      throw Error(std::string(flag) + " names the profile a recipe spec is built with; '" +
                  *operand + "' is a YAML file, whose profile is what it holds");
  const std::string& default_profile = compiler->schema().default_profile();
  const std::string& side_a = o.profile_a.empty() ? o.profile : o.profile_a;
  const std::string& side_b = o.profile_b.empty() ? o.profile : o.profile_b;
  const std::string profile_a = side_a.empty() ? default_profile : side_a;
  const std::string profile_b = side_b.empty() ? default_profile : side_b;
  Operand a = load(*compiler, o.a, side_a);
  Operand b = load(*compiler, o.b, side_b);
  // Across profiles, the labels say which side is which even for one recipe.
  if (profile_a != profile_b) {
    if (a.build)
      a.label += " (--mcore " + profile_a + ")";
    if (b.build)
      b.label += " (--mcore " + profile_b + ")";
  }
  if (o.explain && !a.build && !b.build)
    throw Error("diff --explain needs a recipe spec operand (such as qwen35_35b@gb300:fp8mx); "
                "YAML files have no build history");
  const std::vector<Difference> diffs = diff_values(a.root, b.root);
  std::string out;
  if (o.format == "human") {
    out = human_diff(diffs, a.label, b.label,
                     o.explain ? std::function<std::string(const Difference&)>(
                                     [&](const Difference& d) { return explain_line(d, a, b); })
                               : nullptr);
  } else if (o.format == "brief") {
    out = brief(diffs, a, b);
  } else if (o.format == "unified") {
    out = unified_diff(to_yaml(a.root), to_yaml(b.root), a.label, b.label);
  } else if (o.format == "dotlist") {
    if (a.build && b.build && profile_a != profile_b)
      throw Error("-o dotlist: overrides cannot change the Megatron-Core profile (A is built with "
                  "--mcore " +
                  profile_a + ", B with --mcore " + profile_b +
                  "); give one profile, or another -o");
    // The overrides are typed by the recipe side's profile (B's when both are recipes).
    const std::string& profile = b.build ? profile_b : profile_a;
    for (const std::string& token : dotlist(diffs, section_defaults(compiler->schema(), profile)))
      out += token + "\n";
  } else {
    out = json(diffs, a, b, o.explain);
  }
  write_output("", out);
  return diffs.empty() ? 0 : 1;
}

} // namespace

void register_diff(CLI::App& app, GlobalOptions& global, std::function<int()>& action) {
  auto opts = std::make_shared<DiffOptions>();
  CLI::App* cmd = app.add_subcommand("diff", "semantic diff of two configs: files, '-' or recipe "
                                             "specs (exit 0 same, 1 different, 2 error)");
  cmd->add_option("a", opts->a,
                  "the old config: a YAML file, '-' for standard input, or a recipe "
                  "spec MODEL@GPU[xN][:PRECISION]")
      ->required();
  cmd->add_option("b", opts->b, "the new config, in the same forms")->required();
  cmd->add_option("-o,--output", opts->format,
                  "human (default: dyff's layout, grouped by section), brief (one path a line), "
                  "unified (diff -u of the canonical YAML), dotlist (the Hydra overrides that turn "
                  "A into B) or json")
      ->check(one_of({"human", "brief", "unified", "dotlist", "json"}));
  cmd->add_flag("--explain", opts->explain,
                "name the pass or override that set each changed path (recipe specs)");
  cmd->add_option("--mcore", opts->profile,
                  "Megatron-Core profile for recipe specs: pinned (default) or gdn");
  cmd->add_option("--mcore-a", opts->profile_a,
                  "Megatron-Core profile for A alone (over --mcore), to see what a Megatron-Core "
                  "upgrade changes: diff R R --mcore-a pinned --mcore-b gdn");
  cmd->add_option("--mcore-b", opts->profile_b, "Megatron-Core profile for B alone (over --mcore)");
  cmd->footer("Examples:\n"
              "  qwen-recipe diff qwen35_35b@gb300:bf16 qwen35_35b@gb300:fp8mx --explain\n"
              "  qwen-recipe diff old.yaml new.yaml -o unified\n"
              "  qwen-recipe diff qwen35_397b@gb300 qwen35_397b@vr200 -o dotlist\n"
              "  qwen-recipe diff qwen35_35b@gb300 qwen35_35b@gb300 --mcore-b gdn\n"
              "  qwen-recipe build qwen3_30b --gpu b200 | qwen-recipe diff - qwen3_30b@b200");
  cmd->fallthrough();
  cmd->callback(
      [opts, &global, &action] { action = [opts, &global] { return run_diff(*opts, global); }; });
}

} // namespace qr::cli
