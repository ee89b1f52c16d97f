// The pieces every start-up check is written with (lib/validate only): typed reads of the config,
// the parallel layout as Megatron-Core reads it, and what one check found.
#pragma once

#include "validate/validate.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr::check_kit {

// The value at `path`, or null when it is absent or YAML null.
inline const Value* present(const Config& c, std::string_view path) {
  const Value* v = c.find(path);
  return v == nullptr || v->is_null() ? nullptr : v;
}

inline std::optional<std::int64_t> int_at(const Config& c, std::string_view path) {
  const Value* v = present(c, path);
  if (v == nullptr || !v->is_int())
    return std::nullopt;
  return v->as_int();
}

inline bool true_at(const Config& c, std::string_view path) {
  const Value* v = present(c, path);
  return v != nullptr && v->is_bool() && v->as_bool();
}

// Whether the section's `_target_` names class `cls` ("model", "Qwen3VLMoEModelProvider").
inline bool ends_with_target(const Config& c, std::string_view section, std::string_view cls) {
  const Value* v = c.find(section);
  if (v == nullptr || !v->is_map())
    return false;
  const std::string_view t = v->target();
  return t.size() > cls.size() && t.ends_with(cls) && t[t.size() - cls.size() - 1] == '.';
}

inline std::string str_at(const Config& c, std::string_view path) {
  const Value* v = present(c, path);
  return v != nullptr && v->is_str() ? v->as_str() : std::string();
}

// "model.tensor_model_parallel_size=2"
inline std::string named(std::string_view path, std::int64_t v) {
  return std::string(path) + "=" + std::to_string(v);
}

// The parallel layout as Megatron-Bridge hands it to Megatron-Core: unset sizes are 1; an unset
// ETP is 1 with EP > 1 (Bridge's _set_moe_expert_tensor_parallel_default), else TP.
struct Layout {
  std::int64_t tp = 1, pp = 1, cp = 1, ep = 1, etp = 1;
  bool etp_set = false;
  std::optional<std::int64_t> vp;
  bool sp = false;

  explicit Layout(const Config& c) {
    tp = int_at(c, "model.tensor_model_parallel_size").value_or(1);
    pp = int_at(c, "model.pipeline_model_parallel_size").value_or(1);
    cp = int_at(c, "model.context_parallel_size").value_or(1);
    ep = int_at(c, "model.expert_model_parallel_size").value_or(1);
    const auto e = int_at(c, "model.expert_tensor_parallel_size");
    etp_set = e.has_value();
    etp = e.value_or(ep > 1 ? 1 : tp);
    vp = int_at(c, "model.virtual_pipeline_model_parallel_size");
    sp = true_at(c, "model.sequence_parallel");
  }
  [[nodiscard]] std::string etp_text() const {
    if (etp_set)
      return named("model.expert_tensor_parallel_size", etp);
    return "model.expert_tensor_parallel_size=null (so " +
           std::string(ep > 1 ? "1 with EP > 1, " : "TP, ") + std::to_string(etp) + ")";
  }
};

struct Ctx {
  const Config& config;
  const ValidateOptions& options;
  Layout layout;
};

// What one check found. `applies` false: the check has nothing to say about this config (no
// experts, no GDN layers); `skipped`: it applies but lacks an input (world size, environment).
// `rewrites`: settings Megatron-Bridge silently changes before it checks them (warnings).
struct Outcome {
  bool applies = true;
  std::string skipped;
  std::vector<std::string> problems;
  std::vector<std::string> rewrites;
};

inline Outcome not_applicable() {
  return {false, {}, {}, {}};
}

inline Outcome skipped(std::string why) {
  return {true, std::move(why), {}, {}};
}

inline const char* const kNoWorld = "no world size (give --num-gpus N)";

struct CheckEntry {
  CheckInfo info;
  Outcome (*run)(const Ctx&);
  bool warn_only = false; // findings are warnings: the config is fine, the environment is not
};

// The checks ported from Megatron-Bridge's ConfigContainer.validate() and the finalize() and
// Megatron-Core __post_init__ methods it calls, in the order it calls them (finalize_checks.cpp).
const std::vector<CheckEntry>& finalize_checks();

} // namespace qr::check_kit
