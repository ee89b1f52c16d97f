// YAML input: a parse tree that keeps what typing by schema needs and yaml-cpp's Node hides:
// whether a scalar was plain or quoted, its line and column, duplicate keys, and alias
// expansion bounded against "billion laughs" documents.
#pragma once

#include "yaml/value.h"

#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace qr {

struct YamlNode {
  enum class Kind { Null, Scalar, Sequence, Mapping };
  Kind kind = Kind::Null;
  std::string text;         // scalar text
  bool plain = true;        // plain (unquoted, untagged) scalar
  std::string tag;          // explicit tag such as "tag:yaml.org,2002:str", else empty
  int line = 0, column = 0; // 1-based
  std::vector<const YamlNode*> items;
  std::vector<std::pair<const YamlNode*, const YamlNode*>> entries;
};

// A parsed document. Nodes live in the arena; aliases point at their anchor's node.
class YamlDoc {
public:
  std::string source;        // file name, or e.g. "override 'a.b=1'", for messages
  bool has_positions = true; // false for one-line texts, where line:col would be noise
  const YamlNode* root = nullptr;

  // "file:line:col" for a node.
  [[nodiscard]] std::string where(const YamlNode& n) const;

  std::deque<YamlNode> arena;
};

struct YamlLimits {
  std::size_t max_bytes = std::size_t{64} << 20; // refuse files, and alias expansions, larger
  std::size_t max_nodes = 2'000'000;             // after alias expansion
  std::size_t max_depth = 500;                   // nesting; yaml-cpp's own limit is 500 too
};

// Parses one YAML document; throws qr::Error naming `source`, line and column.
std::shared_ptr<YamlDoc> parse_yaml(std::string_view text, const std::string& source,
                                    const YamlLimits& limits = {});
// Reads (support/input.h: bounded, one reader for every input) and parses a file.
std::shared_ptr<YamlDoc> read_yaml_file(const std::string& path, const YamlLimits& limits = {});

// A compact, exact form of a parsed document (nodes, styles, tags, positions), so that the
// recipe data compiled into the binary needs no YAML parsing at start-up.
std::string serialize_yaml_doc(const YamlDoc& doc);
std::shared_ptr<YamlDoc> deserialize_yaml_doc(std::string_view data, const std::string& source);

// "; first at line N" for a key of `map` that repeats an earlier one: duplicate-key messages.
std::string duplicate_key_hint(const YamlNode& map, const YamlNode& key);

// Converts without a schema, resolving plain scalars as PyYAML's safe_load does (YAML 1.1:
// `yes` is true, `1e-5` is a string, `1.0e-05` a float). Duplicate keys are errors.
Value to_untyped_value(const YamlDoc& doc, const YamlNode& node);

// The value PyYAML's resolvers and constructors give a plain scalar (`1:30` is 90); text for
// what plain_scalar_refusal refuses.
Value resolve_plain_scalar(const std::string& text);
// Why a plain scalar cannot be read as PyYAML's safe_load reads it (`=`, `<<`, a date, an int
// past 64 bits), or "" when it can.
std::string plain_scalar_refusal(const std::string& text);

// Bounds the size of a converted tree: aliases can make a small file expand exponentially, in
// nodes (aliases of aliases) and in bytes (many aliases of one long scalar). The text a document
// expands to is bounded as the file itself is.
class ExpansionBudget {
public:
  ExpansionBudget(std::size_t max_nodes, std::size_t max_bytes)
      : left_(max_nodes), bytes_left_(max_bytes), max_bytes_(max_bytes) {}
  void spend(const YamlDoc& doc, const YamlNode& at);

private:
  std::size_t left_;
  std::size_t bytes_left_;
  std::size_t max_bytes_;
};

} // namespace qr
