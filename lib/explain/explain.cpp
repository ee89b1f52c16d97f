#include "explain/explain.h"

#include "support/error.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <algorithm>

namespace qr {
namespace {

void collect(const Value& v, const std::string& path, std::map<std::string, Value>& out) {
  if (v.is_map() && !v.as_map().empty() && !is_atomic_map(v)) {
    for (const Map::Entry& e : v.as_map())
      collect(e.second, path.empty() ? e.first.text : path + "." + e.first.text, out);
    return;
  }
  out.emplace(path, v);
}

// The value at `keys` below `root`, or null.
const Value* below(const Value& root, const std::vector<std::string>& keys, std::size_t from) {
  const Value* cur = &root;
  for (std::size_t i = from; i < keys.size(); ++i) {
    if (!cur->is_map())
      return nullptr;
    cur = cur->as_map().find(keys[i]);
    if (cur == nullptr)
      return nullptr;
  }
  return cur;
}

std::optional<Value> opt(const Value* v) {
  return v == nullptr ? std::nullopt : std::optional<Value>(*v);
}

// `inner` is `outer` or lies below it.
bool within(std::string_view inner, std::string_view outer) {
  return outer.empty() || inner == outer ||
         (inner.size() > outer.size() && inner.starts_with(outer) && inner[outer.size()] == '.');
}

} // namespace

std::string step_label(const BuildResult& result, const Write& write) {
  switch (write.step.kind) {
  case StepId::Kind::Base:
    return "base";
  case StepId::Kind::Pass:
    return "pass '" + write.step.pass + "' (position " + std::to_string(write.step.position) + ")";
  case StepId::Kind::Shortcut:
    return "shortcut '" + write.step.pass + "'";
  case StepId::Kind::Overrides:
    for (auto it = result.overrides.rbegin(); it != result.overrides.rend(); ++it)
      if (it->key == write.path)
        return "override '" + it->token + "'";
    return "overrides";
  }
  return {};
}

std::string last_writer(const BuildResult& result, std::string_view path) {
  const std::vector<Write>& writes = result.config.writes();
  for (auto it = writes.rbegin(); it != writes.rend(); ++it)
    if (within(path, it->path) || within(it->path, path))
      return step_label(result, *it);
  return {};
}

std::map<std::string, Value> leaves(const Value& root) {
  std::map<std::string, Value> out;
  collect(root, "", out);
  return out;
}

std::vector<FieldHistory> explain_fields(const Compiler& compiler, const BuildResult& result,
                                         const std::vector<std::string>& fields) {
  if (!result.recipe)
    throw Error("explain needs a recipe (a --base build has no base config to compare with)");
  const std::string& profile = result.config.profile();
  const Value base = compiler.catalog().base_config(*result.recipe->model, profile);
  std::string layers = "recipes/models/"; // and a --recipes-dir's own layers, by file
  for (const std::string& b : result.recipe->model->bases)
    if (const std::string own = compiler.catalog().user_layer_source(b); !own.empty())
      layers += ", " + own;
  const Value defaults = compiler.schema().instantiate(compiler.schema().root(), profile);
  const std::map<std::string, Value> base_leaves = leaves(base);
  const std::map<std::string, Value> final_leaves = leaves(result.config.root());

  std::vector<std::string> paths;
  auto changed = [&](const std::string& p) {
    auto b = base_leaves.find(p);
    auto f = final_leaves.find(p);
    return b == base_leaves.end() || f == final_leaves.end() || !(b->second == f->second);
  };
  // Changed leaves under `prefix`. A path that is a leaf on one side and a section on the other
  // (null -> section) is told through the section's fields; `_target_` goes with its section.
  auto add_under = [&](const std::string& prefix) {
    std::vector<std::string> found;
    for (const auto* m : {&base_leaves, &final_leaves})
      for (const auto& [p, v] : *m)
        if (within(p, prefix) && changed(p) && !p.ends_with("._target_") && p != "_target_")
          found.push_back(p);
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end()), found.end());
    for (std::size_t i = 0; i < found.size(); ++i)
      if (i + 1 == found.size() || !within(found[i + 1], found[i]))
        paths.push_back(found[i]);
  };
  if (fields.empty())
    add_under("");
  for (const std::string& field : fields) {
    (void)split_path(field); // names empty segments precisely
    const bool leaf = base_leaves.count(field) || final_leaves.count(field);
    if (leaf) {
      paths.push_back(field);
      continue;
    }
    std::string why;
    if (!result.config.resolve(field, &why))
      throw Error("explain: " + why);
    const std::size_t before = paths.size();
    add_under(field);
    if (paths.size() == before)
      paths.push_back(field); // a section or field with no changed leaf: its own history
  }

  std::vector<FieldHistory> out;
  for (const std::string& path : paths) {
    FieldHistory h;
    h.path = path;
    const std::vector<std::string> keys = split_path(path);
    h.base = opt(below(base, keys, 0));
    h.final = opt(result.config.find(path));
    const Value* d = below(defaults, keys, 0);
    h.base_origin = !h.base                         ? "not in the base config"
                    : d != nullptr && *d == *h.base ? "schema default"
                                                    : "the model's base layers (" + layers + ")";
    for (const Write& w : result.config.writes()) {
      if (!within(path, w.path))
        continue;
      const std::size_t depth = split_path(w.path).size();
      FieldStep s{step_label(result, w), w.path == path ? "" : w.path,
                  w.before ? opt(below(*w.before, keys, depth)) : std::nullopt,
                  w.after ? opt(below(*w.after, keys, depth)) : std::nullopt};
      // A section replaced whole matters here only where it changed this field.
      if (!s.via.empty() && s.before == s.after)
        continue;
      h.steps.push_back(std::move(s));
    }
    out.push_back(std::move(h));
  }
  return out;
}

SectionDefaults section_defaults(const Schema& schema, std::string profile) {
  return [&schema, profile = std::move(profile)](std::string_view target) -> std::optional<Value> {
    const ClassSpec* cls = schema.class_by_target(target);
    if (cls == nullptr)
      return std::nullopt;
    auto doc = parse_yaml(to_yaml(schema.instantiate(*cls, profile)), "defaults");
    return to_untyped_value(*doc, *doc->root);
  };
}

std::string explain_json(const BuildResult& result, const std::vector<FieldHistory>& histories) {
  auto value = [](const char* key, const std::optional<Value>& v) {
    return v ? ", " + json_string(key) + ": " + to_json(*v) : std::string();
  };
  std::string out = "{\"recipe\": " + json_string(result.recipe->id()) +
                    ", \"profile\": " + json_string(result.config.profile()) + ", \"fields\": [";
  for (std::size_t i = 0; i < histories.size(); ++i) {
    const FieldHistory& h = histories[i];
    out += (i == 0 ? "\n  " : ",\n  ") + std::string("{\"path\": ") + json_string(h.path) +
           value("final", h.final) + value("base", h.base) +
           ", \"base_origin\": " + json_string(h.base_origin) + ", \"steps\": [";
    for (std::size_t j = 0; j < h.steps.size(); ++j) {
      const FieldStep& st = h.steps[j];
      out += (j == 0 ? "{" : ", {") + std::string("\"by\": ") + json_string(st.who) +
             ", \"replacing\": " + json_string(st.via) + value("before", st.before) +
             value("after", st.after) + "}";
    }
    out += "]}";
  }
  return out + (histories.empty() ? "]}\n" : "\n]}\n");
}

} // namespace qr
