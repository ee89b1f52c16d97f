// A pass: a small named unit that rewrites the config, declared once in passes/passes.def with
// its options, the fields it writes, the properties it needs, provides and destroys, and the
// invariants it leaves true. The pipeline checks ordering before any pass runs and invariants
// after each one.
#pragma once

#include "config/config.h"
#include "passes/presets.h"
#include "yaml/value.h"

#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qr {

struct PassOption {
  std::string name;
  std::string type; // schema type notation, e.g. "str{fla|transformer_engine}", "int?", "bool"
  bool required = false;
  std::string help;
  std::string field = {}; // the config path the option's value is written to, if it is one
};

// A fact about the config that passes provide or destroy, as GCC's pass properties
// (`precision-set`, `graphs-disabled`). Ordering is checked on them before any pass runs.
struct PassProperty {
  std::string name;
  std::string meaning; // one line, for errors and docs
  // Whether a base config already has it (a --base file may carry a CommOverlapConfig); null:
  // only a pass provides it.
  bool (*holds_in)(const Config&) = nullptr;
};

// A pass's rule about one property, with the reason shown in errors and docs.
struct PropertyRule {
  std::string property;
  std::string why;
};

// Typed option values of one pass invocation, in the order written.
class PassArgs {
public:
  void set(std::string name, Value v);
  [[nodiscard]] const Value* find(std::string_view name) const;
  [[nodiscard]] bool has(std::string_view name) const { return find(name) != nullptr; }
  [[nodiscard]] const std::vector<std::pair<std::string, Value>>& items() const { return items_; }

private:
  std::vector<std::pair<std::string, Value>> items_;
};

struct PassInfo;

// What a running pass sees: the config (writes are checked against the pass's declaration),
// its options and the recipe catalogue's presets (precision blocks, env presets).
class PassContext {
public:
  PassContext(Config& config, const PassInfo& info, const PassArgs& args, const Presets& presets)
      : config_(config), info_(info), args_(args), presets_(presets) {}

  [[nodiscard]] const Value& get(std::string_view path) const { return config_.at(path); }
  [[nodiscard]] const Value* find(std::string_view path) const { return config_.find(path); }
  [[nodiscard]] const Config& config() const { return config_; }
  [[nodiscard]] const PassArgs& args() const { return args_; }
  [[nodiscard]] const Presets& presets() const { return presets_; }
  [[nodiscard]] const Schema& schema() const { return config_.schema(); }
  // An option's value; throws if absent (required options are checked before the run).
  [[nodiscard]] const Value& arg(std::string_view name) const;
  // Writes each option given that names a field (PassOption::field) to that field, in the
  // pass's option order.
  void set_option_fields();

  // Writes a field; it must be one the pass declares (or, for `set`/`env`, one of its keys).
  void set(std::string_view path, Value v);
  // Logs a note at info level, prefixed with the pass name.
  void note(const std::string& message) const;

private:
  Config& config_;
  const PassInfo& info_;
  const PassArgs& args_;
  const Presets& presets_;
};

using RawOptions = std::vector<std::pair<std::string, std::string>>; // key, value text

struct PassInfo {
  std::string name = {};
  void (*run)(PassContext&) = nullptr;
  // Passes whose option keys are config paths or env var names (`set`, `env`): they type their
  // own options against the base config before the pipeline runs, and write exactly those keys.
  PassArgs (*bind_free_options)(const RawOptions& raw, const Config& base,
                                const Presets& presets) = nullptr;
  std::string summary = {}; // one line
  std::vector<PassOption> options = {};
  // Dotted paths the pass may write besides its options' fields; a section covers its fields.
  std::vector<std::string> writes = {};
  // Ordering, on properties (GCC's properties_required/provided/destroyed): `required` must
  // hold when the pass runs; `after`/`before`: every pass in the pipeline that provides the
  // property runs earlier / later.
  std::vector<PropertyRule> after = {};
  std::vector<PropertyRule> required = {};
  std::vector<PropertyRule> before = {};
  std::vector<std::string> provided = {};
  std::vector<std::string> destroyed = {};
  bool last = false;                     // nothing may follow it
  std::vector<std::string> ensures = {}; // invariants the pass leaves true (checked right after)
  std::string description = {};          // longer text for docs/passes.md

  // `writes`, then each option's field that no entry of `writes` already covers.
  [[nodiscard]] std::vector<std::string> declared_writes() const;
  [[nodiscard]] bool provides(std::string_view property) const;
};

// A name for a fixed sequence of passes (an upstream composite helper).
struct NamedPipeline {
  std::string name;
  std::string summary;
  std::string expansion; // pipeline text
};

} // namespace qr
