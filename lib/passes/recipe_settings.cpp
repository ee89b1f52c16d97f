// Generic passes that carry a recipe's own settings: parallelism, batch, communication overlap,
// field writes (`set`) and environment variables (`env`).
#include "passes/registry.h"
#include "support/error.h"
#include "support/suggest.h"
#include "yaml/scalars.h"

namespace qr {

void run_parallelism(PassContext& ctx) {
  ctx.set_option_fields();
}

void run_batch(PassContext& ctx) {
  ctx.set_option_fields();
}

void run_comm_overlap(PassContext& ctx) {
  ctx.set("comm_overlap", ctx.schema().instantiate(*ctx.schema().class_named("CommOverlapConfig"),
                                                   ctx.config().profile()));
  ctx.set_option_fields();
}

void run_overlap_param_gather_with_optimizer_step(PassContext& ctx) {
  ctx.set("optimizer.overlap_param_gather_with_optimizer_step", true);
  if (!ctx.get("comm_overlap").is_null())
    ctx.set("comm_overlap.overlap_param_gather_with_optimizer_step", true);
}

// set{a.b=1,c.d=x}: each key is a config path, typed by the schema against the base config.
PassArgs bind_set(const RawOptions& raw, const Config& base, const Presets&) {
  PassArgs args;
  for (const auto& [key, text] : raw) {
    std::string why;
    const auto ref = base.resolve(key, &why);
    if (!ref)
      throw Error("pass 'set': " + why);
    args.set(key, base.schema().parse_value(text, *ref->type, key, base.profile(),
                                            "pass 'set' option '" + key + "=" + text + "'"));
  }
  return args;
}

void run_set(PassContext& ctx) {
  for (const auto& [path, value] : ctx.args().items())
    ctx.set(path, value);
}

// set-if-field{...}: like set, but a path that is no field in this Megatron-Core profile is
// skipped with a note, as upstream's `hasattr` guards do.
PassArgs bind_set_if_field(const RawOptions& raw, const Config& base, const Presets& catalog) {
  RawOptions present;
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
PassArgs bind_env(const RawOptions& raw, const Config& base, const Presets& catalog) {
  PassArgs args;
  const TypePtr env_value = parse_type("int | str");
  const TypePtr preset_list = parse_type("list<str>");
  for (const auto& [key, text] : raw) {
    const std::string source = "pass 'env' option '" + key + "=" + text + "'";
    if (key == "presets") {
      Value presets =
          base.schema().parse_value(text, *preset_list, "presets", base.profile(), source);
      for (const Value& p : presets.as_list())
        (void)catalog.env_preset(p.as_str());
      args.set(key, std::move(presets));
      continue;
    }
    if (!is_identifier(key))
      throw Error("pass 'env': '" + key + "' is not an environment variable name");
    args.set(key, base.schema().parse_value(text, *env_value, "env_vars." + key, base.profile(),
                                            source));
  }
  return args;
}

void run_env(PassContext& ctx) {
  Map env = ctx.presets().env_preset("common");
  if (const Value* presets = ctx.args().find("presets"))
    for (const Value& p : presets->as_list())
      for (const auto& [k, v] : ctx.presets().env_preset(p.as_str()))
        env.set(k, v);
  for (const auto& [k, v] : ctx.args().items())
    if (k != "presets")
      env.set(k, v);
  ctx.set("env_vars", std::move(env));
}

} // namespace qr
