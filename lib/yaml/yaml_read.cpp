#include "yaml/yaml_read.h"

#include "support/error.h"
#include "support/input.h"
#include "support/utf8.h"
#include "yaml/scalars.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_set>
#include <yaml-cpp/depthguard.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/exceptions.h>
#include <yaml-cpp/mark.h>
#include <yaml-cpp/parser.h>

namespace qr {
namespace {

// yaml-cpp decodes the escapes \N and \_ (U+0085, U+00A0) to the single bytes 0x85 and 0xA0, not
// to UTF-8. The input is valid UTF-8, so any invalid byte in a scalar is one of those code points.
std::string utf8_escapes(const std::string& value) {
  std::string out;
  std::string_view rest = value;
  for (std::size_t bad; (bad = invalid_utf8_at(rest)) != std::string_view::npos;) {
    const auto byte = static_cast<unsigned char>(rest[bad]);
    out.append(rest.substr(0, bad));
    out += static_cast<char>(0xC0 | (byte >> 6));
    out += static_cast<char>(0x80 | (byte & 0x3F));
    rest.remove_prefix(bad + 1);
  }
  return out.empty() ? value : out.append(rest);
}

// Builds YamlNodes from yaml-cpp's parser events.
class TreeBuilder : public YAML::EventHandler {
public:
  // yaml-cpp's marks count bytes after a byte-order mark.
  TreeBuilder(YamlDoc& doc, std::string_view text, std::size_t max_nodes)
      : doc_(doc), text_(text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text),
        max_nodes_(max_nodes) {}

  int documents = 0;

  void OnDocumentStart(const YAML::Mark&) override { ++documents; }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    check_null(mark);
    YamlNode& n = make(mark, YamlNode::Kind::Null);
    n.plain = true;
    finish(n, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    auto it = anchors_.find(anchor);
    if (it == anchors_.end())
      throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                  std::to_string(mark.column + 1) + ": alias to an unknown anchor");
    attach(it->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    check_closed(mark);
    YamlNode& n = make(mark, YamlNode::Kind::Scalar);
    n.text = utf8_escapes(value);
    n.plain = tag == "?";
    if (tag != "?" && tag != "!")
      n.tag = tag;
    finish(n, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    YamlNode& n = make(mark, YamlNode::Kind::Sequence);
    if (tag != "?" && tag != "!")
      n.tag = tag;
    open(n, anchor, style == YAML::EmitterStyle::Flow);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    YamlNode& n = make(mark, YamlNode::Kind::Mapping);
    if (tag != "?" && tag != "!")
      n.tag = tag;
    open(n, anchor, style == YAML::EmitterStyle::Flow);
  }
  void OnMapEnd() override { close(); }

private:
  struct Open {
    YamlNode* node;
    bool flow;
    const YamlNode* pending_key = nullptr;
    int key_pos = -1; // where the pending key starts
  };

  YamlDoc& doc_;
  std::string_view text_;
  std::vector<Open> stack_;
  int last_pos_ = -1; // where the last node made starts
  std::map<YAML::anchor_t, const YamlNode*> anchors_;
  std::size_t max_nodes_;

  YamlNode& make(const YAML::Mark& mark, YamlNode::Kind kind) {
    // Counted as they are made, so that a huge file stops here rather than after a full parse
    // (the count with aliases expanded, afterwards, is never smaller).
    if (doc_.arena.size() >= max_nodes_)
      throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                  std::to_string(mark.column + 1) + ": more than " + std::to_string(max_nodes_) +
                  " YAML nodes; a config has a few thousand: refusing it");
    YamlNode& n = doc_.arena.emplace_back();
    last_pos_ = mark.pos;
    n.kind = kind;
    n.line = mark.line + 1;
    n.column = mark.column + 1;
    return n;
  }
  void finish(const YamlNode& n, YAML::anchor_t anchor) {
    if (anchor != YAML::NullAnchor)
      anchors_[anchor] = &n;
    attach(&n);
  }
  void open(YamlNode& n, YAML::anchor_t anchor, bool flow) {
    if (anchor != YAML::NullAnchor)
      anchors_[anchor] = &n;
    attach(&n);
    stack_.push_back({&n, flow});
  }
  void close() { stack_.pop_back(); }
  // yaml-cpp reads as nulls two things YAML does not have: a last line `key` with no ':' (a file
  // cut short; the null has the key's own position), and an empty entry of a flow collection
  // (`[a, , b]`, `{a: 1, , b: 2}`).
  void check_null(const YAML::Mark& mark) const {
    if (stack_.empty())
      return;
    const Open& top = stack_.back();
    if (!top.flow && top.pending_key != nullptr && top.key_pos == mark.pos)
      throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                  std::to_string(mark.column + 1) + ": invalid YAML: the key '" +
                  clip(top.pending_key->text) + "' has no ':' after it: write key: value");
    if (!top.flow)
      return;
    const auto pos = static_cast<std::size_t>(mark.pos);
    const bool entry = top.node->kind == YamlNode::Kind::Sequence || top.pending_key == nullptr;
    if (entry && mark.pos >= 0 && pos < text_.size() &&
        (text_[pos] == ',' || text_[pos] == ']' || text_[pos] == '}'))
      throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                  std::to_string(mark.column + 1) +
                  ": invalid YAML: an empty entry in a flow collection (two commas in a row?): "
                  "remove the extra ','");
  }
  // yaml-cpp takes a quoted scalar that is never closed to run to the end of the input, and so
  // swallows the rest of the file without a word.
  void check_closed(const YAML::Mark& mark) const {
    const auto pos = static_cast<std::size_t>(mark.pos);
    if (mark.pos < 0 || pos >= text_.size() || (text_[pos] != '"' && text_[pos] != '\''))
      return;
    const char quote = text_[pos];
    for (std::size_t i = pos + 1; i < text_.size(); ++i) {
      if (quote == '"' && text_[i] == '\\')
        ++i;
      else if (text_[i] == quote &&
               !(quote == '\'' && i + 1 < text_.size() && text_[i + 1] == '\''))
        return;
      else if (text_[i] == quote)
        ++i; // '' in single quotes
    }
    throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                std::to_string(mark.column + 1) + ": invalid YAML: the " +
                (quote == '"' ? "double" : "single") +
                "-quoted string that starts here is never closed: add the closing " +
                (quote == '"' ? "'\"'" : "\"'\""));
  }
  void attach(const YamlNode* n) {
    if (stack_.empty()) {
      if (doc_.root == nullptr)
        doc_.root = n;
      return;
    }
    Open& top = stack_.back();
    if (top.node->kind == YamlNode::Kind::Sequence) {
      top.node->items.push_back(n);
    } else if (top.pending_key == nullptr) {
      // PyYAML merges `<<: *anchor` into the mapping; yaml-cpp would keep a key named '<<'.
      if (n->kind == YamlNode::Kind::Scalar && n->plain && n->text == "<<")
        throw Error(doc_.where(*n) + ": merge keys ('<<') are not supported: write the merged "
                                     "keys out in this mapping");
      top.pending_key = n;
      top.key_pos = last_pos_;
    } else {
      top.node->entries.emplace_back(top.pending_key, n);
      top.pending_key = nullptr;
    }
  }
};

std::string mark_text(const std::string& source, const YAML::Mark& m) {
  if (m.is_null())
    return source;
  return source + ":" + std::to_string(m.line + 1) + ":" + std::to_string(m.column + 1);
}

// The 1-based line and column of a byte offset.
std::pair<std::size_t, std::size_t> line_col(std::string_view text, std::size_t pos) {
  const std::string_view before = text.substr(0, pos);
  const std::size_t line_start = before.rfind('\n') + 1; // npos + 1 == 0
  return {static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n')) + 1,
          pos - line_start + 1};
}

// The offset of the first tab in the indentation of a line up to `last_line` (1-based), or npos.
std::size_t tab_in_indentation(std::string_view text, std::size_t last_line) {
  std::size_t line = 1;
  for (std::size_t i = 0; i < text.size() && line <= last_line; ++line) {
    for (; i < text.size() && (text[i] == ' ' || text[i] == '\t'); ++i)
      if (text[i] == '\t')
        return i;
    i = text.find('\n', i);
    if (i == std::string_view::npos)
      break;
    ++i;
  }
  return std::string_view::npos;
}

// What to do about yaml-cpp's parse errors, which say what is wrong but not how to fix it.
std::string syntax_hint(const std::string& msg) {
  static const std::pair<std::string_view, std::string_view> hints[] = {
      {"end of sequence flow not found", "a '[' is never closed: add the missing ']'"},
      {"end of map flow not found", "a '{' is never closed: add the missing '}'"},
      {"illegal flow end",
       "this ']' or '}' closes nothing: remove it, or add the bracket it should close"},
      {"end of map not found",
       "this line's indentation does not line up with the keys above it: indent it like the "
       "other keys of its section"},
      {"end of sequence not found",
       "this line's indentation does not line up with the list above it: indent every '- ' "
       "item alike"},
      {"illegal map value",
       "a 'key:' where none can start: indent this line to line up with the keys of its "
       "section, or quote a value that contains ': '"},
      {"illegal block entry",
       "a '- ' list item where none can start: indent it under its key, like the other items"},
      {"illegal map key", "a '? ' key where none can start: check the indentation"},
      {"illegal EOF in scalar", "a quoted string is never closed: add the closing quote"},
      {"unknown escape character",
       "in double quotes write '\\\\' for a backslash, or use single quotes"},
      {"the referenced anchor is not defined", "define '&name' before using '*name'"},
  };
  for (const auto& [prefix, hint] : hints)
    if (msg.starts_with(prefix))
      return "; " + std::string(hint);
  return "; fix the YAML syntax here";
}

// The offset where flow nesting ('[' and '{') reaches `max_depth`, or npos. yaml-cpp's scanner
// keeps every token of an open flow collection (each could start a key) before its parser's
// depth guard sees the first, so 60 MB of '[' would take 14 GB; this scan stops at the limit.
// It skips comments, quoted scalars and block scalars (`|`, `>`), where brackets are text.
std::size_t flow_depth_exceeded_at(std::string_view text, std::size_t max_depth) {
  std::size_t depth = 0;
  char prev = '\n';                                  // the last character that was not a blank
  std::size_t line_indent = 0;                       // the current line's indentation
  std::size_t block_indent = std::string_view::npos; // in a block scalar under this indentation
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (prev == '\n') { // at a line start: measure its indentation
      std::size_t j = i;
      while (j < text.size() && text[j] == ' ')
        ++j;
      const bool blank = j == text.size() || text[j] == '\n' || text[j] == '\r';
      if (block_indent != std::string_view::npos && (blank || j - i > block_indent)) {
        i = text.find('\n', i);
        if (i == std::string_view::npos)
          break;
        continue;
      }
      block_indent = std::string_view::npos;
      line_indent = j - i;
    }
    if (c == ' ' || c == '\t' || c == '\r')
      continue;
    const bool token_start = prev == '\n' || prev == ' ' || prev == '[' || prev == '{' ||
                             prev == ',' || prev == ':' || prev == '-' || prev == '?' ||
                             text[i - 1] == ' ' || text[i - 1] == '\t';
    if (c == '#' && (prev == '\n' || text[i - 1] == ' ' || text[i - 1] == '\t')) {
      i = text.find('\n', i);
      if (i == std::string_view::npos)
        break;
      prev = '\n';
      continue;
    }
    if (c == '\n') {
      prev = '\n';
      continue;
    }
    if ((c == '"' || c == '\'') && token_start) {
      // To the closing quote: '' inside single quotes, \x inside double quotes.
      for (++i; i < text.size(); ++i) {
        if (c == '"' && text[i] == '\\')
          ++i;
        else if (text[i] == c && !(c == '\'' && i + 1 < text.size() && text[i + 1] == '\''))
          break;
        else if (c == '\'' && text[i] == '\'')
          ++i;
      }
      prev = c;
      continue;
    }
    if (depth == 0 && (c == '|' || c == '>') && token_start && prev != '\n') {
      block_indent = line_indent;
      i = text.find('\n', i);
      if (i == std::string_view::npos)
        break;
      prev = '\n';
      continue;
    }
    if ((c == '[' || c == '{') && (depth > 0 || token_start)) {
      if (++depth >= max_depth)
        return i;
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
    prev = c;
  }
  return std::string_view::npos;
}

} // namespace

std::string YamlDoc::where(const YamlNode& n) const {
  if (!has_positions)
    return source;
  return source + ":" + std::to_string(n.line) + ":" + std::to_string(n.column);
}

void ExpansionBudget::spend(const YamlDoc& doc, const YamlNode& at) {
  if (left_ == 0)
    throw Error(doc.where(at) +
                ": document expands to too many nodes (aliases nested too deep?); refusing it: "
                "write the config out without aliases of aliases");
  --left_;
  if (at.text.size() > bytes_left_)
    throw Error(doc.where(at) + ": document expands to more than " +
                std::to_string(max_bytes_ >> 20) +
                " MiB of text through its aliases; refusing it: write the config out without "
                "aliases of long values");
  bytes_left_ -= at.text.size();
}

std::shared_ptr<YamlDoc> parse_yaml(std::string_view text, const std::string& source,
                                    const YamlLimits& limits) {
  if (text.size() > limits.max_bytes)
    throw Error(source + ": input is " + std::to_string(text.size() >> 20) +
                " MiB, larger than the " + std::to_string(limits.max_bytes >> 20) +
                " MiB a config may be");
  if (const std::size_t bad = invalid_utf8_at(text); bad != std::string_view::npos) {
    const auto [line, col] = line_col(text, bad);
    throw Error(source + ": invalid UTF-8 at byte " + std::to_string(bad) + " (line " +
                std::to_string(line) + ", column " + std::to_string(col) +
                "); configs must be UTF-8 text: save the file as UTF-8");
  }
  char32_t cp = 0;
  if (const std::size_t bad = unprintable_at(text, cp); bad != std::string_view::npos) {
    const auto [line, col] = line_col(text, bad);
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(cp));
    throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(col) +
                ": control character " + code +
                ", which YAML does not allow in a file: remove it, or write it as an escape in a "
                "double-quoted string");
  }
  // YAML reads a lone CR as a line break; yaml-cpp keeps it in the scalar.
  for (std::size_t cr = text.find('\r'); cr != std::string_view::npos; cr = text.find('\r', cr + 1))
    if (cr + 1 == text.size() || text[cr + 1] != '\n') {
      const auto [line, col] = line_col(text, cr);
      throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(col) +
                  ": a carriage return without a line feed (old Mac line ending): save the file "
                  "with \\n or \\r\\n line endings");
    }
  if (const std::size_t at = flow_depth_exceeded_at(text, limits.max_depth);
      at != std::string_view::npos) {
    const auto [line, col] = line_col(text, at);
    throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(col) +
                ": nesting deeper than " + std::to_string(limits.max_depth) +
                " levels; a config is never that deep");
  }
  auto doc = std::make_shared<YamlDoc>();
  doc->source = source;
  std::istringstream in{std::string(text)};
  TreeBuilder builder(*doc, text, limits.max_nodes);
  try {
    YAML::Parser parser(in);
    while (parser.HandleNextDocument(builder)) {
      if (builder.documents > 1)
        throw Error(source + ": more than one YAML document; a config is one document: keep "
                             "one, with no '---' line between its parts");
    }
  } catch (const YAML::DeepRecursion& e) {
    throw Error(mark_text(source, e.mark) + ": nesting deeper than " + std::to_string(e.depth()) +
                " levels; a config is never that deep");
  } catch (const YAML::Exception& e) {
    // A tab in the indentation is the usual cause, whatever yaml-cpp makes of it.
    const std::size_t tab = tab_in_indentation(
        text, e.mark.is_null() ? text.size() : static_cast<std::size_t>(e.mark.line) + 1);
    if (tab != std::string_view::npos) {
      const auto [line, col] = line_col(text, tab);
      throw Error(source + ":" + std::to_string(line) + ":" + std::to_string(col) +
                  ": a tab indents this line; YAML indents with spaces only: replace the tab "
                  "with spaces");
    }
    throw Error(mark_text(source, e.mark) + ": invalid YAML: " + e.msg + syntax_hint(e.msg));
  }
  if (doc->root == nullptr)
    throw Error(source + ": empty document (nothing but blanks and comments); give YAML content");
  // Count nodes and bytes once with aliases expanded, so that later conversions cannot blow up.
  ExpansionBudget budget(limits.max_nodes, limits.max_bytes);
  std::vector<const YamlNode*> todo{doc->root};
  while (!todo.empty()) {
    const YamlNode* n = todo.back();
    todo.pop_back();
    budget.spend(*doc, *n);
    for (const YamlNode* c : n->items)
      todo.push_back(c);
    for (const auto& [k, v] : n->entries) {
      todo.push_back(k);
      todo.push_back(v);
    }
  }
  return doc;
}

std::shared_ptr<YamlDoc> read_yaml_file(const std::string& path, const YamlLimits& limits) {
  return parse_yaml(read_input_file(path, limits.max_bytes), path, limits);
}

// Format: "<count> <root>\n", then per node "<kind> <plain> <line> <col> <tag-len>:<tag>
// <text-len>:<text> <n> <child>...\n" with kind N/S/L/M; a mapping lists key, value pairs.
std::string serialize_yaml_doc(const YamlDoc& doc) {
  std::map<const YamlNode*, std::size_t> index;
  for (const YamlNode& n : doc.arena)
    index.emplace(&n, index.size());
  std::string out =
      std::to_string(doc.arena.size()) + " " + std::to_string(index.at(doc.root)) + "\n";
  for (const YamlNode& n : doc.arena) {
    static constexpr char kinds[] = {'N', 'S', 'L', 'M'};
    out += kinds[static_cast<int>(n.kind)];
    out += " " + std::to_string(n.plain ? 1 : 0) + " " + std::to_string(n.line) + " " +
           std::to_string(n.column) + " " + std::to_string(n.tag.size()) + ":" + n.tag + " " +
           std::to_string(n.text.size()) + ":" + n.text;
    std::vector<std::size_t> children;
    for (const YamlNode* c : n.items)
      children.push_back(index.at(c));
    for (const auto& [k, v] : n.entries) {
      children.push_back(index.at(k));
      children.push_back(index.at(v));
    }
    out += " " + std::to_string(children.size());
    for (std::size_t c : children)
      out += " " + std::to_string(c);
    out += "\n";
  }
  return out;
}

std::shared_ptr<YamlDoc> deserialize_yaml_doc(std::string_view data, const std::string& source) {
  std::size_t pos = 0;
  auto fail = [&]() -> Error {
    return Error(source + ": corrupt embedded data at byte " + std::to_string(pos));
  };
  auto number = [&]() -> std::size_t {
    while (pos < data.size() && (data[pos] == ' ' || data[pos] == '\n'))
      ++pos;
    std::size_t v = 0;
    auto [p, ec] = std::from_chars(data.data() + pos, data.data() + data.size(), v);
    if (ec != std::errc())
      throw fail();
    pos = static_cast<std::size_t>(p - data.data());
    return v;
  };
  auto text = [&]() -> std::string {
    const std::size_t len = number();
    if (pos >= data.size() || data[pos] != ':' || pos + 1 + len > data.size())
      throw fail();
    std::string t(data.substr(pos + 1, len));
    pos += 1 + len;
    return t;
  };
  auto doc = std::make_shared<YamlDoc>();
  doc->source = source;
  const std::size_t count = number();
  const std::size_t root = number();
  doc->arena.resize(count);
  std::vector<std::vector<std::size_t>> children(count);
  for (std::size_t i = 0; i < count; ++i) {
    while (pos < data.size() && (data[pos] == ' ' || data[pos] == '\n'))
      ++pos;
    if (pos >= data.size())
      throw fail();
    YamlNode& n = doc->arena[i];
    switch (data[pos++]) {
    case 'N':
      n.kind = YamlNode::Kind::Null;
      break;
    case 'S':
      n.kind = YamlNode::Kind::Scalar;
      break;
    case 'L':
      n.kind = YamlNode::Kind::Sequence;
      break;
    case 'M':
      n.kind = YamlNode::Kind::Mapping;
      break;
    default:
      throw fail();
    }
    n.plain = number() == 1;
    n.line = static_cast<int>(number());
    n.column = static_cast<int>(number());
    n.tag = text();
    n.text = text();
    children[i].resize(number());
    for (std::size_t& c : children[i])
      if ((c = number()) >= count)
        throw fail();
  }
  for (std::size_t i = 0; i < count; ++i) {
    YamlNode& n = doc->arena[i];
    const auto& c = children[i];
    if (n.kind == YamlNode::Kind::Sequence)
      for (std::size_t k : c)
        n.items.push_back(&doc->arena[k]);
    else
      for (std::size_t k = 0; k + 1 < c.size(); k += 2)
        n.entries.emplace_back(&doc->arena[c[k]], &doc->arena[c[k + 1]]);
  }
  if (root >= count)
    throw fail();
  doc->root = &doc->arena[root];
  return doc;
}

std::string duplicate_key_hint(const YamlNode& map, const YamlNode& key) {
  for (const auto& [k, v] : map.entries)
    if (k->text == key.text && k != &key)
      return " (first at line " + std::to_string(k->line) + "); keep one of them";
  return "; keep one of them";
}

Value resolve_plain_scalar(const std::string& t) {
  if (t.empty() || t == "~" || t == "null" || t == "Null" || t == "NULL")
    return Null{};
  static const std::set<std::string> truths{"yes",  "Yes", "YES", "true", "True",
                                            "TRUE", "on",  "On",  "ON"};
  static const std::set<std::string> falses{"no",    "No",  "NO",  "false", "False",
                                            "FALSE", "off", "Off", "OFF"};
  if (truths.count(t))
    return true;
  if (falses.count(t))
    return false;
  const char c0 = t[0];
  if (!(std::isdigit(static_cast<unsigned char>(c0)) || c0 == '-' || c0 == '+' || c0 == '.'))
    return t;
  if (auto v = parse_decimal_int(t))
    return *v;
  if (is_decimal_int_text(t))
    return *parse_float_text(t); // beyond int64: Python keeps an int; a float is the closest
  if (is_other_base_int(t)) {
    std::string s;
    for (char c : t)
      if (c != '_')
        s += c;
    const bool neg = s[0] == '-';
    if (s[0] == '-' || s[0] == '+')
      s.erase(0, 1);
    int base = 8;
    if (s.rfind("0b", 0) == 0) {
      base = 2;
      s.erase(0, 2);
    } else if (s.rfind("0x", 0) == 0) {
      base = 16;
      s.erase(0, 2);
    }
    std::int64_t v = 0;
    if (std::from_chars(s.data(), s.data() + s.size(), v, base).ec == std::errc())
      return neg ? -v : v;
    double d = 0; // beyond int64, as for decimal ints
    for (char c : s)
      d = d * base + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    return neg ? -d : d;
  }
  if (is_pyyaml_float(t))
    return *parse_float_text(t);
  return t; // sexagesimal numbers and timestamps stay text
}

namespace {

Value convert(const YamlDoc& doc, const YamlNode& n) {
  switch (n.kind) {
  case YamlNode::Kind::Null:
    return Null{};
  case YamlNode::Kind::Scalar:
    if (!n.tag.empty()) {
      if (n.tag == "tag:yaml.org,2002:str")
        return n.text;
      if (n.tag == "tag:yaml.org,2002:null" || n.tag == "tag:yaml.org,2002:bool" ||
          n.tag == "tag:yaml.org,2002:int" || n.tag == "tag:yaml.org,2002:float")
        return resolve_plain_scalar(n.text);
      throw Error(doc.where(n) + ": unsupported YAML tag '" + n.tag + "'; remove the tag");
    }
    return n.plain ? resolve_plain_scalar(n.text) : Value(n.text);
  case YamlNode::Kind::Sequence: {
    List l;
    l.reserve(n.items.size());
    for (const YamlNode* item : n.items)
      l.push_back(convert(doc, *item));
    return l;
  }
  case YamlNode::Kind::Mapping: {
    Map m;
    std::unordered_set<std::string> seen; // a set, so that a big mapping reads in linear time
    for (const auto& [k, v] : n.entries) {
      if (k->kind != YamlNode::Kind::Scalar && k->kind != YamlNode::Kind::Null)
        throw Error(doc.where(*k) + ": mapping keys must be plain scalars");
      Value key = k->kind == YamlNode::Kind::Null ? Value(Null{}) : convert(doc, *k);
      Key mk;
      if (key.is_int()) {
        mk = {std::to_string(key.as_int()), true};
      } else if (key.is_str()) {
        mk = {key.as_str(), false};
      } else {
        mk = {k->text, false};
      }
      if (!seen.insert(mk.text).second)
        throw Error(doc.where(*k) + ": duplicate key '" + mk.text + "'" +
                    duplicate_key_hint(n, *k));
      m.append(std::move(mk), convert(doc, *v));
    }
    return m;
  }
  }
  return Null{};
}

} // namespace

Value to_untyped_value(const YamlDoc& doc, const YamlNode& node) {
  return convert(doc, node);
}

} // namespace qr
