// Generic passes that carry a recipe's own settings: parallelism, batch, communication overlap,
// field writes (`set`) and environment variables (`env`).
#include "config/error.h"
#include "config/scalars.h"
#include "config/suggest.h"
#include "passes/registry.h"
#include "recipes/catalog.h"

namespace qr {
namespace {

struct OptionField {
  const char* option;
  const char* path;
};

// Writes the options given, each to its field.
template <std::size_t N>
void write_given(PassContext& ctx, const OptionField (&fields)[N]) {
  for (const OptionField& f : fields)
    if (const Value* v = ctx.args().find(f.option))
      ctx.set(f.path, *v);
}

constexpr OptionField kParallelismFields[] = {
    {"tp", "model.tensor_model_parallel_size"},
    {"pp", "model.pipeline_model_parallel_size"},
    {"vp", "model.virtual_pipeline_model_parallel_size"},
    {"cp", "model.context_parallel_size"},
    {"ep", "model.expert_model_parallel_size"},
    {"etp", "model.expert_tensor_parallel_size"},
    {"sp", "model.sequence_parallel"},
    {"first", "model.num_layers_in_first_pipeline_stage"},
    {"last", "model.num_layers_in_last_pipeline_stage"},
};

constexpr OptionField kCommOverlapFields[] = {
    {"tp", "comm_overlap.tp_comm_overlap"},
    {"grad", "comm_overlap.overlap_grad_reduce"},
    {"param", "comm_overlap.overlap_param_gather"},
    {"opt_step", "comm_overlap.overlap_param_gather_with_optimizer_step"},
    {"moe_ep", "comm_overlap.overlap_moe_expert_parallel_comm"},
    {"delay_wgrad", "comm_overlap.delay_wgrad_compute"},
};

template <std::size_t N>
std::vector<std::string> paths_of(const OptionField (&fields)[N]) {
  std::vector<std::string> out;
  for (const OptionField& f : fields)
    out.emplace_back(f.path);
  return out;
}

void run_comm_overlap(PassContext& ctx) {
  ctx.set("comm_overlap", ctx.schema().instantiate(*ctx.schema().class_named("CommOverlapConfig"),
                                                   ctx.config().profile()));
  write_given(ctx, kCommOverlapFields);
}

void run_overlap_with_optimizer_step(PassContext& ctx) {
  ctx.set("optimizer.overlap_param_gather_with_optimizer_step", true);
  if (!ctx.get("comm_overlap").is_null())
    ctx.set("comm_overlap.overlap_param_gather_with_optimizer_step", true);
}

// set{a.b=1,c.d=x}: each key is a config path, typed by the schema against the base config.
PassArgs bind_set(const std::vector<std::pair<std::string, std::string>>& raw, const Config& base,
                  const Catalog&) {
  PassArgs args;
  for (const auto& [key, text] : raw) {
    std::string why;
    const auto ref = base.resolve(key, &why);
    if (!ref)
      throw Error("pass 'set': " + why);
    auto doc = parse_yaml(text, "pass 'set' option '" + key + "=" + text + "'");
    doc->has_positions = false;
    TypingContext ctx{doc.get(), base.profile(), true};
    args.set(key, base.schema().coerce(*doc->root, *ref->type, key, ctx));
  }
  return args;
}

void run_set(PassContext& ctx) {
  for (const auto& [path, value] : ctx.args().items())
    ctx.set(path, value);
}

// set-if-field{...}: like set, but a path that is no field in this Megatron-Core profile is
// skipped with a note, as upstream's `hasattr` guards do.
PassArgs bind_set_if_field(const std::vector<std::pair<std::string, std::string>>& raw,
                           const Config& base, const Catalog& catalog) {
  std::vector<std::pair<std::string, std::string>> present;
  for (const auto& [key, text] : raw) {
    std::string why;
    if (base.resolve(key, &why))
      present.emplace_back(key, text);
    else if (why.find("not a field in Megatron-Core profile") == std::string::npos)
      throw Error("pass 'set-if-field': " + why);
  }
  PassArgs args = bind_set(present, base, catalog);
  for (const auto& [key, text] : raw)
    if (!args.has(key))
      args.set(key, Null{}); // marks a skipped key; run() leaves it out
  return args;
}

void run_set_if_field(PassContext& ctx) {
  for (const auto& [path, value] : ctx.args().items()) {
    if (ctx.config().has_field(path))
      ctx.set(path, value);
    else
      ctx.note(path + " is no field in Megatron-Core profile '" + ctx.config().profile() +
               "'; left unset");
  }
}

// env{presets=[perf,hybridep],NAME=value,...}: env_vars replaced wholesale by the common
// variables, then each preset in order, then the variables given.
PassArgs bind_env(const std::vector<std::pair<std::string, std::string>>& raw, const Config& base,
                  const Catalog& catalog) {
  PassArgs args;
  const TypePtr env_value = parse_type("int | str");
  const TypePtr preset_list = parse_type("list<str>");
  for (const auto& [key, text] : raw) {
    auto doc = parse_yaml(text, "pass 'env' option '" + key + "=" + text + "'");
    doc->has_positions = false;
    TypingContext ctx{doc.get(), base.profile(), true};
    if (key == "presets") {
      Value presets = base.schema().coerce(*doc->root, *preset_list, "presets", ctx);
      for (const Value& p : presets.as_list())
        (void)catalog.env_preset(p.as_str());
      args.set(key, std::move(presets));
      continue;
    }
    if (!is_identifier(key))
      throw Error("pass 'env': '" + key + "' is not an environment variable name");
    args.set(key, base.schema().coerce(*doc->root, *env_value, "env_vars." + key, ctx));
  }
  return args;
}

void run_env(PassContext& ctx) {
  Map env = ctx.catalog().env_preset("common");
  if (const Value* presets = ctx.args().find("presets"))
    for (const Value& p : presets->as_list())
      for (const auto& [k, v] : ctx.catalog().env_preset(p.as_str()))
        env.set(k, v);
  for (const auto& [k, v] : ctx.args().items())
    if (k != "presets")
      env.set(k, v);
  ctx.set("env_vars", std::move(env));
}

} // namespace

const PassInfo kParallelismPass{
    .name = "parallelism",
    .summary = "model parallelism: TP, PP, VP, CP, EP, ETP, SP and first/last pipeline stages",
    .options = {{"tp", "int", false, "tensor parallel size"},
                {"pp", "int", false, "pipeline parallel size"},
                {"vp", "int?", false, "virtual pipeline size (null: none)"},
                {"cp", "int", false, "context parallel size"},
                {"ep", "int", false, "expert parallel size"},
                {"etp", "int?", false, "expert tensor parallel size"},
                {"sp", "bool", false, "sequence parallel"},
                {"first", "int?", false, "layers in the first pipeline stage"},
                {"last", "int?", false, "layers in the last pipeline stage"}},
    .writes = paths_of(kParallelismFields),
    .run = [](PassContext& ctx) { write_given(ctx, kParallelismFields); },
    .description = "A recipe's parallel layout. Writes only the options given.",
};

const PassInfo kBatchPass{
    .name = "batch",
    .summary = "micro and global batch size",
    .options = {{"mbs", "int", false, "train.micro_batch_size"},
                {"gbs", "int", false, "train.global_batch_size"}},
    .writes = {"train.micro_batch_size", "train.global_batch_size"},
    .run =
        [](PassContext& ctx) {
          if (const Value* v = ctx.args().find("mbs"))
            ctx.set("train.micro_batch_size", *v);
          if (const Value* v = ctx.args().find("gbs"))
            ctx.set("train.global_batch_size", *v);
        },
    .description = "A recipe's batch sizes.",
};

const PassInfo kCommOverlapPass{
    .name = "comm-overlap",
    .summary = "a fresh CommOverlapConfig with the given overlap flags (replaces comm_overlap)",
    .options = {{"tp", "bool", false, "tp_comm_overlap"},
                {"grad", "bool", false, "overlap_grad_reduce"},
                {"param", "bool", false, "overlap_param_gather"},
                {"opt_step", "bool", false, "overlap_param_gather_with_optimizer_step"},
                {"moe_ep", "bool", false, "overlap_moe_expert_parallel_comm"},
                {"delay_wgrad", "bool", false, "delay_wgrad_compute"}},
    .writes = {"comm_overlap"},
    .run = run_comm_overlap,
    .description = "The recipe's `CommOverlapConfig(...)` construction: it *replaces* "
                   "`comm_overlap`, so flags not given take the class defaults (null).",
};

const PassInfo kOverlapWithOptimizerStepPass{
    .name = "overlap-param-gather-with-optimizer-step",
    .summary = "overlap the parameter all-gather with the optimizer step",
    .writes = {"optimizer.overlap_param_gather_with_optimizer_step",
               "comm_overlap.overlap_param_gather_with_optimizer_step"},
    .after = {{"comm-overlap", "comm-overlap replaces the CommOverlapConfig it edits"}},
    .run = run_overlap_with_optimizer_step,
    .description = "Megatron-Bridge `_enable_overlap_param_gather_with_optimizer_step`: on in "
                   "the optimizer, and in `comm_overlap` when there is one. Last inside "
                   "upstream's composite helpers.",
};

const PassInfo kSetPass{
    .name = "set",
    .summary = "set config fields: set{model.moe_use_grouped_tensor=true,...}",
    .bind_free_options = bind_set,
    .run = run_set,
    .description = "Writes each `path=value` option, typed by the schema (unknown paths and wrong "
                   "types fail before the pipeline runs). For a recipe's own one-off settings.",
};

const PassInfo kSetIfFieldPass{
    .name = "set-if-field",
    .summary = "set config fields where this Megatron-Core profile has them, skip the rest",
    .bind_free_options = bind_set_if_field,
    .run = run_set_if_field,
    .description = "Like `set`, for fields that only newer Megatron-Core has: a path that is no "
                   "field in the profile is left out with a note, never invented (upstream sets "
                   "such attributes behind `hasattr` checks, or as dead attributes that "
                   "Megatron-Bridge never serializes). Unknown paths are still errors.",
};

const PassInfo kEnvPass{
    .name = "env",
    .summary = "the run's environment variables, set wholesale: common + presets + extras",
    .last = true,
    .bind_free_options = bind_env,
    .run = run_env,
    .description = "Replaces `env_vars` with Megatron-Bridge's COMMON_PERF_ENV_VARS "
                   "(recipes/env.yaml `common`), then each preset in `presets=[...]` in order, "
                   "then the `NAME=value` options. Must be the last pass, since it replaces "
                   "env_vars wholesale.",
};

} // namespace qr
