#include "recipes/catalog.h"

#include "support/error.h"
#include "support/suggest.h"
#include "validate/validate.h"
#include "yaml/scalars.h"

#include <set>

namespace qr {
namespace {

const YamlNode* get(const YamlNode& map, std::string_view key) {
  if (map.kind != YamlNode::Kind::Mapping)
    return nullptr;
  for (const auto& [k, v] : map.entries)
    if (k->text == key)
      return v;
  return nullptr;
}

const YamlNode& need(const YamlDoc& doc, const YamlNode& map, std::string_view key,
                     YamlNode::Kind kind) {
  const YamlNode* n = get(map, key);
  if (n == nullptr || n->kind != kind)
    throw Error(doc.where(map) + ": expected '" + std::string(key) + "'");
  return *n;
}

std::string join(const std::vector<std::string>& items, std::string_view sep = ", ") {
  std::string out;
  for (const std::string& s : items)
    out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

std::vector<std::string> strings(const YamlNode& list) {
  std::vector<std::string> out;
  for (const YamlNode* item : list.items)
    out.push_back(item->text);
  return out;
}

// Expands ${name}: the precision, or a recipe variable (one value, or one per precision).
std::string substitute(const YamlDoc& doc, const YamlNode& at, const std::string& text,
                       const std::string& precision, const YamlNode* vars) {
  std::string out;
  std::size_t last = 0; // end of the text copied to `out`
  std::size_t from = 0; // where to look for the next `${`
  for (std::size_t open; (open = text.find("${", from)) != std::string::npos;) {
    const std::size_t close = text.find('}', open + 2);
    const std::string name =
        close == std::string::npos ? std::string() : text.substr(open + 2, close - open - 2);
    from = open + 2;
    if (!is_identifier(name))
      continue;
    out += text.substr(last, open - last);
    if (name == "precision") {
      out += precision;
    } else {
      const YamlNode* v = vars != nullptr ? get(*vars, name) : nullptr;
      if (v != nullptr && v->kind == YamlNode::Kind::Mapping)
        v = get(*v, precision);
      if (v == nullptr || v->kind != YamlNode::Kind::Scalar)
        throw Error(doc.where(at) + ": pipeline uses ${" + name + "}, which has no value for " +
                    precision);
      out += v->text;
    }
    last = from = close + 1;
  }
  return out + text.substr(last);
}

// A recipe's pipeline text, parsed when the catalogue loads; errors name the recipe file.
Pipeline parse_pipeline(const YamlDoc& doc, const YamlNode& at, const std::string& text) {
  try {
    return Pipeline::parse(text);
  } catch (const Error& e) {
    throw Error(doc.where(at) + ": " + e.what());
  }
}

// The schema's default for `model` is an empty map: a config has a model once it has a class.
bool has_model_section(const Schema& schema, const Value& root) {
  const Value* model = root.as_map().find("model");
  return model != nullptr && schema.class_of(*model) != nullptr;
}

// A `waive:` mapping, sorted into invariants and start-up checks; an unknown name is an error
// at its line.
Waivers waivers_of(const YamlDoc& doc, const YamlNode* node) {
  std::vector<Waiver> listed;
  if (node != nullptr)
    for (const auto& [k, v] : node->entries)
      listed.push_back({k->text, v->text});
  try {
    return classify_waivers(std::move(listed));
  } catch (const Error& e) {
    throw Error(doc.where(*node) + ": " + e.what());
  }
}

} // namespace

std::string RecipeSpec::id() const {
  return model->name + "@" + gpu->name + ":" + precision;
}

std::string RecipeSpec::upstream_name() const {
  const std::string& long_name = model->names.empty() ? model->name : model->names.front();
  return long_name + "_pretrain_" + std::to_string(entry->num_gpus) + "gpu_" + gpu->name + "_" +
         precision + "_config";
}

RecipeRef parse_recipe_ref(std::string_view spec) {
  auto word = [](std::string_view w) {
    return !w.empty() &&
           w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") ==
               std::string_view::npos;
  };
  const std::size_t at = spec.find('@');
  const std::size_t colon = spec.find(':', at == std::string_view::npos ? 0 : at);
  const std::string_view model = spec.substr(0, at);
  const std::string_view gpu =
      at == std::string_view::npos ? std::string_view() : spec.substr(at + 1, colon - at - 1);
  const std::string_view precision =
      colon == std::string_view::npos ? std::string_view("bf16") : spec.substr(colon + 1);
  if (!word(model) || !word(gpu) || !word(precision))
    throw Error("bad recipe spec '" + std::string(spec) +
                "'; write MODEL@GPU[:PRECISION], e.g. qwen35_35b@gb300:fp8mx");
  return {std::string(model), std::string(gpu), std::string(precision)};
}

std::shared_ptr<const Catalog> Catalog::load(std::shared_ptr<const DataSource> data,
                                             std::shared_ptr<const Schema> schema) {
  auto cat = std::make_shared<Catalog>();
  Catalog& c = *cat;
  c.data_ = data;
  c.schema_ = schema;
  auto load_doc = [&](const std::string& path) {
    auto doc = data->parse(path);
    if (doc->root->kind != YamlNode::Kind::Mapping)
      throw Error(doc->source + ": expected a mapping");
    return doc;
  };

  // Models and GPUs
  auto catalog = load_doc("catalog.yaml");
  for (const auto& [k, v] :
       need(*catalog, *catalog->root, "models", YamlNode::Kind::Mapping).entries) {
    ModelInfo m;
    m.name = k->text;
    m.title = need(*catalog, *v, "title", YamlNode::Kind::Scalar).text;
    if (const YamlNode* names = get(*v, "names"))
      m.names = strings(*names);
    m.bases = strings(need(*catalog, *v, "bases", YamlNode::Kind::Sequence));
    for (const std::string& b : m.bases)
      if (!c.model_layers_.count(b)) {
        auto layer = load_doc("models/" + b + ".yaml");
        c.model_layers_.emplace(b, layer);
      }
    c.models_.push_back(std::move(m));
  }
  for (const auto& [k, v] :
       need(*catalog, *catalog->root, "gpus", YamlNode::Kind::Mapping).entries) {
    GpuInfo g;
    g.name = k->text;
    g.title = need(*catalog, *v, "title", YamlNode::Kind::Scalar).text;
    g.gpus_per_node = std::stoi(need(*catalog, *v, "gpus_per_node", YamlNode::Kind::Scalar).text);
    c.gpus_.push_back(std::move(g));
  }

  // Precision blocks are typed when used (they depend on the profile); check names now.
  c.precisions_doc_ = load_doc("precisions.yaml");
  for (const auto& [k, v] :
       need(*c.precisions_doc_, *c.precisions_doc_->root, "precisions", YamlNode::Kind::Mapping)
           .entries)
    c.precision_names_.push_back(k->text);

  // Environment presets
  {
    auto env = load_doc("env.yaml");
    const TypePtr map_type = parse_type("map<int | str>");
    TypingContext ctx{env.get(), schema->default_profile(), true};
    for (const auto& [k, v] : need(*env, *env->root, "presets", YamlNode::Kind::Mapping).entries)
      c.env_presets_.emplace(k->text,
                             schema->coerce(*v, *map_type, "presets." + k->text, ctx).as_map());
    if (!c.env_presets_.count("common"))
      throw Error(env->source + ": needs a 'common' preset");
  }

  // Recipes, one file per GPU. `inherit: <gpu>` takes another GPU's recipe for the same model,
  // optionally with passes inserted before its final env pass.
  struct Inherit {
    std::size_t index;
    std::string from_gpu;
    Pipeline insert;
    std::string where;
  };
  std::vector<Inherit> inherits;
  for (const std::string& path : data->list("gpus")) {
    auto doc = load_doc(path);
    const std::string gpu = need(*doc, *doc->root, "gpu", YamlNode::Kind::Scalar).text;
    (void)c.gpu(gpu);
    for (const auto& [k, v] : need(*doc, *doc->root, "recipes", YamlNode::Kind::Mapping).entries) {
      RecipeEntry r;
      r.model = c.model(k->text).name;
      r.gpu = gpu;
      r.num_gpus = std::stoi(need(*doc, *v, "num_gpus", YamlNode::Kind::Scalar).text);
      r.source = need(*doc, *v, "source", YamlNode::Kind::Scalar).text;
      if (const YamlNode* from = get(*v, "inherit")) {
        const YamlNode* insert = get(*v, "insert_before_env");
        inherits.push_back({c.recipes_.size(), from->text,
                            insert ? parse_pipeline(*doc, *insert, insert->text) : Pipeline{},
                            doc->where(*from)});
        c.recipes_.push_back(std::move(r));
        continue;
      }
      const YamlNode& pipeline = need(*doc, *v, "pipeline", YamlNode::Kind::Scalar);
      const YamlNode* vars = get(*v, "vars");
      const Waivers recipe_waivers = waivers_of(*doc, get(*v, "waive"));
      const YamlNode* precisions = get(*v, "precisions");
      if (precisions == nullptr)
        throw Error(doc->where(*v) + ": recipe needs 'precisions'");
      auto add = [&](const std::string& p, const YamlNode* spec) {
        if (std::find(c.precision_names_.begin(), c.precision_names_.end(), p) ==
            c.precision_names_.end())
          throw Error(doc->where(*precisions) + ": unknown precision '" + p + "'");
        PrecisionVariant pv;
        const YamlNode* own = spec != nullptr ? get(*spec, "pipeline") : nullptr;
        const YamlNode& text = own ? *own : pipeline;
        pv.pipeline = parse_pipeline(*doc, text, substitute(*doc, text, text.text, p, vars));
        pv.waivers = recipe_waivers;
        for (Waiver& w : waivers_of(*doc, spec != nullptr ? get(*spec, "waive") : nullptr).listed)
          pv.waivers.listed.push_back(std::move(w));
        r.precisions.emplace(p, std::move(pv));
      };
      if (precisions->kind == YamlNode::Kind::Sequence)
        for (const YamlNode* p : precisions->items)
          add(p->text, nullptr);
      else
        for (const auto& [pk, pv] : precisions->entries)
          add(pk->text, pv);
      for (const RecipeEntry& other : c.recipes_)
        if (other.model == r.model && other.gpu == r.gpu)
          throw Error(doc->where(*k) + ": recipe " + r.model + " on " + gpu + " is defined twice");
      c.recipes_.push_back(std::move(r));
    }
  }
  for (const Inherit& in : inherits) {
    RecipeEntry& r = c.recipes_[in.index];
    auto parent = std::find_if(c.recipes_.begin(), c.recipes_.end(), [&](const RecipeEntry& p) {
      return p.model == r.model && p.gpu == in.from_gpu && !p.precisions.empty();
    });
    if (parent == c.recipes_.end())
      throw Error(in.where + ": no " + in.from_gpu + " recipe for " + r.model + " to inherit");
    r.precisions = parent->precisions;
    if (in.insert.passes().empty())
      continue;
    for (auto& [p, variant] : r.precisions) {
      const std::optional<std::size_t> env = variant.pipeline.last_index_of("env");
      if (!env)
        throw Error(in.where + ": the " + in.from_gpu + " " + p +
                    " pipeline has no env pass to insert before");
      variant.pipeline.insert(*env, in.insert);
    }
  }
  return cat;
}

const ModelInfo& Catalog::model(std::string_view name) const {
  std::vector<std::string> all;
  for (const ModelInfo& m : models_) {
    if (m.name == name || std::find(m.names.begin(), m.names.end(), name) != m.names.end())
      return m;
    all.push_back(m.name);
  }
  std::vector<std::string> every = all;
  for (const ModelInfo& m : models_)
    every.insert(every.end(), m.names.begin(), m.names.end());
  throw Error("unknown recipe '" + std::string(name) + "'" + did_you_mean(name, every) +
              "; recipes: " + join(all));
}

const GpuInfo& Catalog::gpu(std::string_view name) const {
  std::vector<std::string> all;
  for (const GpuInfo& g : gpus_) {
    if (g.name == name)
      return g;
    all.push_back(g.name);
  }
  throw Error("unknown GPU '" + std::string(name) + "'" + did_you_mean(name, all) +
              "; GPUs: " + join(all));
}

RecipeSpec Catalog::resolve(std::string_view model_name, std::string_view gpu_name,
                            std::string_view precision) const {
  RecipeSpec spec;
  spec.model = &model(model_name);
  spec.gpu = &gpu(gpu_name);
  if (std::find(precision_names_.begin(), precision_names_.end(), precision) ==
      precision_names_.end())
    throw Error("unknown precision '" + std::string(precision) + "'" +
                did_you_mean(precision, precision_names_) +
                "; precisions: " + join(precision_names_));
  spec.precision = std::string(precision);
  std::vector<std::string> gpus_with_model;
  for (const RecipeEntry& r : recipes_) {
    if (r.model != spec.model->name)
      continue;
    gpus_with_model.push_back(r.gpu);
    if (r.gpu != spec.gpu->name)
      continue;
    spec.entry = &r;
    auto it = r.precisions.find(spec.precision);
    if (it == r.precisions.end()) {
      std::vector<std::string> have;
      for (const auto& [p, v] : r.precisions)
        have.push_back(p);
      std::string hint;
      if (spec.precision == "nvfp4")
        hint = "; no upstream Qwen-VL recipe uses nvfp4: to try it, take the bf16 pipeline "
               "(--print-pipeline) and pass it with precision{p=nvfp4} to --pipeline";
      throw Error(spec.model->name + " on " + spec.gpu->name + " has no " + spec.precision +
                  " recipe; it has " + join(have) + hint);
    }
    spec.variant = &it->second;
    return spec;
  }
  throw Error(spec.model->name + " has no recipe for " + spec.gpu->name + "; it has " +
              (gpus_with_model.empty() ? std::string("none") : join(gpus_with_model)));
}

std::vector<RecipeSpec> Catalog::all() const {
  std::vector<RecipeSpec> out;
  for (const RecipeEntry& r : recipes_)
    for (const auto& [p, v] : r.precisions)
      out.push_back(resolve(r.model, r.gpu, p));
  return out;
}

Value Catalog::base_config(const ModelInfo& m, std::string_view profile) const {
  Value root = schema_->instantiate(schema_->root(), profile);
  for (const std::string& b : m.bases) {
    const YamlDoc& layer = *model_layers_.at(b);
    TypingContext ctx{&layer, std::string(profile), true, true};
    schema_->overlay(root, *layer.root, "", ctx);
  }
  if (!has_model_section(*schema_, root))
    throw Error("model " + m.name + ": its base layers give no 'model' section");
  return root;
}

Value Catalog::base_from_file(const std::string& path, std::string_view profile) const {
  return base_from_doc(*read_yaml_file(path), profile);
}

Value Catalog::base_from_doc(const YamlDoc& doc, std::string_view profile) const {
  if (doc.root->kind != YamlNode::Kind::Mapping)
    throw Error(
        doc.where(*doc.root) + ": expected a mapping (a Megatron-Bridge config), got " +
        (doc.root->kind == YamlNode::Kind::Sequence ? "a list" : "'" + clip(doc.root->text) + "'"));
  Value root = schema_->instantiate(schema_->root(), profile);
  TypingContext ctx{&doc, std::string(profile), true, true};
  schema_->overlay(root, *doc.root, "", ctx);
  if (!has_model_section(*schema_, root))
    throw Error(doc.source +
                ": no 'model' section; a base config needs model._target_ and its fields");
  return root;
}

Value Catalog::precision_block(std::string_view precision, const Config& config) const {
  const YamlDoc& doc = *precisions_doc_;
  const YamlNode& all = need(doc, *doc.root, "precisions", YamlNode::Kind::Mapping);
  // Resolve the `base:` chain, then overlay from the root of the chain.
  std::vector<const YamlNode*> chain;
  std::set<std::string> seen;
  std::string name(precision);
  while (true) {
    const YamlNode* block = get(all, name);
    if (block == nullptr)
      throw Error("precision '" + name + "' is not in " + doc.source);
    if (!seen.insert(name).second)
      throw Error(doc.source + ": precision '" + name + "' inherits from itself");
    chain.push_back(block);
    const YamlNode* base = get(*block, "base");
    if (base == nullptr)
      break;
    name = base->text;
  }
  Value block =
      schema_->instantiate(*schema_->class_named("MixedPrecisionConfig"), config.profile());
  TypingContext ctx{&doc, config.profile(), true};
  for (auto it = chain.rbegin(); it != chain.rend(); ++it)
    schema_->overlay(block, need(doc, **it, "fields", YamlNode::Kind::Mapping), "mixed_precision",
                     ctx);
  return block;
}

const Map& Catalog::env_preset(std::string_view name) const {
  auto it = env_presets_.find(name);
  if (it == env_presets_.end()) {
    std::vector<std::string> names;
    for (const auto& [k, v] : env_presets_)
      names.push_back(k);
    throw Error("unknown env preset '" + std::string(name) + "'" + did_you_mean(name, names) +
                "; presets: " + join(names));
  }
  return it->second;
}

} // namespace qr
