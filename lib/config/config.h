// A config tree bound to its schema and Megatron-Core profile, addressed by dotted paths
// (`model.cuda_graph_modules`, `env_vars.NCCL_NVLS_ENABLE`). Every write is type-checked and
// recorded with the step that made it, which is what `explain` and `--print-after-all` read.
#pragma once

#include "schema/schema.h"
#include "yaml/value.h"

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

// Splits "a.b.c"; throws qr::Error on empty segments ("a..b", ".a", "a.").
std::vector<std::string> split_path(std::string_view path);

// What the schema says about one path.
struct FieldRef {
  const Type* type = nullptr;       // the value's type
  const ClassSpec* owner = nullptr; // the section class, when the last step is a field
  const FieldSpec* field = nullptr; // its schema entry, when the last step is a field
  bool in_open_map = false;         // the last step is a key of a map<T> (env_vars.X)
};

// The build step that made a write: the base config, one pass of the pipeline, a launcher
// shortcut (--tp 2), or the overrides.
struct StepId {
  enum class Kind { Base, Pass, Shortcut, Overrides };
  Kind kind = Kind::Base;
  std::string pass; // Kind::Pass: the pass's name; Kind::Shortcut: its words ("--tp 2")
  int position = 0; // Kind::Pass: its 1-based pipeline position

  [[nodiscard]] static StepId base() { return {}; }
  [[nodiscard]] static StepId of_pass(std::string name, int position) {
    return {Kind::Pass, std::move(name), position};
  }
  [[nodiscard]] static StepId shortcut(std::string words) {
    return {Kind::Shortcut, std::move(words), 0};
  }
  [[nodiscard]] static StepId overrides() { return {Kind::Overrides, {}, 0}; }
  bool operator==(const StepId&) const = default;
};

struct Write {
  StepId step;
  std::string path;
  std::optional<Value> before; // absent: the key did not exist
  std::optional<Value> after;  // absent: the key was deleted
};

class Config {
public:
  Config(std::shared_ptr<const Schema> schema, std::string profile, Value root);

  [[nodiscard]] const Schema& schema() const { return *schema_; }
  [[nodiscard]] const std::string& profile() const { return profile_; }
  [[nodiscard]] const Value& root() const { return root_; }

  // The value at `path`, or null when absent.
  [[nodiscard]] const Value* find(std::string_view path) const;
  // The value at `path`; throws qr::Error naming the path when absent.
  [[nodiscard]] const Value& at(std::string_view path) const;

  // Resolves a path against the schema. `why` receives a one-line reason (with a "did you mean")
  // when it does not resolve.
  [[nodiscard]] std::optional<FieldRef> resolve(std::string_view path, std::string* why) const;
  // True when `path` names a field that exists in this profile (section present or not).
  [[nodiscard]] bool has_field(std::string_view path) const;

  // Sets an existing or schema-declared field; the value must already fit the field's type.
  void set(std::string_view path, Value v);
  // Removes a key; returns false when it was absent.
  bool erase(std::string_view path);

  // Writes are recorded under this step name until the next call.
  void begin_step(StepId step) { step_ = std::move(step); }
  [[nodiscard]] const std::vector<Write>& writes() const { return writes_; }

private:
  std::shared_ptr<const Schema> schema_;
  std::string profile_;
  Value root_;
  StepId step_;
  std::vector<Write> writes_;

  Value* find_mut(const std::vector<std::string>& parts);
};

} // namespace qr
