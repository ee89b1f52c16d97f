#include "recipes/catalog.h"

#include "support/error.h"
#include "support/script_text.h"
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

// What a pipeline's ${...} may expand it to: real pipelines are a few hundred bytes, and a small
// file repeating a long variable must not make one of hundreds of megabytes.
constexpr std::size_t kMaxPipelineExpansion = std::size_t{64} << 10;

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
    if (out.size() > kMaxPipelineExpansion)
      throw Error(doc.where(at) + ": pipeline grows past " +
                  std::to_string(kMaxPipelineExpansion >> 10) +
                  " KiB as its ${...} are filled in (${" + escaped_for_message(name.substr(0, 64)) +
                  "} among them); a pipeline is a few lines: use fewer or shorter variables");
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

// The keys a recipe may have: a built-in one, and a user's (its key gives the GPU count).
const std::vector<std::string> kBuiltinRecipeKeys = {"num_gpus",          "source",   "inherit",
                                                     "insert_before_env", "pipeline", "vars",
                                                     "precisions",        "waive"};
const std::vector<std::string> kUserRecipeKeys = {
    "replace", "source", "inherit", "insert_before_env", "pipeline", "vars", "precisions", "waive"};

// Refuses a key `map` may not have, naming it, with a "did you mean" and the keys it may have.
void check_keys(const YamlDoc& doc, const YamlNode& map, const std::vector<std::string>& allowed,
                const std::string& what) {
  if (map.kind != YamlNode::Kind::Mapping)
    throw Error(doc.where(map) + ": " + what + " must be a mapping");
  for (const auto& [k, v] : map.entries)
    if (std::find(allowed.begin(), allowed.end(), k->text) == allowed.end())
      throw Error(doc.where(*k) + ": unknown key '" + escaped_for_message(k->text) + "' in " +
                  what + did_you_mean(k->text, allowed) + "; keys: " + join(allowed));
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

std::string RecipeEntry::key() const {
  return model + "@" + gpu + (is_default ? std::string() : "x" + std::to_string(num_gpus));
}

std::string RecipeSpec::id() const {
  return model->name + "@" + gpu->name +
         (entry != nullptr && !entry->is_default ? "x" + std::to_string(entry->num_gpus)
                                                 : std::string()) +
         ":" + precision;
}

std::string RecipeSpec::upstream_name() const {
  return model->upstream + "_pretrain_" + std::to_string(entry->num_gpus) + "gpu_" + gpu->name +
         "_" + precision + "_config";
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
  std::string_view gpu =
      at == std::string_view::npos ? std::string_view() : spec.substr(at + 1, colon - at - 1);
  const std::string_view precision =
      colon == std::string_view::npos ? std::string_view("bf16") : spec.substr(colon + 1);
  if (!word(model) || !word(gpu) || !word(precision))
    throw Error("bad recipe spec '" + std::string(spec) +
                "'; write MODEL@GPU[xN][:PRECISION], e.g. qwen35_35b@gb300:fp8mx or "
                "qwen35_397b@gb300x128");
  // gb300x128: the variant of the recipe for 128 GPUs.
  int num_gpus = 0;
  const std::size_t x = gpu.rfind('x');
  if (x != std::string_view::npos && x > 0 && x + 1 < gpu.size() &&
      gpu.find_first_not_of("0123456789", x + 1) == std::string_view::npos) {
    const std::string_view count = gpu.substr(x + 1);
    if (count[0] == '0' || count.size() > 9)
      throw Error("bad recipe spec '" + std::string(spec) + "': the GPU count '" +
                  std::string(count) + "' must be a whole number from 1 to 999999999 without " +
                  "leading zeros");
    num_gpus = std::stoi(std::string(count));
    gpu = gpu.substr(0, x);
  }
  return {std::string(model), std::string(gpu), std::string(precision), num_gpus};
}

std::shared_ptr<const Catalog> Catalog::load(const DataSources& sources,
                                             std::shared_ptr<const Schema> schema) {
  auto cat = std::make_shared<Catalog>();
  cat->data_ = sources.front();
  cat->schema_ = std::move(schema);
  cat->load_base(*sources.front());
  for (std::size_t i = 1; i < sources.size(); ++i)
    cat->add_overlay(*sources[i], static_cast<int>(i));
  return cat;
}

const RecipeEntry* Catalog::find_recipe(std::string_view model, std::string_view gpu,
                                        int num_gpus) const {
  for (const RecipeEntry& r : recipes_)
    if (r.model == model && r.gpu == gpu && (num_gpus == 0 ? r.is_default : r.num_gpus == num_gpus))
      return &r;
  return nullptr;
}

void Catalog::read_recipe_body(const YamlDoc& doc, const YamlNode& v, RecipeEntry& r,
                               std::vector<Inherit>& inherits, std::size_t index) const {
  // `inherit: <gpu>` takes another GPU's recipe for the same model, `inherit: MODEL@GPU[xN]`
  // any recipe's, optionally with passes inserted before its final env pass.
  if (const YamlNode* from = get(v, "inherit")) {
    Inherit in{index, r.model, from->text, 0, {}, doc.where(*from)};
    if (from->text.find('@') != std::string::npos) {
      if (from->text.find(':') != std::string::npos)
        throw Error(in.where + ": inherit '" + from->text +
                    "' names a precision; a recipe inherits every precision: write MODEL@GPU[xN]");
      RecipeRef ref;
      try {
        ref = parse_recipe_ref(from->text);
        in.from_model = model(ref.model).name;
      } catch (const Error& e) {
        throw Error(in.where + ": " + e.what());
      }
      in.from_gpu = ref.gpu;
      in.from_num_gpus = ref.num_gpus;
    }
    if (const YamlNode* insert = get(v, "insert_before_env"))
      in.insert = parse_pipeline(doc, *insert, insert->text);
    for (const char* own : {"pipeline", "precisions", "vars", "waive"})
      if (const YamlNode* n = get(v, own))
        throw Error(doc.where(*n) + ": recipe " + r.key() + " inherits " + from->text +
                    ", so it takes its '" + own + "' from there; drop one of the two");
    inherits.push_back(std::move(in));
    return;
  }
  if (const YamlNode* insert = get(v, "insert_before_env"))
    throw Error(doc.where(*insert) + ": 'insert_before_env' needs 'inherit' (it inserts passes "
                                     "into the inherited pipelines)");
  const YamlNode& pipeline = need(doc, v, "pipeline", YamlNode::Kind::Scalar);
  const YamlNode* vars = get(v, "vars");
  const Waivers recipe_waivers = waivers_of(doc, get(v, "waive"));
  const YamlNode* precisions = get(v, "precisions");
  if (precisions == nullptr)
    throw Error(doc.where(v) + ": recipe needs 'precisions'");
  auto add = [&](const std::string& p, const YamlNode* spec) {
    if (std::find(precision_names_.begin(), precision_names_.end(), p) == precision_names_.end())
      throw Error(doc.where(*precisions) + ": unknown precision '" + p + "'");
    if (spec != nullptr && spec->kind == YamlNode::Kind::Mapping)
      check_keys(doc, *spec, {"pipeline", "waive"}, "precision " + p + " of " + r.key());
    PrecisionVariant pv;
    const YamlNode* own = spec != nullptr ? get(*spec, "pipeline") : nullptr;
    const YamlNode& text = own ? *own : pipeline;
    pv.pipeline = parse_pipeline(doc, text, substitute(doc, text, text.text, p, vars));
    pv.waivers = recipe_waivers;
    for (Waiver& w : waivers_of(doc, spec != nullptr ? get(*spec, "waive") : nullptr).listed)
      pv.waivers.listed.push_back(std::move(w));
    r.precisions.emplace(p, std::move(pv));
  };
  if (precisions->kind == YamlNode::Kind::Sequence)
    for (const YamlNode* p : precisions->items)
      add(p->text, nullptr);
  else
    for (const auto& [pk, pv] : precisions->entries)
      add(pk->text, pv);
}

void Catalog::resolve_inherits(const std::vector<Inherit>& inherits) {
  for (const Inherit& in : inherits) {
    const RecipeEntry* parent = find_recipe(in.from_model, in.from_gpu, in.from_num_gpus);
    if (parent == nullptr || parent->precisions.empty())
      throw Error(
          in.where + ": no " + in.from_gpu +
          (in.from_num_gpus > 0 ? " " + std::to_string(in.from_num_gpus) + "-GPU" : std::string()) +
          " recipe for " + in.from_model + " to inherit");
    inherit_from(recipes_[in.index], in, *parent);
  }
}

void Catalog::inherit_from(RecipeEntry& r, const Inherit& in, const RecipeEntry& parent) {
  r.precisions = parent.precisions;
  if (in.insert.passes().empty())
    return;
  for (auto& [p, variant] : r.precisions) {
    const std::optional<std::size_t> env = variant.pipeline.last_index_of("env");
    if (!env)
      throw Error(in.where + ": the " + in.from_gpu + " " + p +
                  " pipeline has no env pass to insert before");
    variant.pipeline.insert(*env, in.insert);
  }
}

void Catalog::load_base(const DataSource& data) {
  auto load_doc = [&](const std::string& path) {
    auto doc = data.parse(path);
    if (doc->root->kind != YamlNode::Kind::Mapping)
      throw Error(doc->source + ": expected a mapping");
    return doc;
  };

  // Models and GPUs
  auto catalog = load_doc("catalog.yaml");
  for (const auto& [k, v] :
       need(*catalog, *catalog->root, "models", YamlNode::Kind::Mapping).entries) {
    check_keys(*catalog, *v, {"title", "names", "bases"}, "model " + k->text);
    ModelInfo m;
    m.name = k->text;
    m.title = need(*catalog, *v, "title", YamlNode::Kind::Scalar).text;
    if (const YamlNode* names = get(*v, "names"))
      m.names = strings(*names);
    m.upstream = m.names.empty() ? m.name : m.names.front();
    m.origin = catalog->where(*k);
    m.bases = strings(need(*catalog, *v, "bases", YamlNode::Kind::Sequence));
    for (const std::string& b : m.bases)
      if (!model_layers_.count(b)) {
        auto layer = load_doc("models/" + b + ".yaml");
        model_layers_.emplace(b, layer);
      }
    models_.push_back(std::move(m));
  }
  for (const auto& [k, v] :
       need(*catalog, *catalog->root, "gpus", YamlNode::Kind::Mapping).entries) {
    check_keys(*catalog, *v, {"title", "gpus_per_node"}, "GPU " + k->text);
    GpuInfo g;
    g.name = k->text;
    g.title = need(*catalog, *v, "title", YamlNode::Kind::Scalar).text;
    g.gpus_per_node = std::stoi(need(*catalog, *v, "gpus_per_node", YamlNode::Kind::Scalar).text);
    gpus_.push_back(std::move(g));
  }

  // Precision blocks are typed when used (they depend on the profile); check names now.
  precisions_doc_ = load_doc("precisions.yaml");
  for (const auto& [k, v] :
       need(*precisions_doc_, *precisions_doc_->root, "precisions", YamlNode::Kind::Mapping)
           .entries)
    precision_names_.push_back(k->text);

  // Environment presets
  {
    auto env = load_doc("env.yaml");
    const TypePtr map_type = parse_type("map<int | str>");
    TypingContext ctx{env.get(), schema_->default_profile(), true};
    for (const auto& [k, v] : need(*env, *env->root, "presets", YamlNode::Kind::Mapping).entries)
      env_presets_.emplace(k->text,
                           schema_->coerce(*v, *map_type, "presets." + k->text, ctx).as_map());
    if (!env_presets_.count("common"))
      throw Error(env->source + ": needs a 'common' preset");
  }

  // Recipes, one file per GPU.
  std::vector<Inherit> inherits;
  for (const std::string& path : data.list("gpus")) {
    auto doc = load_doc(path);
    const std::string gpu_name = need(*doc, *doc->root, "gpu", YamlNode::Kind::Scalar).text;
    (void)gpu(gpu_name);
    for (const auto& [k, v] : need(*doc, *doc->root, "recipes", YamlNode::Kind::Mapping).entries) {
      check_keys(*doc, *v, kBuiltinRecipeKeys, "recipe " + k->text + " on " + gpu_name);
      RecipeEntry r;
      r.model = model(k->text).name;
      r.gpu = gpu_name;
      r.num_gpus = std::stoi(need(*doc, *v, "num_gpus", YamlNode::Kind::Scalar).text);
      r.source = need(*doc, *v, "source", YamlNode::Kind::Scalar).text;
      r.origin = doc->where(*k);
      if (find_recipe(r.model, r.gpu, r.num_gpus) != nullptr)
        throw Error(doc->where(*k) + ": recipe " + r.model + " on " + gpu_name +
                    " is defined twice");
      r.is_default = find_recipe(r.model, r.gpu, 0) == nullptr;
      read_recipe_body(*doc, *v, r, inherits, recipes_.size());
      recipes_.push_back(std::move(r));
    }
  }
  resolve_inherits(inherits);
  for (const auto& [name, doc] : model_layers_)
    builtin_layers_.insert(name);
}

// --- Overlays: a --recipes-dir of the user's own files (docs/user-recipes.md) ---

namespace {

// A title or source is shown in tables (list, docs): one printable line, which is text that the
// one escaping of messages leaves as it is (no line break of any kind, no control character).
void one_line(const YamlDoc& doc, const YamlNode& n, const std::string& what) {
  if (const std::string shown = escaped_for_message(n.text); shown != n.text)
    throw Error(doc.where(n) + ": " + what + " '" + shown +
                "' holds a line break or control character; it is shown in tables: one line");
}

// `replace: true` says that a user's entry changes one that exists; anything else is refused.
bool replace_flag(const YamlDoc& doc, const YamlNode& entry) {
  const YamlNode* n = get(entry, "replace");
  if (n == nullptr)
    return false;
  if (n->kind != YamlNode::Kind::Scalar || (n->text != "true" && n->text != "false"))
    throw Error(doc.where(*n) + ": 'replace' is true or false");
  return n->text == "true";
}

} // namespace

void Catalog::add_overlay(const DataSource& data, int layer) {
  // The built-in layout (gpus/<gpu>.yaml) copied into a folder: its files would go unread.
  if (const std::vector<std::string> gpu_files = data.list("gpus"); !gpu_files.empty())
    throw Error(data.describe(gpu_files.front()) +
                ": a --recipes-dir has no gpus/ folder; put your recipe files directly in " +
                data.directory() + ", keyed MODEL@GPUxN (see docs/user-recipes.md)");
  const std::vector<std::string> files = data.list("");
  const std::vector<std::string> layer_files = data.list("models");
  if (files.empty())
    throw Error(data.directory() +
                ": no .yaml files; a --recipes-dir holds YAML files with 'models:' and "
                "'recipes:' (see docs/user-recipes.md)");
  // The overlay's base layers (models/NAME.yaml); a name may not shadow one that exists.
  std::set<std::string> own_layers;
  for (const std::string& path : layer_files) {
    const std::string name = path.substr(7, path.size() - 7 - 5); // models/NAME.yaml
    if (!is_identifier(name))
      throw Error(data.describe(path) +
                  ": a base layer's name is letters, digits and '_' (it is how 'bases' names it)");
    // An earlier --recipes-dir's layer of the same name is replaced (a later folder wins).
    if (builtin_layers_.count(name) != 0)
      throw Error(data.describe(path) + ": the built-in base layer " +
                  model_layers_.at(name)->source + " has this name; give yours another");
    model_layers_.erase(name);
    own_layers.insert(name);
  }
  std::vector<Inherit> inherits;
  for (const std::string& path : files) {
    auto doc = data.parse(path);
    const YamlNode& root = *doc->root;
    if (root.kind != YamlNode::Kind::Mapping)
      throw Error(doc->where(root) + ": expected a mapping with 'models:' and/or 'recipes:'");
    // The layout of recipes/gpus/*.yaml, copied: say how a user file differs.
    if (const YamlNode* g = get(root, "gpu"))
      throw Error(doc->where(*g) +
                  ": a --recipes-dir file has no 'gpu:'; key each recipe MODEL@GPUxN under "
                  "'recipes:', e.g. qwen35_397b@gb300x128 (see docs/user-recipes.md)");
    check_keys(*doc, root, {"models", "recipes"}, "a --recipes-dir file");

    if (const YamlNode* models = get(root, "models")) {
      if (models->kind != YamlNode::Kind::Mapping)
        throw Error(doc->where(*models) + ": 'models' is a mapping of model keys");
      for (const auto& [k, v] : models->entries) {
        if (!is_identifier(k->text))
          throw Error(doc->where(*k) + ": model key '" + escaped_for_message(k->text) +
                      "' is not letters, digits and '_'");
        check_keys(*doc, *v, {"title", "names", "bases", "upstream", "replace"},
                   "model " + k->text);
        const bool replace = replace_flag(*doc, *v);
        const std::string& key = k->text; // clang 14 captures no structured binding
        auto existing = std::find_if(models_.begin(), models_.end(),
                                     [&](const ModelInfo& m) { return m.name == key; });
        if (existing != models_.end() && existing->layer == layer)
          throw Error(doc->where(*k) + ": model " + k->text + " is defined twice in " +
                      data.directory() + ", here and at " + existing->origin);
        if (existing != models_.end() && existing->layer == 0 && !replace)
          throw Error(doc->where(*k) + ": model " + k->text + " is a built-in one, defined at " +
                      existing->origin + "; add 'replace: true' to change it");
        if (existing == models_.end() && replace)
          throw Error(doc->where(*k) + ": 'replace: true', but there is no model " + k->text +
                      " to replace");
        ModelInfo m;
        m.name = k->text;
        m.origin = doc->where(*k);
        m.layer = layer;
        m.title = need(*doc, *v, "title", YamlNode::Kind::Scalar).text;
        one_line(*doc, *get(*v, "title"), "title");
        if (get(*v, "names") != nullptr)
          m.names = strings(need(*doc, *v, "names", YamlNode::Kind::Sequence));
        for (const std::string& n : m.names) {
          if (!is_identifier(n))
            throw Error(doc->where(*get(*v, "names")) + ": name '" + escaped_for_message(n) +
                        "' is not letters, digits and '_'");
          for (const ModelInfo& other : models_)
            if (other.name != m.name &&
                (other.name == n ||
                 std::find(other.names.begin(), other.names.end(), n) != other.names.end()))
              throw Error(doc->where(*get(*v, "names")) + ": name '" + n + "' is model " +
                          other.name + "'s (" + other.origin + ")");
        }
        // Launch passes Megatron-Bridge a model recipe it has: an existing model's.
        if (const YamlNode* up = get(*v, "upstream")) {
          try {
            m.upstream = model(up->text).upstream;
          } catch (const Error& e) {
            throw Error(doc->where(*up) + ": upstream: " + e.what());
          }
        } else if (replace) {
          m.upstream = existing->upstream;
        } else {
          throw Error(doc->where(*k) + ": model " + m.name +
                      " needs 'upstream': the model whose Megatron-Bridge recipe name launch "
                      "passes (-mr), e.g. upstream: qwen35_397b");
        }
        const YamlNode& bases = need(*doc, *v, "bases", YamlNode::Kind::Sequence);
        m.bases = strings(bases);
        for (std::size_t i = 0; i < m.bases.size(); ++i) {
          const std::string& b = m.bases[i];
          if (model_layers_.count(b))
            continue;
          if (!is_identifier(b))
            throw Error(doc->where(*bases.items[i]) + ": base layer '" + escaped_for_message(b) +
                        "' is no layer name: a layer is named by letters, digits and '_' (a "
                        "layer of yours is models/NAME.yaml in " +
                        data.directory() + "), never by a path");
          if (!own_layers.count(b)) {
            std::vector<std::string> known(own_layers.begin(), own_layers.end());
            for (const auto& [name, layer] : model_layers_)
              known.push_back(name);
            throw Error(doc->where(*bases.items[i]) + ": no base layer '" + b + "'" +
                        did_you_mean(b, known) + " (a layer of yours is models/" + b + ".yaml in " +
                        data.directory() + ")");
          }
          auto layer = data.parse("models/" + b + ".yaml");
          if (layer->root->kind != YamlNode::Kind::Mapping)
            throw Error(layer->where(*layer->root) + ": expected a mapping of config fields");
          model_layers_.emplace(b, layer);
        }
        if (existing != models_.end())
          *existing = std::move(m);
        else
          models_.push_back(std::move(m));
      }
    }

    if (const YamlNode* recipes = get(root, "recipes")) {
      if (recipes->kind != YamlNode::Kind::Mapping)
        throw Error(doc->where(*recipes) +
                    ": 'recipes' is a mapping of MODEL@GPUxN keys, e.g. qwen35_397b@gb300x128");
      for (const auto& [k, v] : recipes->entries) {
        const std::string where = doc->where(*k);
        RecipeRef ref;
        try {
          if (k->text.find('@') == std::string::npos ||
              k->text.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
                                        "0123456789_@") != std::string::npos)
            throw Error("a recipe's key is MODEL@GPUxN (every precision is in it), e.g. "
                        "qwen35_397b@gb300x128, not '" +
                        escaped_for_message(k->text) + "'");
          ref = parse_recipe_ref(k->text);
          ref.model = model(ref.model).name;
          (void)gpu(ref.gpu);
        } catch (const Error& e) {
          throw Error(where + ": " + e.what());
        }
        if (const YamlNode* n = get(*v, "num_gpus"))
          throw Error(doc->where(*n) + ": the GPU count goes in the key, " + ref.model + "@" +
                      ref.gpu + "x" + n->text + ", not in 'num_gpus'");
        check_keys(*doc, *v, kUserRecipeKeys, "recipe " + k->text);
        const bool replace = replace_flag(*doc, *v);
        const RecipeEntry* existing = find_recipe(ref.model, ref.gpu, ref.num_gpus);
        if (existing != nullptr && existing->layer == layer)
          throw Error(where + ": recipe " + existing->key() + " (" +
                      std::to_string(existing->num_gpus) + " GPUs) is defined twice in " +
                      data.directory() + ", here and at " + existing->origin);
        if (existing != nullptr && existing->layer == 0 && !replace)
          throw Error(where + ": recipe " + existing->key() + " (" +
                      std::to_string(existing->num_gpus) + " GPUs) is a built-in one, defined at " +
                      existing->origin + "; add 'replace: true' to change it");
        if (existing == nullptr && replace)
          throw Error(where + ": 'replace: true', but there is no recipe " + k->text +
                      " to replace");
        if (existing == nullptr && ref.num_gpus == 0)
          throw Error(where + ": a new recipe's key needs its GPU count, " + ref.model + "@" +
                      ref.gpu + "xN (e.g. x128)");
        RecipeEntry r;
        r.model = ref.model;
        r.gpu = ref.gpu;
        r.num_gpus = existing != nullptr ? existing->num_gpus : ref.num_gpus;
        r.is_default = existing != nullptr ? existing->is_default
                                           : find_recipe(ref.model, ref.gpu, 0) == nullptr;
        r.origin = where;
        r.layer = layer;
        r.source = get(*v, "source") != nullptr
                       ? need(*doc, *v, "source", YamlNode::Kind::Scalar).text
                       : "user recipe, " + doc->source;
        if (const YamlNode* s = get(*v, "source"))
          one_line(*doc, *s, "source");
        const std::size_t index = existing != nullptr
                                      ? static_cast<std::size_t>(existing - recipes_.data())
                                      : recipes_.size();
        read_recipe_body(*doc, *v, r, inherits, index);
        // A replacement that inherits the recipe it replaces takes its pipelines before the
        // replacement drops them: the built-in recipe, plus what the user inserts.
        if (!inherits.empty() && inherits.back().index == index && existing != nullptr &&
            find_recipe(inherits.back().from_model, inherits.back().from_gpu,
                        inherits.back().from_num_gpus) == existing) {
          inherit_from(r, inherits.back(), *existing);
          inherits.pop_back();
        }
        if (existing != nullptr)
          recipes_[index] = std::move(r);
        else
          recipes_.push_back(std::move(r));
      }
    }
  }
  resolve_inherits(inherits);
}

std::string Catalog::user_layer_source(std::string_view name) const {
  const auto it = model_layers_.find(name);
  return it == model_layers_.end() || builtin_layers_.count(name) != 0 ? std::string()
                                                                       : it->second->source;
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
                            std::string_view precision, int num_gpus, bool exact) const {
  RecipeSpec spec;
  spec.model = &model(model_name);
  spec.gpu = &gpu(gpu_name);
  if (std::find(precision_names_.begin(), precision_names_.end(), precision) ==
      precision_names_.end())
    throw Error("unknown precision '" + std::string(precision) + "'" +
                did_you_mean(precision, precision_names_) +
                "; precisions: " + join(precision_names_));
  spec.precision = std::string(precision);
  std::vector<std::string> gpus_with_model, counts;
  const RecipeEntry* chosen = nullptr;
  for (const RecipeEntry& r : recipes_) {
    if (r.model != spec.model->name)
      continue;
    if (std::find(gpus_with_model.begin(), gpus_with_model.end(), r.gpu) == gpus_with_model.end())
      gpus_with_model.push_back(r.gpu);
    if (r.gpu != spec.gpu->name)
      continue;
    counts.push_back(std::to_string(r.num_gpus));
    if (num_gpus == 0 ? r.is_default : r.num_gpus == num_gpus)
      chosen = &r;
  }
  if (counts.empty())
    throw Error(spec.model->name + " has no recipe for " + spec.gpu->name + "; it has " +
                (gpus_with_model.empty() ? std::string("none") : join(gpus_with_model)));
  if (chosen == nullptr && exact)
    throw Error(spec.model->name + " on " + spec.gpu->name + " has no " + std::to_string(num_gpus) +
                "-GPU recipe; it has " + join(counts) + " GPUs (to run the default recipe on " +
                std::to_string(num_gpus) + " GPUs, as Megatron-Bridge's -ng does, write " +
                spec.model->name + "@" + spec.gpu->name + " with --num-gpus " +
                std::to_string(num_gpus) + ")");
  if (chosen == nullptr)
    chosen = find_recipe(spec.model->name, spec.gpu->name, 0);
  spec.entry = chosen;
  auto it = chosen->precisions.find(spec.precision);
  if (it == chosen->precisions.end()) {
    std::vector<std::string> have;
    for (const auto& [p, v] : chosen->precisions)
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

std::vector<RecipeSpec> Catalog::all() const {
  std::vector<RecipeSpec> out;
  for (const RecipeEntry& r : recipes_)
    for (const auto& [p, v] : r.precisions)
      out.push_back(resolve(r.model, r.gpu, p, r.num_gpus));
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
