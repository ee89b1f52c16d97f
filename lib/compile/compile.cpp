#include "compile/compile.h"

#include "overrides/overrides_file.h"
#include "passes/invariants.h"
#include "support/error.h"
#include "support/script_text.h"
#include "validate/validate.h"
#include "yaml/yaml_write.h"

namespace qr {
namespace {

// One token of the header's command: it goes into a comment line, so it must be one line; then
// it is written as a shell word.
std::string command_word(std::string_view token, std::string_view what,
                         std::string_view hint = {}) {
  require_one_line(token, what, hint);
  return shell_word(token, what);
}

} // namespace

Compiler::Compiler(std::shared_ptr<const DataSource> data)
    : schema_(Schema::load(*data)), catalog_(Catalog::load(data, schema_)),
      recipes_dir_(data->directory()) {}

namespace {

// A recipe spec and the --gpu / --precision flags name one recipe: a flag that says otherwise is
// refused, never silently dropped. A spec without ":PRECISION" means bf16.
void check_spec_agrees(const BuildRequest& req, const RecipeRef& ref) {
  if (!req.gpu.empty() && req.gpu != ref.gpu)
    throw Error("recipe spec '" + req.recipe + "' names GPU " + ref.gpu + " but --gpu is " +
                req.gpu);
  if (!req.precision.empty() && req.precision != ref.precision) {
    const bool named = req.recipe.find(':') != std::string::npos;
    throw Error("recipe spec '" + req.recipe + "' " +
                (named ? "names precision " + ref.precision
                       : "has no :PRECISION, so it means " + ref.precision + ",") +
                " but --precision is " + req.precision + "; write " + ref.model + "@" + ref.gpu +
                ":" + req.precision + " or drop --precision");
  }
}

} // namespace

BuildResult Compiler::prepare(const BuildRequest& req) const {
  const std::string profile = req.profile.empty() ? schema_->default_profile() : req.profile;
  (void)schema_->profile(profile);

  std::optional<RecipeSpec> spec;
  Value base;
  std::string command = "qwen-recipe";
  if (!recipes_dir_.empty())
    command += " --recipes-dir " + command_word(recipes_dir_, "--recipes-dir");
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
    base = catalog_->base_from_file(req.base_file, profile);
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
    spec = catalog_->resolve(ref.model, ref.gpu, ref.precision);
    base = catalog_->base_config(*spec->model, profile);
    command.append(" ").append(command_word(spec->model->name, "model key"));
    command.append(" --gpu ").append(command_word(spec->gpu->name, "GPU key"));
    command.append(" --precision ").append(command_word(spec->precision, "precision"));
  }
  command += " --mcore " + command_word(profile, "--mcore profile");
  Config config(schema_, profile, std::move(base));
  Pipeline pipeline =
      req.pipeline_text.empty() ? spec->variant->pipeline : Pipeline::parse(req.pipeline_text);
  pipeline.bind(config, *catalog_);
  pipeline.check_order();
  // The header's `# pipeline:` line.
  require_one_line(pipeline.text(), "pipeline");
  if (!req.pipeline_text.empty())
    command += " --pipeline " + command_word(pipeline.text(), "--pipeline");
  std::vector<Override> overrides;
  // The files' overrides go into the command as tokens: it reproduces the build without them.
  for (const std::string& file : req.override_files)
    for (Override& o : read_overrides_file(file)) {
      command.append(" ").append(command_word(to_token(o), "override in " + o.origin));
      overrides.push_back(std::move(o));
    }
  for (const std::string& token : req.overrides) {
    overrides.push_back(parse_override(token));
    command.append(" ").append(
        command_word(token, "override",
                     "remove it (a value with a line break can be a YAML escape, "
                     "\"a\\nb\", in a --base file)"));
  }
  BuildResult result{std::move(config), std::move(pipeline), std::move(overrides), spec, command};
  return result;
}

BuildResult Compiler::build(const BuildRequest& req, const RunHooks& hooks) const {
  BuildResult r = prepare(req);
  // Waivers belong to the recipe's own pipeline, not to one the user wrote. Those naming a
  // start-up check (validate/) are for validate_config; the pipeline takes the invariant ones.
  std::vector<Waiver> waivers;
  if (r.recipe && req.pipeline_text.empty())
    for (const Waiver& w : r.recipe->variant->waivers) {
      if (find_invariant(w.invariant) != nullptr)
        waivers.push_back(w);
      else if (find_check(w.invariant) == nullptr)
        throw Error("recipe " + r.recipe->id() + " waives unknown invariant or check '" +
                    w.invariant + "'");
    }
  run_pipeline(r.pipeline, r.overrides, waivers, r.config, *catalog_, hooks);
  return r;
}

std::string emit_config(const BuildResult& result, bool header) {
  std::string out;
  if (header) {
    out += "# " + result.command + "\n";
    out += "# pipeline: " + result.pipeline.text() + "\n";
  }
  return out + to_yaml(result.config.root());
}

ValidateOptions validate_options_for(const BuildRequest& request, const BuildResult& result) {
  ValidateOptions o;
  o.invariants = false;
  if (result.recipe) {
    o.world_size = result.recipe->entry->num_gpus;
    if (request.pipeline_text.empty())
      o.waivers = result.recipe->variant->waivers;
  }
  return o;
}

} // namespace qr
