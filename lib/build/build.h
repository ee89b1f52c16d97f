// The one owner of a build: the ordered list of stages from a recipe to the YAML Megatron-Bridge
// loads. Every subcommand, the tests and the benchmark ask Compiler::run for the stages they
// need; none strings the stages together itself.
#pragma once

#include "config/config.h"
#include "overrides/shortcuts.h"
#include "passes/pipeline.h"
#include "recipes/catalog.h"
#include "validate/validate.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

// The stages, in the order they run. Each needs every stage before it that writes the config
// (Recipe through Invariants); StartupChecks and Emit only read it, so either may be left out.
enum class Stage : unsigned {
  Recipe = 1u << 0,        // resolve the recipe spec, the --base file or the config's header
  BaseConfig = 1u << 1,    // schema defaults + the model's base layers (or the --base file)
  Pipeline = 1u << 2,      // parse, bind and order-check the passes; read the overrides
  Passes = 1u << 3,        // run the passes, invariants after each
  Shortcuts = 1u << 4,     // the launcher shortcuts (--tp ...) and what follows them: one step
  Overrides = 1u << 5,     // the overrides: one more step, as a pass is
  Invariants = 1u << 6,    // every invariant on the finished config
  StartupChecks = 1u << 7, // lib/validate: parallelism arithmetic, packages, waivers
  Emit = 1u << 8,          // the YAML text, with the header that says how to rebuild it
};

// A set of stages: `through(Stage::Invariants) | Stage::Emit`.
class Stages {
public:
  constexpr Stages(Stage s) : bits_(static_cast<unsigned>(s)) {} // NOLINT: a stage is a set
  [[nodiscard]] constexpr bool has(Stage s) const {
    return (bits_ & static_cast<unsigned>(s)) != 0;
  }
  constexpr Stages operator|(Stages other) const { return Stages(bits_ | other.bits_); }
  // Every stage up to and including `last`.
  [[nodiscard]] static constexpr Stages through(Stage last) {
    return Stages((static_cast<unsigned>(last) << 1) - 1);
  }

private:
  constexpr explicit Stages(unsigned bits) : bits_(bits) {}
  unsigned bits_;
};

constexpr Stages through(Stage last) {
  return Stages::through(last);
}
constexpr Stages operator|(Stage a, Stage b) {
  return Stages(a) | b;
}

// What the StartupChecks stage checks against and what it does with failures.
struct StartupChecks {
  // World size: num_gpus, else nodes x gpus_per_node (the GPU's when 0), else the recipe's GPU
  // count; a --base build without either skips the checks that need it. For a recipe, the same
  // count first picks its GPU-count variant where it has one (docs/user-recipes.md).
  std::optional<std::int64_t> num_gpus;
  int nodes = 0;
  int gpus_per_node = 0;
  std::string env_file; // `pip freeze` output or YAML; empty: the package checks are skipped
  bool strict = false;  // warnings are errors
  // Report the invariants too (validate); a build has just checked them.
  bool report_invariants = false;
  // Enforce: warnings and skipped checks are logged, each failure is logged as an `error:` line
  // and the last is thrown. Otherwise the findings are only kept in BuildResult::report.
  bool enforce = true;
  // A launch refuses what the recipe's waivers let through: it would stop once the job starts.
  bool refuse_waived = false;
  // Enforce with one error: the first failure and how many more failed (a sweep puts its run's
  // name in front), instead of logging each and throwing the last.
  bool single_error = false;
};

struct BuildRequest {
  std::string recipe; // model name, or a MODEL@GPU[xN][:PRECISION] spec; empty with base_file
  std::string gpu;
  std::string precision;     // empty: the spec's precision, else bf16; given: must agree with it
  std::string base_file;     // a user's own base YAML instead of a recipe
  std::string pipeline_text; // replaces the recipe's pipeline when set
  std::string profile;       // Megatron-Core profile; empty: the schema's default
  std::vector<std::string> override_files; // overrides files, applied in order before `overrides`
  std::vector<std::string> overrides;
  std::vector<Shortcut> shortcuts; // --tp, --pp, ...: the Shortcuts stage
  // A config qwen-recipe build wrote (and the user edited), taken as written (launch FILE.yaml):
  // its header names the recipe (gpu, precision and profile, when given, win); no pass or
  // override runs, and every invariant must hold, waived ones only with allow_waived.
  std::string config_file;
  bool allow_waived = false; // config_file: the recipe's waivers apply
  StartupChecks checks;
  bool header = true; // Emit: the comment header
};

struct BuildResult {
  Config config;
  Pipeline pipeline;
  std::vector<Override> overrides;
  std::vector<Shortcut> shortcuts;
  std::optional<RecipeSpec> recipe;
  // The qwen-recipe command that reproduces it: shell words, so that pasted into sh it rebuilds
  // the file byte for byte.
  std::string command;
  // StartupChecks: the world size they ran with (absent: unknown) and what they found.
  std::optional<std::int64_t> world_size;
  ValidationReport report;
  std::string yaml; // Emit
};

class Compiler {
public:
  explicit Compiler(std::shared_ptr<const DataSource> data);
  // The catalogue of sources.front() with the rest layered over it (recipe_sources()).
  explicit Compiler(const DataSources& sources);

  [[nodiscard]] const Schema& schema() const { return *schema_; }
  [[nodiscard]] const Catalog& catalog() const { return *catalog_; }
  // recipes/advisories.yaml of the built-in recipes or a whole recipes/ tree (none without it).
  [[nodiscard]] const std::vector<Advisory>& advisories() const { return advisories_; }

  // Runs the stages of `request` that `stages` names, in order. Throws qr::Error naming the
  // file, key or token at fault; `hooks` sees every step that changed the config.
  [[nodiscard]] BuildResult run(const BuildRequest& request, Stages stages,
                                const RunHooks& hooks = {}) const;

  // The world size a config file's header (`# qwen-recipe build MODEL --gpu G ...`, as build
  // writes it) names, as `launch FILE` takes it: the header's --num-gpus, else the recipe's GPU
  // count. Nullopt for a file without such a header (or built from --base). Throws qr::Error
  // naming `source` for a header whose recipe or --num-gpus is not one.
  struct HeaderWorld {
    std::int64_t num_gpus = 0;
    std::string recipe;       // the recipe's id, "qwen35_397b@gb300:bf16"
    bool from_option = false; // the header's --num-gpus, not the recipe's count
  };
  [[nodiscard]] std::optional<HeaderWorld> header_world(std::string_view text,
                                                        const std::string& source) const;

private:
  std::shared_ptr<const Schema> schema_;
  std::shared_ptr<const Catalog> catalog_;
  std::vector<std::string> recipes_dirs_; // --recipes-dir, in order; empty: the built-in recipes
  std::vector<Advisory> advisories_;
};

// Whether a command-line word is a Hydra override (key=value, +key=value, ++key=value, ~key)
// rather than a recipe or a field name.
bool is_override_token(std::string_view word);

// The one split of a subcommand's positional words into the recipe and its overrides (build,
// launch, explain): the first word is the recipe (with a --base file, only when it is no
// override), the rest are overrides; with `fields` (explain), words that are no override name
// fields instead, in any order.
void split_recipe_words(const std::vector<std::string>& words, BuildRequest& request,
                        bool has_base = false, std::vector<std::string>* fields = nullptr);

// The YAML Megatron-Bridge loads, with a comment header that says how to rebuild it.
std::string emit_config(const BuildResult& result, bool header = true);

} // namespace qr
