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

inline std::string str_at(const Config& c, std::string_view path) {
  const Value* v = present(c, path);
  return v != nullptr && v->is_str() ? v->as_str() : std::string();
}

// "model.tensor_model_parallel_size=2"
inline std::string named(std::string_view path, std::int64_t v) {
  return std::string(path) + "=" + std::to_string(v);
}

// The parallel layout as Megatron-Core reads it: unset sizes are 1, ETP defaults to TP.
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
    etp = e.value_or(tp);
    vp = int_at(c, "model.virtual_pipeline_model_parallel_size");
    sp = true_at(c, "model.sequence_parallel");
  }
  [[nodiscard]] std::string etp_text() const {
    return etp_set ? named("model.expert_tensor_parallel_size", etp)
                   : "model.expert_tensor_parallel_size=null (so TP, " + std::to_string(etp) + ")";
  }
};

struct Ctx {
  const Config& config;
  const ValidateOptions& options;
  Layout layout;
};

// What one check found. `applies` false: the check has nothing to say about this config (no
// experts, no GDN layers); `skipped`: it applies but lacks an input (world size, environment).
struct Outcome {
  bool applies = true;
  std::string skipped;
  std::vector<std::string> problems;
};

inline Outcome not_applicable() {
  return {false, {}, {}};
}

inline Outcome skipped(std::string why) {
  return {true, std::move(why), {}};
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
