#include "passes/pass.h"

#include "config/error.h"

#include <spdlog/spdlog.h>

namespace qr {

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
  for (const std::string& w : info_.writes)
    declared = declared || path == w ||
               (path.starts_with(w) && path.size() > w.size() && path[w.size()] == '.');
  if (!declared)
    throw Error("internal: pass '" + info_.name + "' wrote '" + std::string(path) +
                "', which its registry entry does not declare");
  config_.set(path, std::move(v));
}

void PassContext::note(const std::string& message) const {
  spdlog::info("{}: {}", info_.name, message);
}

} // namespace qr
