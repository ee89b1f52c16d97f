#include "yaml/value.h"

#include "yaml/yaml_write.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace qr {

const Value* Map::find(std::string_view key) const {
  for (const auto& [k, v] : entries_)
    if (k.text == key)
      return &v;
  return nullptr;
}

Value* Map::find(std::string_view key) {
  for (auto& [k, v] : entries_)
    if (k.text == key)
      return &v;
  return nullptr;
}

Value& Map::set(std::string_view key, Value value) {
  return set(Key{std::string(key)}, std::move(value));
}

Value& Map::set(Key key, Value value) {
  for (auto& [k, v] : entries_)
    if (k.text == key.text) {
      v = std::move(value);
      return v;
    }
  entries_.emplace_back(std::move(key), std::move(value));
  return entries_.back().second;
}

Value& Map::append(Key key, Value value) {
  entries_.emplace_back(std::move(key), std::move(value));
  return entries_.back().second;
}

void Map::merge(Map other) {
  // Reserved first: the index's views into the keys must not move with a reallocation.
  entries_.reserve(entries_.size() + other.entries_.size());
  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t i = 0; i < entries_.size(); ++i)
    index.emplace(entries_[i].first.text, i);
  for (auto& [k, v] : other.entries_) {
    if (auto it = index.find(k.text); it != index.end()) {
      entries_[it->second].second = std::move(v);
      continue;
    }
    entries_.emplace_back(std::move(k), std::move(v));
    index.emplace(entries_.back().first.text, entries_.size() - 1);
  }
}

bool Map::erase(std::string_view key) {
  auto it = std::find_if(entries_.begin(), entries_.end(),
                         [&](const Entry& e) { return e.first.text == key; });
  if (it == entries_.end())
    return false;
  entries_.erase(it);
  return true;
}

std::vector<const Map::Entry*> Map::sorted() const {
  std::vector<const Entry*> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_)
    out.push_back(&e);
  // PyYAML sorts by Python comparison: integer keys numerically, string keys by code point
  // (byte order for UTF-8). Integers sort before strings in a mixed map (Python would refuse).
  std::sort(out.begin(), out.end(), [](const Entry* a, const Entry* b) {
    if (a->first.integer != b->first.integer)
      return a->first.integer;
    if (a->first.integer)
      return std::stoll(a->first.text) < std::stoll(b->first.text);
    return a->first.text < b->first.text;
  });
  return out;
}

bool operator==(const Map& a, const Map& b) {
  if (a.size() != b.size())
    return false;
  for (const auto& [k, v] : a.entries_) {
    const Value* other = b.find(k.text);
    if (other == nullptr || !(*other == v))
      return false;
  }
  return true;
}

std::string_view Value::target() const {
  if (!is_map())
    return {};
  const Value* t = as_map().find("_target_");
  return t != nullptr && t->is_str() ? std::string_view(t->as_str()) : std::string_view{};
}

Value::Storage Value::deep_copy() const {
  if (const auto* l = std::get_if<std::shared_ptr<List>>(&v_))
    return std::make_shared<List>(**l);
  if (const auto* m = std::get_if<std::shared_ptr<Map>>(&v_))
    return std::make_shared<Map>(**m);
  return v_;
}

bool operator==(const Value& a, const Value& b) {
  if (a.kind() != b.kind())
    return false;
  switch (a.kind()) {
  case Value::Kind::Null:
    return true;
  case Value::Kind::Bool:
    return a.as_bool() == b.as_bool();
  case Value::Kind::Int:
    return a.as_int() == b.as_int();
  case Value::Kind::Float:
    // NaN equals NaN here: configs compare by what they say, not IEEE semantics.
    return a.as_float() == b.as_float() || (std::isnan(a.as_float()) && std::isnan(b.as_float()));
  case Value::Kind::Str:
    return a.as_str() == b.as_str();
  case Value::Kind::List:
    return a.as_list() == b.as_list();
  case Value::Kind::Map:
    return a.as_map() == b.as_map();
  }
  return false;
}

std::string_view kind_name(const Value& v) {
  switch (v.kind()) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return "bool";
  case Value::Kind::Int:
    return "int";
  case Value::Kind::Float:
    return "float";
  case Value::Kind::Str:
    return "str";
  case Value::Kind::List:
    return "list";
  case Value::Kind::Map:
    return "map";
  }
  return "?";
}

std::string brief(const Value& v, std::size_t max_chars) {
  return clip(to_flow_yaml(v), max_chars);
}

std::string clip(std::string_view text, std::size_t max_chars) {
  if (text.size() <= max_chars)
    return std::string(text);
  std::size_t cut = max_chars - 3;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
    --cut;
  return std::string(text.substr(0, cut)) + "...";
}

} // namespace qr
