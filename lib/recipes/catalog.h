// The recipe catalogue, read from recipes/: models (base layers and names), GPUs, the recipes
// each GPU has (model x GPU count x precision -> pipeline), precision blocks and environment
// presets; then the users' --recipes-dir overlays, in order (docs/user-recipes.md).
#pragma once

#include "config/config.h"
#include "data/data_source.h"
#include "passes/pipeline.h"
#include "passes/presets.h"
#include "schema/schema.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct ModelInfo {
  std::string name;               // short name: qwen35_397b
  std::string title;              // Qwen3.5-VL 397B-A17B
  std::vector<std::string> names; // long names and aliases also accepted
  std::vector<std::string> bases; // recipes/models/<base>.yaml layers, applied in order
  std::string upstream;           // Megatron-Bridge's model recipe name (launch's -mr)
  std::string origin;             // where it is defined: file:line
  int layer = 0;                  // 0: the built-in recipes; n: the nth --recipes-dir
};

struct GpuInfo {
  std::string name;
  std::string title;
  int gpus_per_node = 8;
};

struct PrecisionVariant {
  Pipeline pipeline; // parsed, with ${vars} substituted; bound per build
  Waivers waivers;   // the recipe's and the precision's, sorted when the catalogue loads
};

// One recipe: a model on a GPU at a GPU count. The first recipe of a model on a GPU (the
// upstream one, for the built-in models) is its default; the others are GPU-count variants.
struct RecipeEntry {
  std::string model; // short name
  std::string gpu;
  int num_gpus = 0;
  bool is_default = true; // the recipe a spec without xN means
  std::string source;     // provenance, one line
  std::string origin;     // where it is defined: file:line
  int layer = 0;          // 0: the built-in recipes; n: the nth --recipes-dir
  std::map<std::string, PrecisionVariant> precisions;

  // "qwen35_397b@gb300" for a default recipe, "qwen35_397b@gb300x128" for a variant.
  [[nodiscard]] std::string key() const;
};

// One buildable recipe: model x GPU x precision.
struct RecipeSpec {
  const ModelInfo* model = nullptr;
  const GpuInfo* gpu = nullptr;
  std::string precision;
  const RecipeEntry* entry = nullptr;
  const PrecisionVariant* variant = nullptr;

  // "qwen35_397b@gb300:bf16"; a GPU-count variant carries its count, "qwen35_397b@gb300x128:bf16"
  [[nodiscard]] std::string id() const;
  // Megatron-Bridge's function name: qwen35_vl_397b_a17b_pretrain_64gpu_gb300_bf16_config.
  [[nodiscard]] std::string upstream_name() const;
};

class Catalog : public Presets {
public:
  // The catalogue of sources.front() (the built-in recipes or a whole recipes/ tree), with the
  // other sources layered over it in order (recipe_sources() makes the list).
  static std::shared_ptr<const Catalog> load(const DataSources& sources,
                                             std::shared_ptr<const Schema> schema);

  [[nodiscard]] const std::vector<ModelInfo>& models() const { return models_; }
  [[nodiscard]] const std::vector<GpuInfo>& gpus() const { return gpus_; }
  [[nodiscard]] const std::vector<std::string>& precisions() const { return precision_names_; }
  [[nodiscard]] const std::vector<RecipeEntry>& recipes() const { return recipes_; }

  // Look-ups by any accepted name; throw qr::Error listing what exists.
  [[nodiscard]] const ModelInfo& model(std::string_view name) const;
  [[nodiscard]] const GpuInfo& gpu(std::string_view name) const;
  // num_gpus 0 is the default recipe; another count picks the variant for it, or, unless
  // `exact`, the default recipe when there is none (launch then rescales it, as -ng does).
  [[nodiscard]] RecipeSpec resolve(std::string_view model, std::string_view gpu,
                                   std::string_view precision, int num_gpus = 0,
                                   bool exact = true) const;
  // Every recipe x precision, in catalogue order.
  [[nodiscard]] std::vector<RecipeSpec> all() const;

  // The model's base config: schema defaults with its base layers overlaid.
  [[nodiscard]] Value base_config(const ModelInfo& model, std::string_view profile) const;
  // A user's base YAML file, typed by the schema (missing fields take their defaults).
  [[nodiscard]] Value base_from_file(const std::string& path, std::string_view profile) const;
  // The same from a parsed document.
  [[nodiscard]] Value base_from_doc(const YamlDoc& doc, std::string_view profile) const;

  // A fresh MixedPrecisionConfig with the named block's fields (recipes/precisions.yaml).
  [[nodiscard]] Value precision_block(std::string_view precision,
                                      const Config& config) const override;
  // Environment presets (recipes/env.yaml); "common" is always applied first.
  [[nodiscard]] const Map& env_preset(std::string_view name) const override;

  [[nodiscard]] const Schema& schema() const { return *schema_; }
  // The file of a --recipes-dir's base layer (DIR/models/NAME.yaml); empty for a built-in one.
  [[nodiscard]] std::string user_layer_source(std::string_view name) const;

private:
  void load_base(const DataSource& data);
  // One --recipes-dir: its models, base layers and recipes (lib/recipes/overlay.cpp).
  void add_overlay(const DataSource& data, int layer);
  // Resolves recipes that inherit another's pipelines, in order.
  struct Inherit {
    std::size_t index;
    std::string from_model, from_gpu;
    int from_num_gpus = 0; // 0: the default recipe
    Pipeline insert;
    std::string where;
  };
  void resolve_inherits(const std::vector<Inherit>& inherits);
  static void inherit_from(RecipeEntry& r, const Inherit& in, const RecipeEntry& parent);
  // A recipe's body (built-in or overlay): pipelines per precision, or what it inherits.
  void read_recipe_body(const YamlDoc& doc, const YamlNode& body, RecipeEntry& r,
                        std::vector<Inherit>& inherits, std::size_t index) const;
  [[nodiscard]] const RecipeEntry* find_recipe(std::string_view model, std::string_view gpu,
                                               int num_gpus) const;

  std::shared_ptr<const DataSource> data_;
  std::shared_ptr<const Schema> schema_;
  std::vector<ModelInfo> models_;
  std::vector<GpuInfo> gpus_;
  std::vector<RecipeEntry> recipes_;
  std::vector<std::string> precision_names_;
  std::map<std::string, Map, std::less<>> env_presets_;
  std::map<std::string, std::shared_ptr<YamlDoc>, std::less<>> model_layers_;
  std::set<std::string, std::less<>> builtin_layers_; // names a --recipes-dir may not reuse
  std::shared_ptr<YamlDoc> precisions_doc_;
};

// Parses a recipe spec `model@gpu[xN][:precision]`; precision defaults to bf16, N (the GPU
// count of a variant) to 0, the default recipe.
struct RecipeRef {
  std::string model, gpu, precision;
  int num_gpus = 0;
};
RecipeRef parse_recipe_ref(std::string_view spec);

} // namespace qr
