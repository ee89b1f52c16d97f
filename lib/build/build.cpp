#include "build/build.h"

#include "overrides/overrides_file.h"
#include "passes/invariants.h"
#include "support/error.h"
#include "support/input.h"
#include "support/script_text.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <algorithm>
#include <spdlog/spdlog.h>

namespace qr {
namespace {

// One token of the header's command: it goes into a comment line, so it must be one line; then
// it is written as a shell word.
std::string command_word(std::string_view token, std::string_view what,
                         std::string_view hint = {}) {
  require_one_line(token, what, hint);
  return shell_word(token, what);
}

// A recipe spec and the --gpu / --precision flags name one recipe: a flag that says otherwise is
// refused, never silently dropped. A spec without ":PRECISION" means bf16.
void check_spec_agrees(const BuildRequest& req, const RecipeRef& ref) {
  if (!req.gpu.empty() && req.gpu != ref.gpu)
    throw Error("recipe spec '" + req.recipe + "' names GPU " + ref.gpu + " but --gpu is " +
                req.gpu);
  if (ref.num_gpus > 0 && req.checks.num_gpus && *req.checks.num_gpus != ref.num_gpus)
    throw Error("recipe spec '" + req.recipe + "' names " + std::to_string(ref.num_gpus) +
                " GPUs but --num-gpus is " + std::to_string(*req.checks.num_gpus) +
                "; give one of the two");
  if (!req.precision.empty() && req.precision != ref.precision) {
    const bool named = req.recipe.find(':') != std::string::npos;
    throw Error("recipe spec '" + req.recipe + "' " +
                (named ? "names precision " + ref.precision
                       : "has no :PRECISION, so it means " + ref.precision + ",") +
                " but --precision is " + req.precision + "; write " + ref.model + "@" + ref.gpu +
                ":" + req.precision + " or drop --precision");
  }
}

// The value after `option` in a config's header command (# qwen-recipe build MODEL --gpu G ...),
// or empty.
std::string header_option(const std::string& header, const std::string& option) {
  const std::size_t at = header.find(" " + option + " ");
  if (at == std::string::npos)
    return {};
  const std::size_t start = at + option.size() + 2;
  return header.substr(start, header.find(' ', start) - start);
}

// One build in progress: the request as the stages read it and what they have made so far.
struct Build {
  Build(const std::shared_ptr<const Schema>& schema, const Catalog& catalog,
        const std::vector<std::string>& recipes_dirs, const BuildRequest& request,
        const RunHooks& hooks)
      : schema(schema), catalog(catalog), recipes_dirs(recipes_dirs), req(request), hooks(hooks),
        r{Config(schema, schema->default_profile(), Value()), {}, {}, {}, {}, {}, {}, {}, {}} {}

  const std::shared_ptr<const Schema>& schema;
  const Catalog& catalog;
  const std::vector<std::string>& recipes_dirs;
  BuildRequest req; // config_file: the recipe fields filled from its header
  const RunHooks& hooks;
  BuildResult r;
  std::string profile;
  std::string as_written, header; // config_file: its text and first line
  int header_num_gpus = 0;        // config_file: a GPU-count variant's count, from its header
  // The waivers the steps and checks apply: the recipe's, for its own pipeline only.
  bool recipe_waivers = false;
  const std::vector<Advisory>* advisories = nullptr; // the Compiler's, warned by the checks

  // config_file: the recipe comes from its header; the flags given win.
  void read_config_file() {
    const std::string& path = req.config_file;
    as_written = read_input_file(path);
    header = as_written.substr(0, as_written.find('\n'));
    const std::string prefix = "# qwen-recipe ";
    const std::size_t build = header.find(" build ");
    if (!header.starts_with(prefix) || build == std::string::npos)
      throw Error(path + ": no '# qwen-recipe build MODEL ...' header to take the recipe from; "
                         "launch the recipe with overrides instead, or keep the header qwen-recipe "
                         "build writes");
    req.recipe = header.substr(build + 7, header.find(' ', build + 7) - build - 7);
    if (req.gpu.empty())
      req.gpu = header_option(header, "--gpu");
    if (req.precision.empty())
      req.precision = header_option(header, "--precision");
    if (req.profile.empty())
      req.profile = header_option(header, "--mcore");
    // A GPU-count variant's header names its count.
    if (const std::string n = header_option(header, "--num-gpus"); !n.empty()) {
      if (n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos || n[0] == '0')
        throw Error(path + ": the header's --num-gpus '" + n + "' is not a GPU count");
      header_num_gpus = std::stoi(n);
    }
  }

  // The GPU count that picks a recipe's variant: the spec's, the header's, --num-gpus, or
  // --nodes x GPUs per node; 0: none asked for.
  [[nodiscard]] std::int64_t asked_num_gpus(const RecipeRef& ref) const {
    if (ref.num_gpus > 0)
      return ref.num_gpus;
    if (header_num_gpus > 0)
      return header_num_gpus;
    if (!req.config_file.empty())
      return 0; // a config taken as written: --num-gpus rescales it
    if (req.checks.num_gpus)
      return *req.checks.num_gpus;
    if (req.checks.nodes > 0)
      return std::int64_t{req.checks.nodes} * (req.checks.gpus_per_node > 0
                                                   ? req.checks.gpus_per_node
                                                   : catalog.gpu(ref.gpu).gpus_per_node);
    return 0;
  }

  void resolve_recipe() {
    if (!req.config_file.empty())
      read_config_file();
    profile = req.profile.empty() ? schema->default_profile() : req.profile;
    (void)schema->profile(profile);
    std::string& command = r.command;
    command = "qwen-recipe";
    for (const std::string& dir : recipes_dirs)
      command += " --recipes-dir " + command_word(dir, "--recipes-dir");
    command += " build";
    if (!req.base_file.empty()) {
      if (!req.recipe.empty())
        throw Error("give a recipe or --base FILE, not both");
      if (req.pipeline_text.empty())
        throw Error("--base needs --pipeline: a base file has no recipe pipeline of its own");
      if (!req.precision.empty())
        throw Error("--precision " + req.precision +
                    " has no effect with --base: the pipeline sets the precision (e.g. "
                    "'precision{p=" +
                    req.precision + "},...')");
      command += " --base " + command_word(req.base_file, "--base file name");
    } else {
      if (req.recipe.empty())
        throw Error("no recipe given; e.g. qwen-recipe build qwen35_397b --gpu gb300 "
                    "('qwen-recipe list recipes' shows them)");
      RecipeRef ref{req.recipe, req.gpu, req.precision.empty() ? "bf16" : req.precision};
      if (req.recipe.find('@') != std::string::npos) {
        ref = parse_recipe_ref(req.recipe);
        check_spec_agrees(req, ref);
      } else if (req.gpu.empty()) {
        throw Error("--gpu is required; GPUs: gb300, gb200, b300, b200, h100, vr200");
      }
      // A count in the spec names a variant that must exist; --num-gpus or --nodes without one
      // fall back to the default recipe, run on that many GPUs.
      const std::int64_t asked = asked_num_gpus(ref);
      r.recipe =
          catalog.resolve(ref.model, ref.gpu, ref.precision,
                          asked > 999'999'999 ? 0 : static_cast<int>(asked), ref.num_gpus > 0);
      recipe_waivers = req.pipeline_text.empty() && (req.config_file.empty() || req.allow_waived);
    }
  }

  void make_base_config() {
    Value base;
    if (!req.base_file.empty()) {
      base = catalog.base_from_file(req.base_file, profile);
    } else {
      base = catalog.base_config(*r.recipe->model, profile);
      r.command.append(" ").append(command_word(r.recipe->model->name, "model key"));
      r.command.append(" --gpu ").append(command_word(r.recipe->gpu->name, "GPU key"));
      r.command.append(" --precision ").append(command_word(r.recipe->precision, "precision"));
      if (!r.recipe->entry->is_default)
        r.command.append(" --num-gpus ").append(std::to_string(r.recipe->entry->num_gpus));
    }
    r.command += " --mcore " + command_word(profile, "--mcore profile");
    r.config = Config(schema, profile, std::move(base));
  }

  void prepare_steps() {
    r.pipeline = req.pipeline_text.empty() ? r.recipe->variant->pipeline
                                           : Pipeline::parse(req.pipeline_text);
    r.pipeline.bind(r.config, catalog);
    r.pipeline.check_order();
    // The header's `# pipeline:` line.
    require_one_line(r.pipeline.text(), "pipeline");
    if (!req.pipeline_text.empty())
      r.command += " --pipeline " + command_word(r.pipeline.text(), "--pipeline");
    for (const Shortcut& sc : req.shortcuts)
      r.command.append(" ").append(shortcut_words(sc));
    r.shortcuts = req.shortcuts;
    // The files' overrides go into the command as tokens: it reproduces the build without them.
    for (const std::string& file : req.override_files)
      for (Override& o : read_overrides_file(file)) {
        r.command.append(" ").append(command_word(to_token(o), "override in " + o.origin));
        r.overrides.push_back(std::move(o));
      }
    for (const std::string& token : req.overrides) {
      r.overrides.push_back(parse_override(token));
      r.command.append(" ").append(
          command_word(token, "override",
                       "remove it (a value with a line break can be a YAML escape, "
                       "\"a\\nb\", in a --base file)"));
    }
  }

  // Waivers belong to the recipe's own pipeline, not to one the user wrote.
  [[nodiscard]] const Waivers& waivers() const {
    static const Waivers none;
    return recipe_waivers ? r.recipe->variant->waivers : none;
  }

  void run_passes_stage() {
    if (!req.config_file.empty()) {
      // As written: the file is the config, typed by the schema; no pass runs.
      r.config = load_config_text(*schema, as_written, req.config_file, req.profile);
      r.command = "launched as written; built by: " + header.substr(2);
      return;
    }
    run_passes(r.pipeline, waivers(), r.config, catalog, hooks);
  }

  // After the passes, before the overrides: the shortcuts and what follows them, each write
  // logged under its shortcut (StepId::Kind::Shortcut); checked with the final invariants.
  void run_shortcuts_stage() {
    if (r.shortcuts.empty())
      return;
    if (!req.config_file.empty())
      throw Error(req.config_file + " is taken as written: give no shortcuts (--tp ...) with it");
    const std::optional<Value> before =
        hooks.after_change ? std::optional<Value>(r.config.root()) : std::nullopt;
    apply_shortcuts(r.config, r.shortcuts, r.recipe ? r.recipe->gpu->name : std::string());
    if (before && !(*before == r.config.root()))
      hooks.after_change("shortcuts", r.config);
  }

  void run_overrides_stage() {
    if (req.config_file.empty())
      run_overrides(r.overrides, r.config, hooks);
  }

  void check_invariants_stage() {
    if (req.config_file.empty()) {
      check_final_invariants(r.pipeline, r.overrides, waivers(), r.config, !r.shortcuts.empty());
      return;
    }
    for (const InvariantInfo& inv : invariant_registry())
      if (const std::string problem = inv.check(r.config);
          !problem.empty() && waivers().find(Waiver::Kind::Invariant, inv.name) == nullptr)
        throw Error(req.config_file + ": invariant '" + inv.name + "' failed: " + problem);
  }

  [[nodiscard]] ValidateOptions check_options() const {
    ValidateOptions o;
    // A config taken as written was not built here: its invariants are reported with the
    // checks (waived ones as warnings); a build has just checked its own.
    o.invariants = req.checks.report_invariants || !req.config_file.empty();
    o.strict = req.checks.strict;
    if (advisories != nullptr)
      o.advisories = *advisories;
    if (r.recipe)
      o.world_size = r.recipe->entry->num_gpus;
    o.waivers = waivers();
    if (req.checks.num_gpus) {
      o.world_size = req.checks.num_gpus;
    } else if (req.checks.nodes > 0) {
      const int per_node = req.checks.gpus_per_node > 0 ? req.checks.gpus_per_node
                           : r.recipe                   ? r.recipe->gpu->gpus_per_node
                                                        : 0;
      o.world_size = std::int64_t{req.checks.nodes} * per_node;
    }
    return o;
  }

  // What the recipe's waivers let through that would stop the job once it starts: each waived
  // invariant or check that fails on the built config.
  [[nodiscard]] std::vector<std::string> waived_failures(const ValidateOptions& checks) const {
    std::vector<std::string> out;
    if (!r.recipe)
      return out;
    ValidateOptions unwaived = checks;
    unwaived.waivers = {};
    const ValidationReport report = validate_config(r.config, unwaived);
    for (const Waiver& w : r.recipe->variant->waivers.listed) {
      std::string problem;
      if (w.kind == Waiver::Kind::Invariant)
        problem = find_invariant(w.name)->check(r.config);
      else
        for (const Finding& f : report.findings)
          if (problem.empty() && f.level == Finding::Level::Error && f.check == w.name)
            problem = f.message;
      if (!problem.empty())
        out.push_back("'" + w.name + "' fails (waived by the recipe: " + w.reason +
                      "): " + problem);
    }
    return out;
  }

  void run_startup_checks() {
    ValidateOptions options = check_options();
    if (!req.checks.env_file.empty())
      options.env = read_package_env(req.checks.env_file);
    r.world_size = options.world_size;
    r.report = validate_config(r.config, options);
    if (!req.checks.enforce)
      return;
    // Warnings and skipped checks go to the log; failures are logged as `error:` lines and the
    // last one is thrown, so every failure shows as one line and the command exits 2.
    std::vector<const Finding*> errors;
    for (const Finding& f : r.report.findings) {
      if (f.level == Finding::Level::Error)
        errors.push_back(&f);
      else if (f.level == Finding::Level::Warning)
        spdlog::warn("check '{}': {}", f.check, f.message);
      else
        spdlog::info("check '{}' skipped: {}", f.check, f.message);
    }
    if (req.checks.single_error && !errors.empty())
      throw Error(
          "check '" + errors.front()->check + "' failed: " + errors.front()->message +
          (errors.size() > 1 ? " (and " + std::to_string(errors.size() - 1) + " more)" : ""));
    for (const Finding* f : errors) {
      if (f == errors.back())
        throw Error("check '" + f->check + "' failed: " + f->message);
      spdlog::error("check '{}' failed: {}", f->check, f->message);
    }
    // A waiver keeps upstream parity in build; a launch would only spend the allocation on it.
    if (!req.checks.refuse_waived || !req.config_file.empty())
      return;
    if (const std::vector<std::string> waived = waived_failures(options); !waived.empty())
      throw Error(
          r.recipe->id() + " would stop once the job starts: " + waived.front() +
          (waived.size() > 1 ? " (and " + std::to_string(waived.size() - 1) + " more)" : "") +
          "; fix it with overrides, or give --allow-waived to launch it as upstream has "
          "it");
  }
};

} // namespace

std::optional<Compiler::HeaderWorld> Compiler::header_world(std::string_view text,
                                                            const std::string& source) const {
  const std::string header(text.substr(0, text.find('\n')));
  const std::size_t build = header.find(" build ");
  if (!header.starts_with("# qwen-recipe ") || build == std::string::npos ||
      header.find(" --base ") != std::string::npos)
    return std::nullopt;
  const std::string model = header.substr(build + 7, header.find(' ', build + 7) - build - 7);
  const std::string gpu = header_option(header, "--gpu");
  const std::string precision = header_option(header, "--precision");
  HeaderWorld world;
  if (const std::string n = header_option(header, "--num-gpus"); !n.empty()) {
    if (n.size() > 9 || n.find_first_not_of("0123456789") != std::string::npos || n[0] == '0')
      throw Error(source + ": the header's --num-gpus '" + n + "' is not a GPU count");
    world.num_gpus = std::stoi(n);
    world.from_option = true;
  }
  if (gpu.empty())
    throw Error(source + ": the header names no --gpu for " + model +
                "; give --num-gpus N for the world size");
  if (world.from_option)
    return world;
  // A recipe this catalogue does not hold (built with another --recipes-dir) names no count.
  const auto& entries = catalog_->recipes();
  if (std::none_of(entries.begin(), entries.end(),
                   [&](const RecipeEntry& e) { return e.model == model && e.gpu == gpu; }))
    return std::nullopt;
  const RecipeSpec recipe =
      catalog_->resolve(model, gpu, precision.empty() ? "bf16" : precision, 0, false);
  world.recipe = recipe.id();
  world.num_gpus = recipe.entry->num_gpus;
  return world;
}

Compiler::Compiler(std::shared_ptr<const DataSource> data) : Compiler(DataSources{data}) {}

Compiler::Compiler(const DataSources& sources)
    : schema_(Schema::load(*sources.front())), catalog_(Catalog::load(sources, schema_)) {
  for (const auto& s : sources)
    if (!s->directory().empty())
      recipes_dirs_.push_back(s->directory());
  const std::vector<std::string> top = sources.front()->list("");
  if (std::find(top.begin(), top.end(), "advisories.yaml") != top.end())
    advisories_ = parse_advisories(*sources.front()->parse("advisories.yaml"));
}

BuildResult Compiler::run(const BuildRequest& request, Stages stages, const RunHooks& hooks) const {
  // Each stage needs every stage before it that writes the config.
  bool gap = false;
  for (Stage s : {Stage::BaseConfig, Stage::Pipeline, Stage::Passes, Stage::Shortcuts,
                  Stage::Overrides, Stage::Invariants}) {
    if (stages.has(s) && gap)
      throw Error("internal: a build's stages skip one the later ones need");
    gap = gap || !stages.has(s);
  }
  if ((stages.has(Stage::StartupChecks) || stages.has(Stage::Emit)) && gap)
    throw Error("internal: a build's start-up checks and output need the finished config");
  Build b(schema_, *catalog_, recipes_dirs_, request, hooks);
  b.advisories = &advisories_;
  b.resolve_recipe();
  if (stages.has(Stage::BaseConfig))
    b.make_base_config();
  if (stages.has(Stage::Pipeline))
    b.prepare_steps();
  if (stages.has(Stage::Passes))
    b.run_passes_stage();
  if (stages.has(Stage::Shortcuts))
    b.run_shortcuts_stage();
  if (stages.has(Stage::Overrides))
    b.run_overrides_stage();
  if (stages.has(Stage::Invariants))
    b.check_invariants_stage();
  if (stages.has(Stage::StartupChecks))
    b.run_startup_checks();
  if (stages.has(Stage::Emit)) {
    b.r.yaml = emit_config(b.r, request.header);
    // Inputs are bounded, and so is what they make: no config larger than any we would read.
    if (b.r.yaml.size() > kMaxInputBytes)
      throw Error("the config comes to " + std::to_string(b.r.yaml.size() >> 20) +
                  " MiB, more than the " + std::to_string(kMaxInputBytes >> 20) +
                  " MiB a config may be; its inputs hold values too long for a config");
  }
  return std::move(b.r);
}

bool is_override_token(std::string_view word) {
  return word.find('=') != std::string_view::npos || word.starts_with("~") || word.starts_with("+");
}

void split_recipe_words(const std::vector<std::string>& words, BuildRequest& request, bool has_base,
                        std::vector<std::string>* fields) {
  auto it = words.begin();
  if (it != words.end() && (!has_base || !is_override_token(*it)))
    request.recipe = *it++;
  for (; it != words.end(); ++it)
    if (fields != nullptr && !is_override_token(*it))
      fields->push_back(*it);
    else
      request.overrides.push_back(*it);
}

std::string emit_config(const BuildResult& result, bool header) {
  std::string out;
  if (header) {
    out += "# " + result.command + "\n";
    out += "# pipeline: " + result.pipeline.text() + "\n";
  }
  return out + to_yaml(result.config.root());
}

} // namespace qr
