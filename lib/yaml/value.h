// The config tree: YAML-shaped values addressed by dotted paths.
//
// A config is a Map whose sections are Maps carrying a `_target_` class path, exactly the shape
// Megatron-Bridge's `to_dict()` produces. Enums, dtypes and callables keep their serialized form
// (`{_target_, _call_, ...}` maps), so reading our own output gives back the same tree.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace qr {

class Value;

// A mapping key. YAML keys are strings here except integer keys (`id2label: {0: LABEL_0}`),
// which PyYAML writes unquoted and sorts numerically.
struct Key {
  std::string text;
  bool integer = false;

  friend bool operator==(const Key&, const Key&) = default;
};

// Insertion-ordered mapping; the emitter sorts keys the way PyYAML does. A map of more than a
// few entries keeps a hash index of its keys, so that a look-up is O(1) and reading, comparing,
// diffing or overriding a mapping of 100k keys (env_vars) is linear, not quadratic.
class Map {
public:
  using Entry = std::pair<Key, Value>;

  Map();
  Map(const Map& other);
  Map(Map&& other) noexcept;
  Map& operator=(const Map& other);
  Map& operator=(Map&& other) noexcept;
  ~Map();

  [[nodiscard]] const Value* find(std::string_view key) const;
  [[nodiscard]] Value* find(std::string_view key);
  [[nodiscard]] bool contains(std::string_view key) const { return find(key) != nullptr; }
  // Sets or adds `key`; returns the stored value.
  Value& set(std::string_view key, Value value);
  Value& set(Key key, Value value);
  // Adds an entry the caller knows is new (no look-up: a big mapping is read in linear time).
  Value& append(Key key, Value value);
  // Sets every entry of `other` (new keys after the existing ones, in its order), in linear time.
  void merge(Map other);
  bool erase(std::string_view key);

  // Defined after Value, which they need complete (clang instantiates them here).
  [[nodiscard]] std::size_t size() const;
  [[nodiscard]] bool empty() const;
  [[nodiscard]] auto begin() const;
  [[nodiscard]] auto end() const;
  [[nodiscard]] auto begin();
  [[nodiscard]] auto end();

  // Entries in PyYAML's `sort_keys=True` order.
  [[nodiscard]] std::vector<const Entry*> sorted() const;

  friend bool operator==(const Map& a, const Map& b);

private:
  struct KeyIndex; // key text -> position in entries_
  // Builds the index once the map is big enough to need one (or drops it).
  void reindex();

  std::vector<Entry> entries_;
  std::unique_ptr<KeyIndex> index_;
};

using List = std::vector<Value>;

struct Null {
  friend bool operator==(Null, Null) { return true; }
};

class Value {
public:
  enum class Kind { Null, Bool, Int, Float, Str, List, Map };

  Value() = default;
  Value(Null) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(std::int64_t{i}) {}
  Value(std::int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(const char* s) : v_(std::string(s)) {}
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::string_view s) : v_(std::string(s)) {}
  Value(List l) : v_(std::make_shared<List>(std::move(l))) {}
  Value(Map m) : v_(std::make_shared<Map>(std::move(m))) {}

  Value(const Value& other) : v_(other.deep_copy()) {}
  Value(Value&&) noexcept = default;
  Value& operator=(const Value& other) {
    if (this != &other)
      v_ = other.deep_copy();
    return *this;
  }
  Value& operator=(Value&&) noexcept = default;

  [[nodiscard]] Kind kind() const { return static_cast<Kind>(v_.index()); }
  [[nodiscard]] bool is_null() const { return kind() == Kind::Null; }
  [[nodiscard]] bool is_bool() const { return kind() == Kind::Bool; }
  [[nodiscard]] bool is_int() const { return kind() == Kind::Int; }
  [[nodiscard]] bool is_float() const { return kind() == Kind::Float; }
  [[nodiscard]] bool is_str() const { return kind() == Kind::Str; }
  [[nodiscard]] bool is_list() const { return kind() == Kind::List; }
  [[nodiscard]] bool is_map() const { return kind() == Kind::Map; }
  [[nodiscard]] bool is_scalar() const { return !is_list() && !is_map(); }

  [[nodiscard]] bool as_bool() const { return std::get<bool>(v_); }
  [[nodiscard]] std::int64_t as_int() const { return std::get<std::int64_t>(v_); }
  [[nodiscard]] double as_float() const { return std::get<double>(v_); }
  [[nodiscard]] const std::string& as_str() const { return std::get<std::string>(v_); }
  [[nodiscard]] const List& as_list() const { return *std::get<std::shared_ptr<List>>(v_); }
  [[nodiscard]] List& as_list() { return *std::get<std::shared_ptr<List>>(v_); }
  [[nodiscard]] const Map& as_map() const { return *std::get<std::shared_ptr<Map>>(v_); }
  [[nodiscard]] Map& as_map() { return *std::get<std::shared_ptr<Map>>(v_); }

  // The `_target_` of a section, enum, dtype or callable map; empty otherwise.
  [[nodiscard]] std::string_view target() const;

  friend bool operator==(const Value& a, const Value& b);

private:
  using Storage = std::variant<Null, bool, std::int64_t, double, std::string, std::shared_ptr<List>,
                               std::shared_ptr<Map>>;
  [[nodiscard]] Storage deep_copy() const;

  Storage v_;
};

inline std::size_t Map::size() const {
  return entries_.size();
}
inline bool Map::empty() const {
  return entries_.empty();
}
inline auto Map::begin() const {
  return entries_.begin();
}
inline auto Map::end() const {
  return entries_.end();
}
inline auto Map::begin() {
  return entries_.begin();
}
inline auto Map::end() {
  return entries_.end();
}

// A human name of a value's YAML type, as used in error messages ("int", "str", "list" ...).
std::string_view kind_name(const Value& v);

// Short one-line rendering of a value for messages and logs (flow style, truncated).
std::string brief(const Value& v, std::size_t max_chars = 80);
// Text cut to at most max_chars (at a UTF-8 boundary, ending "..."), for messages.
std::string clip(std::string_view text, std::size_t max_chars = 80);

} // namespace qr
