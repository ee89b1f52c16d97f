#include "passes/pass.h"

#include "support/error.h"

#include <algorithm>
#include <spdlog/spdlog.h>

namespace qr {
namespace {

// `path` is `section` or lies below it.
bool within(std::string_view path, std::string_view section) {
  return path == section ||
         (path.starts_with(section) && path.size() > section.size() && path[section.size()] == '.');
}

} // namespace

std::vector<std::string> PassInfo::declared_writes() const {
  std::vector<std::string> out = writes;
  for (const PassOption& o : options)
    if (!o.field.empty() && std::none_of(out.begin(), out.end(),
                                         [&](const std::string& w) { return within(o.field, w); }))
      out.push_back(o.field);
  return out;
}

bool PassInfo::provides(std::string_view property) const {
  return std::find(provided.begin(), provided.end(), property) != provided.end();
}

void PassArgs::set(std::string name, Value v) {
  for (auto& [k, old] : items_)
    if (k == name) {
      old = std::move(v);
      return;
    }
  items_.emplace_back(std::move(name), std::move(v));
}

const Value* PassArgs::find(std::string_view name) const {
  for (const auto& [k, v] : items_)
    if (k == name)
      return &v;
  return nullptr;
}

const Value& PassContext::arg(std::string_view name) const {
  const Value* v = args_.find(name);
  if (v == nullptr)
    throw Error("pass '" + info_.name + "' needs option '" + std::string(name) + "'");
  return *v;
}

void PassContext::set(std::string_view path, Value v) {
  bool declared = false;
  if (info_.bind_free_options) {
    for (const auto& [k, value] : args_.items())
      declared = declared || path == k || path == "env_vars" || path.starts_with("env_vars.");
  }
  for (const std::string& w : info_.declared_writes())
    declared = declared || within(path, w);
  if (!declared)
    throw Error("internal: pass '" + info_.name + "' wrote '" + std::string(path) +
                "', which its registry entry does not declare");
  config_.set(path, std::move(v));
}

void PassContext::set_option_fields() {
  for (const PassOption& o : info_.options)
    if (const Value* v = args_.find(o.name); v != nullptr && !o.field.empty())
      set(o.field, *v);
}

void PassContext::note(const std::string& message) const {
  spdlog::info("{}: {}", info_.name, message);
}

} // namespace qr
