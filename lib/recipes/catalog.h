// The recipe catalogue, read from recipes/: models (base layers and names), GPUs, the recipes
// each GPU has (model x precision -> pipeline), precision blocks and environment presets.
#pragma once

#include "config/config.h"
#include "data/data_source.h"
#include "passes/pipeline.h"
#include "passes/presets.h"
#include "schema/schema.h"

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct ModelInfo {
  std::string name;               // short name: qwen35_397b
  std::string title;              // Qwen3.5-VL 397B-A17B
  std::vector<std::string> names; // long names and aliases also accepted
  std::vector<std::string> bases; // recipes/models/<base>.yaml layers, applied in order
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

struct RecipeEntry {
  std::string model; // short name
  std::string gpu;
  int num_gpus = 0;
  std::string source; // provenance, one line
  std::map<std::string, PrecisionVariant> precisions;
};

// One buildable recipe: model x GPU x precision.
struct RecipeSpec {
  const ModelInfo* model = nullptr;
  const GpuInfo* gpu = nullptr;
  std::string precision;
  const RecipeEntry* entry = nullptr;
  const PrecisionVariant* variant = nullptr;

  // "qwen35_397b@gb300:bf16"
  [[nodiscard]] std::string id() const;
  // Megatron-Bridge's function name: qwen35_vl_397b_a17b_pretrain_64gpu_gb300_bf16_config.
  [[nodiscard]] std::string upstream_name() const;
};

class Catalog : public Presets {
public:
  static std::shared_ptr<const Catalog> load(std::shared_ptr<const DataSource> data,
                                             std::shared_ptr<const Schema> schema);

  [[nodiscard]] const std::vector<ModelInfo>& models() const { return models_; }
  [[nodiscard]] const std::vector<GpuInfo>& gpus() const { return gpus_; }
  [[nodiscard]] const std::vector<std::string>& precisions() const { return precision_names_; }
  [[nodiscard]] const std::vector<RecipeEntry>& recipes() const { return recipes_; }

  // Look-ups by any accepted name; throw qr::Error listing what exists.
  [[nodiscard]] const ModelInfo& model(std::string_view name) const;
  [[nodiscard]] const GpuInfo& gpu(std::string_view name) const;
  [[nodiscard]] RecipeSpec resolve(std::string_view model, std::string_view gpu,
                                   std::string_view precision) const;
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

private:
  std::shared_ptr<const DataSource> data_;
  std::shared_ptr<const Schema> schema_;
  std::vector<ModelInfo> models_;
  std::vector<GpuInfo> gpus_;
  std::vector<RecipeEntry> recipes_;
  std::vector<std::string> precision_names_;
  std::map<std::string, Map, std::less<>> env_presets_;
  std::map<std::string, std::shared_ptr<YamlDoc>, std::less<>> model_layers_;
  std::shared_ptr<YamlDoc> precisions_doc_;
};

// Parses a recipe spec `model@gpu[:precision]`; precision defaults to bf16.
struct RecipeRef {
  std::string model, gpu, precision;
};
RecipeRef parse_recipe_ref(std::string_view spec);

} // namespace qr
