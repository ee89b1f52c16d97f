#include "overrides/overrides_file.h"

#include "support/error.h"
#include "yaml/yaml_read.h"
#include "yaml/yaml_write.h"

#include <set>

namespace qr {
namespace {

// An overrides file is a short list; the bounds stop a mistaken argument early.
constexpr std::size_t kMaxBytes = std::size_t{1} << 20;
constexpr std::size_t kMaxNodes = 100'000;
constexpr int kMaxDepth = 32;

// The YAML text of a value node, as an override's value: plain scalars as written (the schema
// types them, as on the command line), quoted ones quoted.
std::string value_text(const YamlDoc& doc, const YamlNode& n) {
  if (!n.tag.empty())
    throw Error(doc.where(n) + ": tags ('!!" + n.tag.substr(n.tag.rfind(':') + 1) +
                "') are not supported in an overrides file");
  switch (n.kind) {
  case YamlNode::Kind::Null:
    return "null";
  case YamlNode::Kind::Scalar:
    // A plain scalar with a comma is text; quoted, it cannot read as a Hydra sweep.
    return n.plain && n.text.find(',') == std::string::npos ? n.text : to_flow_yaml(Value(n.text));
  case YamlNode::Kind::Sequence: {
    std::string out = "[";
    for (const YamlNode* item : n.items)
      out += (out.size() > 1 ? ", " : "") + value_text(doc, *item);
    return out + "]";
  }
  case YamlNode::Kind::Mapping: {
    std::string out = "{";
    for (const auto& [key, value] : n.entries)
      out += (out.size() > 1 ? ", " : "") + value_text(doc, *key) + ": " + value_text(doc, *value);
    return out + "}";
  }
  }
  return {};
}

Override at(const YamlDoc& doc, const YamlNode& where, const std::string& token) {
  try {
    Override o = parse_override(token);
    o.origin = doc.where(where);
    return o;
  } catch (const Error& e) {
    throw Error(doc.where(where) + ": " + e.what());
  }
}

bool has_target(const YamlNode& map) {
  for (const auto& [key, value] : map.entries)
    if (key->kind == YamlNode::Kind::Scalar && key->text == "_target_")
      return true;
  return false;
}

// The nested form: a mapping's leaves are `path=value` sets; a mapping with `_target_` is a
// section's new class, set whole as on the command line.
void walk(const YamlDoc& doc, const YamlNode& map, const std::string& prefix, int depth,
          std::vector<Override>& out) {
  if (depth > kMaxDepth)
    throw Error(doc.where(map) + ": more than " + std::to_string(kMaxDepth) +
                " nested keys in an overrides file");
  std::set<std::string> seen;
  for (const auto& [key, value] : map.entries) {
    if (key->kind != YamlNode::Kind::Scalar || key->text.empty())
      throw Error(doc.where(*key) + ": keys in an overrides file are field names");
    if (!seen.insert(key->text).second)
      throw Error(doc.where(*key) + ": key '" + key->text + "' given twice" +
                  duplicate_key_hint(map, *key));
    if (key->text.find_first_of("+~=") != std::string::npos)
      throw Error(doc.where(*key) + ": '" + key->text +
                  "' is not a field name; the mapping form sets fields that exist, write "
                  "+, ++ and ~ overrides in the list form ('- +key=value')");
    const std::string path = prefix.empty() ? key->text : prefix + "." + key->text;
    if (value->kind == YamlNode::Kind::Mapping && !value->entries.empty() && !has_target(*value))
      walk(doc, *value, path, depth + 1, out);
    else
      out.push_back(at(doc, *key, path + "=" + value_text(doc, *value)));
  }
}

} // namespace

std::vector<Override> read_overrides_file(const std::string& path) {
  YamlLimits limits;
  limits.max_bytes = kMaxBytes;
  limits.max_nodes = kMaxNodes;
  const auto doc = read_yaml_file(path, limits);
  std::vector<Override> out;
  const YamlNode* root = doc->root;
  if (root != nullptr && root->kind == YamlNode::Kind::Sequence) {
    for (const YamlNode* item : root->items) {
      if (item->kind != YamlNode::Kind::Scalar)
        throw Error(doc->where(*item) + ": each item of an overrides list is one override, such "
                                        "as train.global_batch_size=256");
      out.push_back(at(*doc, *item, item->text));
    }
  } else if (root != nullptr && root->kind == YamlNode::Kind::Mapping) {
    walk(*doc, *root, "", 1, out);
  } else {
    throw Error(path + ": an overrides file is a list of overrides (- train.global_batch_size=256) "
                       "or a mapping of the fields to set (train: {global_batch_size: 256})");
  }
  return out;
}

} // namespace qr
