#include "yaml/value.h"

#include "yaml/yaml_write.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <utility>

namespace qr {

namespace {
// Below this many entries a scan is as fast as hashing, and copies stay cheap.
constexpr std::size_t kIndexFrom = 16;
} // namespace

struct Map::KeyIndex {
  // Looked up by string_view, without a copy of the key.
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, std::size_t, Hash, std::equal_to<>> positions;
};

Map::Map() = default;
Map::Map(const Map& other) : entries_(other.entries_) {
  reindex();
}
Map::Map(Map&& other) noexcept = default;
Map& Map::operator=(const Map& other) {
  if (this != &other) {
    entries_ = other.entries_;
    reindex();
  }
  return *this;
}
Map& Map::operator=(Map&& other) noexcept = default;
Map::~Map() = default;

void Map::reindex() {
  if (entries_.size() < kIndexFrom) {
    index_.reset();
    return;
  }
  index_ = std::make_unique<KeyIndex>();
  index_->positions.reserve(entries_.size());
  for (std::size_t i = 0; i < entries_.size(); ++i)
    index_->positions.emplace(entries_[i].first.text, i); // the first of equal keys, as a scan
}

const Value* Map::find(std::string_view key) const {
  if (index_) {
    const auto it = index_->positions.find(key);
    return it == index_->positions.end() ? nullptr : &entries_[it->second].second;
  }
  for (const auto& [k, v] : entries_)
    if (k.text == key)
      return &v;
  return nullptr;
}

Value* Map::find(std::string_view key) {
  return const_cast<Value*>(std::as_const(*this).find(key));
}

Value& Map::set(std::string_view key, Value value) {
  return set(Key{std::string(key)}, std::move(value));
}

Value& Map::set(Key key, Value value) {
  if (Value* v = find(key.text)) {
    *v = std::move(value);
    return *v;
  }
  return append(std::move(key), std::move(value));
}

Value& Map::append(Key key, Value value) {
  entries_.emplace_back(std::move(key), std::move(value));
  if (index_)
    index_->positions.emplace(entries_.back().first.text, entries_.size() - 1);
  else if (entries_.size() >= kIndexFrom)
    reindex();
  return entries_.back().second;
}

void Map::merge(Map other) {
  entries_.reserve(entries_.size() + other.entries_.size());
  for (auto& [k, v] : other.entries_)
    set(std::move(k), std::move(v));
}

bool Map::erase(std::string_view key) {
  std::size_t at = 0;
  if (index_) {
    const auto it = index_->positions.find(key);
    if (it == index_->positions.end())
      return false;
    at = it->second;
    index_->positions.erase(it);
    // The entries after it move down one: as linear as the erase itself.
    for (auto& [k, pos] : index_->positions)
      pos -= pos > at ? 1 : 0;
  } else {
    const auto it = std::find_if(entries_.begin(), entries_.end(),
                                 [&](const Entry& e) { return e.first.text == key; });
    if (it == entries_.end())
      return false;
    at = static_cast<std::size_t>(it - entries_.begin());
  }
  entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(at));
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
