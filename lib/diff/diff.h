// Semantic diff of two config trees: what changed, path by path, in dyff's terms. Key order and
// YAML styling are not differences (the trees are compared as values); list order is.
//
// Enum, dtype and callable maps (`{_target_, _call_, ...}`) are compared as single values, and so
// are maps with a key that a Hydra override could not name: the dotlist replaces them whole.
#pragma once

#include "yaml/value.h"

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct Detail {
  enum class Kind {
    ValueChange,    // same type, different value
    TypeChange,     // int -> str, null -> map, ...
    EntriesAdded,   // map keys only in B
    EntriesRemoved, // map keys only in A
    ItemsAdded,     // list items only in B
    ItemsRemoved,   // list items only in A
    OrderChange,    // the same list items in another order
    ClassChange,    // a section's `_target_` changed: it is replaced whole (its fields follow)
  };
  Kind kind = Kind::ValueChange;
  Value from = {}, to = {}; // the values at the path (all but the map-entry kinds)
  Map entries = {};         // EntriesAdded, EntriesRemoved
  List items = {};          // ItemsAdded, ItemsRemoved
};

struct Difference {
  std::vector<std::string> keys = {}; // path from the root; empty for the root itself
  std::vector<Detail> details = {};

  [[nodiscard]] std::string path() const;    // dotted; "" for the root
  [[nodiscard]] std::string section() const; // the top-level key, "" for the root
};

// Differences from `a` to `b`, in sorted path order (PyYAML's key order, as in the files).
std::vector<Difference> diff_values(const Value& a, const Value& b);

// A section class's default value, by `_target_` (as the schema instantiates it), or nothing.
using SectionDefaults = std::function<std::optional<Value>(std::string_view target)>;

// The Hydra overrides that turn `a` into `b` (`k=v`, `+k=v`, `~k`), values as flow YAML that
// the override parser types back to the same values. A section whose class changes becomes
// `path={_target_: NEW}` (the new class at its defaults) plus overrides for the fields that differ
// from those defaults, when `defaults` knows the class; else it is replaced whole.
std::vector<std::string> dotlist(const std::vector<Difference>& diffs,
                                 const SectionDefaults& defaults = {});

// True for enum, dtype, callable and partial maps (`{_target_, _call_ | _partial_, ...}`), which
// compare, show and override as one value.
bool is_atomic_map(const Value& v);

// A one-line rendering for people: flow YAML, with enums as `Class.member` and dtypes by name.
std::string show(const Value& v);

// GNU-style unified diff of two texts (`--- a`, `+++ b`, hunks with 3 lines of context); empty
// when they are equal.
std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_label,
                         const std::string& b_label);

// JSON text of a value (keys sorted; non-finite floats as YAML's `.inf`/`.nan` strings).
std::string to_json(const Value& v);
std::string json_string(const std::string& s);

} // namespace qr
