#include "passes/registry.h"

namespace qr {

const std::vector<PassInfo>& pass_registry() {
  static const std::vector<PassInfo> passes{
#define PASS(id, pass_name, ...) PassInfo{.name = pass_name, .run = run_##id, __VA_ARGS__},
#define PASS_WITH_FREE_OPTIONS(id, pass_name, ...)                                                 \
  PassInfo{.name = pass_name, .run = run_##id, .bind_free_options = bind_##id, __VA_ARGS__},
#include "passes/passes.def"
  };
  return passes;
}

const std::vector<PassProperty>& pass_properties() {
  static const std::vector<PassProperty> properties{
#define PROPERTY(name, ...) PassProperty{name, __VA_ARGS__},
#include "passes/passes.def"
  };
  return properties;
}

const std::vector<NamedPipeline>& named_pipelines() {
  static const std::vector<NamedPipeline> pipelines{
#define NAMED_PIPELINE(name, upstream, expansion) NamedPipeline{name, upstream, expansion},
#include "passes/passes.def"
  };
  return pipelines;
}

const PassInfo* find_pass(std::string_view name) {
  for (const PassInfo& p : pass_registry())
    if (p.name == name)
      return &p;
  return nullptr;
}

const PassProperty* find_property(std::string_view name) {
  for (const PassProperty& p : pass_properties())
    if (p.name == name)
      return &p;
  return nullptr;
}

const NamedPipeline* find_named_pipeline(std::string_view name) {
  for (const NamedPipeline& p : named_pipelines())
    if (p.name == name)
      return &p;
  return nullptr;
}

std::vector<std::string> providers_of(std::string_view property) {
  std::vector<std::string> names;
  for (const PassInfo& p : pass_registry())
    if (p.provides(property))
      names.push_back(p.name);
  return names;
}

std::vector<std::string> registered_names() {
  std::vector<std::string> names;
  for (const PassInfo& p : pass_registry())
    names.push_back(p.name);
  for (const NamedPipeline& p : named_pipelines())
    names.push_back(p.name);
  return names;
}

} // namespace qr
