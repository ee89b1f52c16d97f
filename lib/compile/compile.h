// The compiler's front door: recipe (or base file) + pipeline + overrides -> checked config.
// The CLI, the tests and the benchmark all build through here.
#pragma once

#include "config/config.h"
#include "passes/pipeline.h"
#include "recipes/catalog.h"
#include "validate/validate.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace qr {

struct BuildRequest {
  std::string recipe; // model name, or a MODEL@GPU[:PRECISION] spec; empty with base_file
  std::string gpu;
  std::string precision;     // empty: the spec's precision, else bf16; given: must agree with it
  std::string base_file;     // a user's own base YAML instead of a recipe
  std::string pipeline_text; // replaces the recipe's pipeline when set
  std::string profile;       // Megatron-Core profile; empty: the schema's default
  std::vector<std::string> override_files; // overrides files, applied in order before `overrides`
  std::vector<std::string> overrides;
};

struct BuildResult {
  Config config;
  Pipeline pipeline;
  std::vector<Override> overrides;
  std::optional<RecipeSpec> recipe;
  // The qwen-recipe command that reproduces it: shell words, so that pasted into sh it rebuilds
  // the file byte for byte.
  std::string command;
};

class Compiler {
public:
  explicit Compiler(std::shared_ptr<const DataSource> data);

  [[nodiscard]] const Schema& schema() const { return *schema_; }
  [[nodiscard]] const Catalog& catalog() const { return *catalog_; }

  // Resolves the recipe and parses, binds and order-checks the pipeline without running it.
  [[nodiscard]] BuildResult prepare(const BuildRequest& request) const;
  // prepare(), then runs the passes and the overrides, checking invariants.
  [[nodiscard]] BuildResult build(const BuildRequest& request, const RunHooks& hooks = {}) const;

private:
  std::shared_ptr<const Schema> schema_;
  std::shared_ptr<const Catalog> catalog_;
  std::string recipes_dir_; // empty: the built-in recipes
};

// The YAML Megatron-Bridge loads, with a comment header that says how to rebuild it.
std::string emit_config(const BuildResult& result, bool header = true);

// The options a build's own validation uses: the recipe's GPU count as the world size, and its
// waivers when the build ran the recipe's own pipeline.
ValidateOptions validate_options_for(const BuildRequest& request, const BuildResult& result);

} // namespace qr
