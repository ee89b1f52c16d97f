#include "passes/cuda_graph_names.h"

namespace qr {
namespace {

std::string last_part(const std::string& s) {
  const std::size_t dot = s.rfind('.');
  return dot == std::string::npos ? s : s.substr(dot + 1);
}

void add_name(const Value& v, std::vector<std::string>& out) {
  if (v.is_str())
    out.push_back(last_part(v.as_str()));
  else if (v.is_map())
    if (const Value* n = v.as_map().find("_name_"); n != nullptr && n->is_str())
      out.push_back(n->as_str());
}

} // namespace

std::vector<std::string> normalize_module_names(const Value& modules) {
  std::vector<std::string> out;
  if (modules.is_null())
    return out;
  if (modules.is_str()) {
    const std::string& s = modules.as_str();
    if (s.empty() || s == "full")
      return out;
    std::size_t start = 0;
    for (std::size_t i = 0; i <= s.size(); ++i)
      if (i == s.size() || s[i] == ',') {
        if (i > start)
          out.push_back(last_part(s.substr(start, i - start)));
        start = i + 1;
      }
    return out;
  }
  if (modules.is_list())
    for (const Value& v : modules.as_list())
      add_name(v, out);
  else
    add_name(modules, out);
  return out;
}

std::set<std::string> cuda_graph_module_names(const Config& c) {
  std::set<std::string> names;
  for (const char* field : {"model.cuda_graph_modules", "model.cuda_graph_scope"})
    if (const Value* v = c.find(field))
      for (const std::string& n : normalize_module_names(*v))
        if (n != "full_iteration" && n != "full_iteration_inference" && n != "full")
          names.insert(n);
  return names;
}

} // namespace qr
