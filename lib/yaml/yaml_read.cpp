#include "yaml/yaml_read.h"

#include "support/error.h"
#include "support/input.h"
#include "support/utf8.h"
#include "yaml/scalars.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
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

// The 1-based line and column of a byte offset.
std::pair<std::size_t, std::size_t> line_col(std::string_view text, std::size_t pos) {
  const std::string_view before = text.substr(0, pos);
  const std::size_t line_start = before.rfind('\n') + 1; // npos + 1 == 0
  return {static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n')) + 1,
          pos - line_start + 1};
}

std::string position(const std::string& source, std::string_view text, std::size_t pos) {
  const auto [line, col] = line_col(text, pos);
  return source + ":" + std::to_string(line) + ":" + std::to_string(col);
}

// PyYAML's scanner (scanner.py) for quoted and block scalars, whose values yaml-cpp gets wrong in
// corners (a single-quoted scalar of line breaks reads as ""). The text is valid UTF-8 whose only
// line breaks are \n and \r\n: parse_yaml refuses the others first.
class PyYamlScalarScanner {
public:
  struct Scanned {
    std::string value;
    std::size_t end; // just past the scalar
  };

  PyYamlScalarScanner(std::string_view text, const std::string& source)
      : text_(text), source_(source) {}

  // The quoted scalar whose opening quote is at `start` (scan_flow_scalar).
  Scanned quoted(std::size_t start) {
    const char quote = text_[start];
    const bool dbl = quote == '"';
    std::size_t p = start + 1;
    std::string out;
    non_spaces(p, out, dbl, start);
    while (p < text_.size() && text_[p] != quote) {
      spaces(p, out, start);
      non_spaces(p, out, dbl, start);
    }
    if (p >= text_.size())
      fail(start, "the quoted string that starts here is never closed: add the closing quote");
    return {out, p + 1};
  }

  // The block scalar whose indicator ('|' or '>') is at `start`, in a block collection indented
  // by `parent_indent` (-1 at the root) (scan_block_scalar).
  Scanned block(std::size_t start, int parent_indent) {
    const bool folded = text_[start] == '>';
    std::size_t p = start + 1;
    std::optional<bool> keep; // chomping: nullopt clips, true keeps, false strips
    int increment = 0;
    auto digit = [&] {
      if (p < text_.size() && text_[p] >= '0' && text_[p] <= '9') {
        if ((increment = text_[p] - '0') == 0)
          fail(p, "a block scalar's indentation indicator is 1 to 9, not 0");
        ++p;
      }
    };
    auto chomp = [&] {
      if (p < text_.size() && (text_[p] == '+' || text_[p] == '-'))
        keep = text_[p++] == '+';
    };
    if (p < text_.size() && (text_[p] == '+' || text_[p] == '-')) {
      chomp();
      digit();
    } else {
      digit();
      chomp();
    }
    if (p < text_.size() && text_[p] != ' ' && !at_break(p))
      fail(p, "expected a block scalar's chomping or indentation indicator here, or a space");
    while (p < text_.size() && text_[p] == ' ')
      ++p;
    if (p < text_.size() && text_[p] == '#')
      while (p < text_.size() && !at_break(p))
        ++p;
    if (p < text_.size() && !at_break(p))
      fail(p, "expected a comment or a line break after a block scalar's header (a tab?)");
    if (p < text_.size())
      p += break_len(p);
    line_start_ = p;
    const int min_indent = std::max(parent_indent + 1, 1);
    int indent = 0;
    std::string breaks;
    if (increment == 0) {
      int max_indent = 0;
      while (p < text_.size() && (text_[p] == ' ' || at_break(p))) {
        if (text_[p] == ' ') {
          max_indent = std::max(max_indent, column(++p));
        } else {
          breaks += '\n';
          p += break_len(p);
          line_start_ = p;
        }
      }
      indent = std::max(min_indent, max_indent);
    } else {
      indent = min_indent + increment - 1;
      block_breaks(p, indent, breaks);
    }
    std::string out;
    std::string line_break;
    while (column(p) == indent && p < text_.size()) {
      out += breaks;
      const bool leading_non_space = text_[p] != ' ' && text_[p] != '\t';
      const std::size_t from = p;
      while (p < text_.size() && !at_break(p))
        ++p;
      out.append(text_.substr(from, p - from));
      line_break.clear();
      if (p < text_.size()) {
        line_break = "\n";
        p += break_len(p);
        line_start_ = p;
      }
      breaks.clear();
      block_breaks(p, indent, breaks);
      if (column(p) != indent || p >= text_.size())
        break;
      if (folded && line_break == "\n" && leading_non_space && text_[p] != ' ' &&
          text_[p] != '\t') {
        if (breaks.empty())
          out += ' ';
      } else {
        out += line_break;
      }
    }
    if (keep != false)
      out += line_break;
    if (keep == true)
      out += breaks;
    return {out, p};
  }

private:
  std::string_view text_;
  const std::string& source_;
  std::size_t line_start_ = 0;

  [[noreturn]] void fail(std::size_t at, const std::string& what) const {
    throw Error(position(source_, text_, at) + ": invalid YAML: " + what);
  }
  [[nodiscard]] bool at_break(std::size_t p) const {
    return p < text_.size() &&
           (text_[p] == '\n' || (text_[p] == '\r' && p + 1 < text_.size() && text_[p + 1] == '\n'));
  }
  [[nodiscard]] std::size_t break_len(std::size_t p) const { return text_[p] == '\r' ? 2 : 1; }
  [[nodiscard]] int column(std::size_t p) const { return static_cast<int>(p - line_start_); }

  void block_breaks(std::size_t& p, int indent, std::string& breaks) {
    while (column(p) < indent && p < text_.size() && text_[p] == ' ')
      ++p;
    while (at_break(p)) {
      breaks += '\n';
      p += break_len(p);
      line_start_ = p;
      while (column(p) < indent && p < text_.size() && text_[p] == ' ')
        ++p;
    }
  }

  void non_spaces(std::size_t& p, std::string& out, bool dbl, std::size_t start) {
    static constexpr std::string_view stops = "'\"\\ \t\r\n";
    for (;;) {
      const std::size_t from = p;
      while (p < text_.size() && stops.find(text_[p]) == std::string_view::npos)
        ++p;
      out.append(text_.substr(from, p - from));
      if (p >= text_.size())
        return;
      const char ch = text_[p];
      if (!dbl && ch == '\'' && p + 1 < text_.size() && text_[p + 1] == '\'') {
        out += '\'';
        p += 2;
      } else if ((dbl && ch == '\'') || (!dbl && (ch == '"' || ch == '\\'))) {
        out += ch;
        ++p;
      } else if (dbl && ch == '\\') {
        escape(++p, out, start);
      } else {
        return;
      }
    }
  }

  // After a backslash in double quotes.
  void escape(std::size_t& p, std::string& out, std::size_t start) {
    static const std::pair<char, std::string_view> replacements[] = {
        {'0', std::string_view("\0", 1)},
        {'a', "\x07"},
        {'b', "\x08"},
        {'t', "\x09"},
        {'\t', "\x09"},
        {'n', "\x0A"},
        {'v', "\x0B"},
        {'f', "\x0C"},
        {'r', "\x0D"},
        {'e', "\x1B"},
        {' ', " "},
        {'"', "\""},
        {'\\', "\\"},
        {'/', "/"},
        {'N', "\xC2\x85"},
        {'_', "\xC2\xA0"},
        {'L', "\xE2\x80\xA8"},
        {'P', "\xE2\x80\xA9"}};
    if (p >= text_.size())
      fail(start, "the quoted string that starts here is never closed: add the closing quote");
    const char ch = text_[p];
    for (const auto& [c, replacement] : replacements)
      if (ch == c) {
        out += replacement;
        ++p;
        return;
      }
    if (ch == 'x' || ch == 'u' || ch == 'U') {
      const std::size_t digits = ch == 'x' ? 2 : ch == 'u' ? 4 : 8;
      ++p;
      char32_t code = 0;
      for (std::size_t k = 0; k < digits; ++k, ++p) {
        const char h = p < text_.size() ? text_[p] : '\0';
        if (!std::isxdigit(static_cast<unsigned char>(h)))
          fail(p, "expected " + std::to_string(digits) + " hexadecimal digits in this escape");
        code = code * 16 + static_cast<char32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
      }
      // PyYAML makes a string of a lone surrogate (which no UTF-8 file can hold) and refuses
      // code points past U+10FFFF.
      if ((code >= 0xD800 && code <= 0xDFFF) || code > 0x10FFFF)
        fail(p - digits - 2, "this escape is not a Unicode character (a surrogate, or past "
                             "U+10FFFF): write the character itself, escaped as \\U for one "
                             "past U+FFFF");
      append_utf8(out, std::u32string_view(&code, 1));
      return;
    }
    if (at_break(p)) {
      p += break_len(p);
      flow_breaks(p, out, start);
      return;
    }
    fail(p - 1, "unknown escape in a double-quoted string: write '\\\\' for a backslash, or use "
                "single quotes");
  }

  void spaces(std::size_t& p, std::string& out, std::size_t start) {
    const std::size_t from = p;
    while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t'))
      ++p;
    if (p >= text_.size())
      fail(start, "the quoted string that starts here is never closed: add the closing quote");
    if (at_break(p)) {
      p += break_len(p);
      std::string breaks;
      flow_breaks(p, breaks, start);
      out += breaks.empty() ? std::string(" ") : breaks;
    } else {
      out.append(text_.substr(from, p - from));
    }
  }

  void flow_breaks(std::size_t& p, std::string& out, std::size_t start) {
    for (;;) {
      const std::string_view next = text_.substr(p, 3);
      if ((next == "---" || next == "...") &&
          (p + 3 == text_.size() || text_[p + 3] == ' ' || text_[p + 3] == '\t' || at_break(p + 3)))
        fail(p, "a document marker ('" + std::string(next) +
                    "') inside the quoted string that starts at " +
                    position(source_, text_, start) + ": indent the line");
      while (p < text_.size() && (text_[p] == ' ' || text_[p] == '\t'))
        ++p;
      if (!at_break(p))
        return;
      out += '\n';
      p += break_len(p);
    }
  }
};

// Builds YamlNodes from yaml-cpp's parser events.
class TreeBuilder : public YAML::EventHandler {
public:
  // yaml-cpp's marks count bytes after a byte-order mark.
  TreeBuilder(YamlDoc& doc, std::string_view text, std::size_t max_nodes)
      : doc_(doc), text_(text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text),
        max_nodes_(max_nodes), scanner_(text_, doc.source) {}

  // [start, end) of each quoted and block scalar, in document order: where PyYAML allows tabs.
  std::vector<std::pair<std::size_t, std::size_t>> scalar_spans;

  void OnDocumentStart(const YAML::Mark& mark) override {
    if (++documents_ > 1)
      throw Error(
          doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
          std::to_string(mark.column + 1) +
          ": more than one YAML document; a config is one document: keep one, with no '---' "
          "line between its parts");
  }
  void OnDocumentEnd() override {}

  void OnNull(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    check_null(mark);
    if (anchor != YAML::NullAnchor)
      check_anchor_name(mark);
    YamlNode& n = make(mark, YamlNode::Kind::Null);
    n.plain = true;
    finish(n, anchor);
  }
  void OnAlias(const YAML::Mark& mark, YAML::anchor_t anchor) override {
    check_anchor_name(mark);
    auto it = anchors_.find(anchor);
    if (it == anchors_.end())
      throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                  std::to_string(mark.column + 1) + ": alias to an unknown anchor");
    attach(it->second);
  }
  void OnScalar(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                const std::string& value) override {
    check_closed(mark);
    if (anchor != YAML::NullAnchor)
      check_anchor_name(mark);
    YamlNode& n = make(mark, YamlNode::Kind::Scalar);
    n.text = utf8_escapes(value);
    n.plain = tag == "?";
    if (tag != "?" && tag != "!")
      n.tag = tag;
    if (!n.plain)
      rescan(n, static_cast<std::size_t>(mark.pos));
    // In flow context PyYAML reads a leading ':' or '?' as an indicator, even with no space after.
    if (n.plain && !stack_.empty() && stack_.back().flow &&
        (n.text.starts_with(':') || n.text.starts_with('?')))
      throw Error(doc_.where(n) + ": '" + clip(n.text) +
                  "' starts with an indicator inside '[...]' or '{...}', which YAML readers read "
                  "differently: quote it");
    // Here rather than in conversion, so that typing by schema meets only what PyYAML reads too.
    const bool key = !stack_.empty() && stack_.back().node->kind == YamlNode::Kind::Mapping &&
                     stack_.back().pending_key == nullptr;
    // As a key, PyYAML reads '=' as the string "="; attach() refuses a '<<' key as a merge key.
    if (n.plain && !(key && (n.text == "<<" || n.text == "=")))
      if (const std::string why = plain_scalar_refusal(n.text); !why.empty())
        throw Error(doc_.where(n) + ": " + why);
    check_placement(n, static_cast<std::size_t>(mark.pos));
    finish(n, anchor);
  }
  void OnSequenceStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                       YAML::EmitterStyle::value style) override {
    if (anchor != YAML::NullAnchor)
      check_anchor_name(mark);
    YamlNode& n = make(mark, YamlNode::Kind::Sequence);
    if (tag == "!") // PyYAML reads `![]` as the tag '![]', not '!' before '[]'
      throw Error(doc_.where(n) + ": the non-specific tag '!', which PyYAML reads differently: "
                                  "remove it");
    if (tag != "?") {
      n.tag = tag;
      past_properties(static_cast<std::size_t>(mark.pos)); // refuses tags PyYAML reads otherwise
    }
    if (style == YAML::EmitterStyle::Flow)
      check_placement(n, static_cast<std::size_t>(mark.pos));
    open(n, anchor, style == YAML::EmitterStyle::Flow);
  }
  void OnSequenceEnd() override { close(); }
  void OnMapStart(const YAML::Mark& mark, const std::string& tag, YAML::anchor_t anchor,
                  YAML::EmitterStyle::value style) override {
    if (anchor != YAML::NullAnchor)
      check_anchor_name(mark);
    YamlNode& n = make(mark, YamlNode::Kind::Mapping);
    if (tag == "!") // PyYAML reads `![]` as the tag '![]', not '!' before '[]'
      throw Error(doc_.where(n) + ": the non-specific tag '!', which PyYAML reads differently: "
                                  "remove it");
    if (tag != "?") {
      n.tag = tag;
      past_properties(static_cast<std::size_t>(mark.pos)); // refuses tags PyYAML reads otherwise
    }
    if (style == YAML::EmitterStyle::Flow)
      check_placement(n, static_cast<std::size_t>(mark.pos));
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
  int documents_ = 0;
  PyYamlScalarScanner scanner_;
  std::set<std::string_view, std::less<>> anchor_names_;

  // Where the scalar of a node that starts at `pos` starts, past its tag and anchor.
  std::size_t past_properties(std::size_t pos) const {
    auto blank = [&](std::size_t p) {
      return text_[p] == ' ' || text_[p] == '\t' || text_[p] == '\r' || text_[p] == '\n';
    };
    while (pos < text_.size() && (text_[pos] == '!' || text_[pos] == '&')) {
      const std::size_t from = pos;
      while (pos < text_.size() && !blank(pos) &&
             std::string_view(",[]{}").find(text_[pos]) == std::string_view::npos)
        ++pos;
      // PyYAML resolves a scalar tagged '!' as if it were plain, quoted or not (! '12' is 12).
      if (pos - from == 1 && text_[from] == '!')
        throw Error(position(doc_.source, text_, from) +
                    ": the non-specific tag '!', which PyYAML reads differently: remove it");
      // A tag is `!suffix` or `!!suffix` (PyYAML's URI characters) before a blank; yaml-cpp also
      // takes `!>`, `!"x"` and `!a!b` (an undeclared handle), and splits them otherwise.
      const std::string_view token = text_.substr(from, pos - from);
      const std::size_t suffix = token.starts_with("!!") ? 2 : 1;
      const bool tag_ok =
          token.size() > suffix &&
          std::all_of(token.begin() + static_cast<std::ptrdiff_t>(suffix), token.end(), [](char c) {
            return std::isalnum(static_cast<unsigned char>(c)) ||
                   std::string_view("-;/?:@&=+$_.~*'()%").find(c) != std::string_view::npos;
          });
      if (text_[from] == '!' && (!tag_ok || (pos < text_.size() && !blank(pos))))
        throw Error(position(doc_.source, text_, from) +
                    ": a tag that YAML readers read differently: remove it");
      if (pos < text_.size() && !blank(pos))
        return pos;
      for (;;) {
        while (pos < text_.size() && blank(pos))
          ++pos;
        if (pos >= text_.size() || text_[pos] != '#')
          break;
        while (pos < text_.size() && text_[pos] != '\n')
          ++pos;
      }
    }
    return pos;
  }

  // PyYAML wants a block mapping's value, and an explicit key ('? '), indented past the
  // mapping's keys when it starts on a later line (`a:\n'x'` is an error there); yaml-cpp reads
  // them as the entry's. Called for scalars and flow collections starting at `pos`.
  void check_placement(const YamlNode& n, std::size_t pos) const {
    if (stack_.empty() || stack_.back().flow || stack_.back().node->kind != YamlNode::Kind::Mapping)
      return;
    const YamlNode& map = *stack_.back().node;
    if (n.column > map.column)
      return;
    const YamlNode* key = stack_.back().pending_key;
    bool later_line = key != nullptr && n.line > key->line;
    if (key == nullptr && pos < text_.size()) { // a key: after a '?' on an earlier line?
      std::size_t p = pos;
      while (p > 0 && std::string_view(" \t\r\n").find(text_[p - 1]) != std::string_view::npos)
        --p;
      const bool indicator = p > 0 && text_[p - 1] == '?' &&
                             (p == 1 || text_[p - 2] == ' ' || text_[p - 2] == '\n') &&
                             (scalar_spans.empty() || p - 1 >= scalar_spans.back().second);
      later_line = indicator && text_.substr(p, pos - p).find('\n') != std::string_view::npos;
    }
    if (later_line)
      throw Error(doc_.where(n) + ": this " + (key != nullptr ? "value" : "key") +
                  " starts a line at its mapping's indentation; YAML readers disagree on what it "
                  "belongs to: indent it past the keys, or put it on the line of its " +
                  (key != nullptr ? "key ('key: value')" : "'?'"));
  }

  // Reads a quoted scalar again as PyYAML does; checks that yaml-cpp read a block scalar so.
  void rescan(YamlNode& n, std::size_t mark_pos) {
    const std::size_t at = past_properties(mark_pos);
    if (at >= text_.size())
      return;
    const char c = text_[at];
    if (c == '"' || c == '\'') {
      auto scanned = scanner_.quoted(at);
      n.text = std::move(scanned.value);
      scalar_spans.emplace_back(at, scanned.end);
    } else if (c == '|' || c == '>') {
      if (!stack_.empty() && stack_.back().flow)
        throw Error(position(doc_.source, text_, at) +
                    ": a block scalar ('|' or '>') inside '[...]' or '{...}': quote the text");
      const int parent_indent = stack_.empty() ? -1 : stack_.back().node->column - 1;
      auto scanned = scanner_.block(at, parent_indent);
      // yaml-cpp drops trailing blank lines that a '+' (keep) block scalar keeps at the end of
      // a mapping or file; other differences mean it read other lines.
      auto body = [](std::string_view v) { return v.substr(0, v.find_last_not_of('\n') + 1); };
      if (body(scanned.value) != body(n.text))
        throw Error(position(doc_.source, text_, at) +
                    ": this block scalar's lines are read differently by YAML readers (check "
                    "the indentation of its lines, and of the line after it): write it in "
                    "double quotes");
      n.text = std::move(scanned.value);
      scalar_spans.emplace_back(at, scanned.end);
    }
  }

  // PyYAML's anchor and alias names are letters, digits, '-' and '_' (`&a:` is the anchor 'a'
  // before a ':'); yaml-cpp takes any run of non-blank characters. Reads past a tag first.
  void check_anchor_name(const YAML::Mark& mark) {
    if (mark.pos < 0)
      return;
    auto p = static_cast<std::size_t>(mark.pos);
    auto blank = [&](std::size_t i) {
      return i >= text_.size() ||
             std::string_view(" \t\r\n").find(text_[i]) != std::string_view::npos;
    };
    if (p < text_.size() && text_[p] == '!') {
      while (!blank(p))
        ++p;
      while (p < text_.size() && blank(p))
        ++p;
    }
    if (p >= text_.size() || (text_[p] != '&' && text_[p] != '*'))
      return;
    const std::size_t start = p++;
    while (p < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[p])) ||
                                text_[p] == '-' || text_[p] == '_'))
      ++p;
    const bool flow = !stack_.empty() && stack_.back().flow;
    if (p == start + 1 ||
        !(blank(p) || (flow && (text_[p] == ',' || text_[p] == ']' || text_[p] == '}'))))
      throw Error(position(doc_.source, text_, start) +
                  ": an anchor or alias name other than letters, digits, '-' and '_' followed by "
                  "a space, which YAML readers read differently: rename it");
    // PyYAML refuses an anchor defined twice; yaml-cpp lets the second replace the first.
    if (text_[start] == '&' &&
        !anchor_names_.emplace(text_.substr(start + 1, p - start - 1)).second)
      throw Error(position(doc_.source, text_, start) +
                  ": this anchor is defined twice; PyYAML refuses that: rename one of them");
  }

  YamlNode& make(const YAML::Mark& mark, YamlNode::Kind kind) {
    // Counted as they are made, so that a huge file stops here rather than after a full parse
    // (the count with aliases expanded, afterwards, is never smaller).
    if (doc_.arena.size() >= max_nodes_)
      throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                  std::to_string(mark.column + 1) + ": more than " + std::to_string(max_nodes_) +
                  " YAML nodes; a config has a few thousand: refusing it");
    if (!scalar_spans.empty() && mark.pos >= 0 &&
        static_cast<std::size_t>(mark.pos) < scalar_spans.back().second)
      throw Error(doc_.source + ":" + std::to_string(mark.line + 1) + ":" +
                  std::to_string(mark.column + 1) +
                  ": YAML readers disagree on where the scalar before this ends: check its "
                  "quotes and the indentation of its lines");
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
      // Keys are strings or ints; PyYAML would make a bool, None or float of these.
      if (n->kind == YamlNode::Kind::Null || (n->kind == YamlNode::Kind::Scalar && n->plain)) {
        const Value key = n->kind == YamlNode::Kind::Null ? Value() : resolve_plain_scalar(n->text);
        if (!key.is_int() && !key.is_str())
          throw Error(doc_.where(*n) + ": the key '" + clip(n->text) + "' is a " +
                      std::string(kind_name(key)) +
                      " to PyYAML's safe_load, not a string: quote it");
      }
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

// The offset of the first tab PyYAML refuses, or npos. Its scanner skips only spaces between
// tokens, so a tab is an error anywhere but in a quoted scalar, a block scalar's lines and a
// comment (`a: b\tc`, `a:\tb`, `a: 1\t# c`).
std::size_t stray_tab_at(std::string_view text,
                         const std::vector<std::pair<std::size_t, std::size_t>>& spans) {
  std::size_t span = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    while (span < spans.size() && spans[span].second <= i)
      ++span;
    if (span < spans.size() && i >= spans[span].first) {
      i = spans[span].second - 1;
      continue;
    }
    if (text[i] == '#' && (i == 0 || text[i - 1] == ' ' || text[i - 1] == '\n')) {
      i = text.find('\n', i);
      if (i == std::string_view::npos)
        break;
    } else if (text[i] == '\t') {
      return i;
    }
  }
  return std::string_view::npos;
}

// The offset of the first directive other than `%YAML 1.1` or `%YAML 1.2` before the content
// (yaml-cpp reads `%YAML\ 1.1`, `%YA: ML` and a directive after the content; PyYAML refuses
// them), or npos. A '%' that starts a line outside quoted and block scalars is a directive, or an
// error, to PyYAML.
std::size_t odd_directive_at(std::string_view text,
                             const std::vector<std::pair<std::size_t, std::size_t>>& spans) {
  bool content = false; // a line other than blanks, comments and directives came before
  for (std::size_t i = 0; i < text.size();) {
    std::size_t end = text.find('\n', i);
    if (end == std::string_view::npos)
      end = text.size();
    std::string_view line = text.substr(i, end - i);
    if (line.ends_with('\r'))
      line.remove_suffix(1);
    if (const std::size_t comment = line.find(" #"); comment != std::string_view::npos)
      line = line.substr(0, comment);
    while (line.ends_with(' '))
      line.remove_suffix(1);
    // The spans are in order and apart: the one that could hold i starts at or before it.
    const auto after =
        std::upper_bound(spans.begin(), spans.end(), i,
                         [](std::size_t at, const auto& span) { return at < span.first; });
    const bool in_scalar = after != spans.begin() && std::prev(after)->second > i;
    if (line.starts_with('%') && !in_scalar) {
      if (content || (line != "%YAML 1.1" && line != "%YAML 1.2"))
        return i;
    } else if (!line.empty() && !line.starts_with('#')) {
      content = true;
    }
    i = end + 1;
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
  // PyYAML breaks lines at U+0085, U+2028 and U+2029 too, even in comments; yaml-cpp does not.
  static constexpr std::pair<std::string_view, std::string_view> breaks[] = {
      {"\xC2\x85", "U+0085 (next line), which PyYAML reads as a line break"},
      {"\xE2\x80\xA8", "U+2028 (line separator), which PyYAML reads as a line break"},
      {"\xE2\x80\xA9", "U+2029 (paragraph separator), which PyYAML reads as a line break"}};
  std::size_t first_break = std::string_view::npos;
  std::string_view what;
  for (const auto& [bytes, name] : breaks)
    if (const std::size_t at = text.find(bytes); at < first_break) {
      first_break = at;
      what = name;
    }
  if (first_break != std::string_view::npos)
    throw Error(position(source, text, first_break) + ": " + std::string(what) +
                " (other YAML readers do not, even in a comment): remove it, or write it as an "
                "escape in a double-quoted string");
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
  const std::string_view body = text.starts_with("\xEF\xBB\xBF") ? text.substr(3) : text;
  if (const std::size_t tab = stray_tab_at(body, builder.scalar_spans);
      tab != std::string_view::npos)
    throw Error(position(source, body, tab) +
                ": a tab outside quotes, block scalars and comments, which PyYAML refuses: "
                "replace it with spaces");
  if (const std::size_t at = odd_directive_at(body, builder.scalar_spans);
      at != std::string_view::npos)
    throw Error(position(source, body, at) +
                ": a directive other than '%YAML 1.1' before the content, which YAML readers read "
                "differently: remove it");
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

namespace {

// PyYAML's int constructor for text its int resolver matched (underscores already gone): the
// value, or nullopt when it does not fit in 64 bits or has no digits (`0b_`, which PyYAML
// refuses).
std::optional<std::int64_t> pyyaml_int(std::string_view s) {
  const bool negative = s[0] == '-';
  if (s[0] == '-' || s[0] == '+')
    s.remove_prefix(1);
  std::uint64_t base = 10;
  if (s.starts_with("0b") || s.starts_with("0x")) {
    base = s[1] == 'b' ? 2 : 16;
    s.remove_prefix(2);
  } else if (s.size() > 1 && s[0] == '0') {
    base = 8;
  }
  if (s.find(':') != std::string_view::npos)
    base = 60; // sexagesimal: base 60, its digits in base 10
  if (s.empty())
    return std::nullopt;
  std::uint64_t value = 0;
  for (std::size_t start = 0; start < s.size();) {
    std::size_t end = base == 60 ? std::min(s.find(':', start), s.size()) : start + 1;
    std::uint64_t digit = 0;
    if (base == 60)
      std::from_chars(s.data() + start, s.data() + end, digit);
    else
      digit = s[start] <= '9' ? s[start] - '0' : (s[start] | 0x20) - 'a' + 10;
    if (__builtin_mul_overflow(value, base, &value) || __builtin_add_overflow(value, digit, &value))
      return std::nullopt;
    start = base == 60 ? end + 1 : end;
  }
  constexpr auto max = static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
  if (value > max + (negative ? 1 : 0))
    return std::nullopt;
  return negative ? static_cast<std::int64_t>(~value + 1) : static_cast<std::int64_t>(value);
}

// PyYAML's float constructor for a sexagesimal float (`1:30.5`), in its order of operations.
double pyyaml_sexagesimal_float(std::string s) {
  const bool negative = s[0] == '-';
  if (s[0] == '-' || s[0] == '+')
    s.erase(0, 1);
  std::vector<double> digits;
  for (std::size_t start = 0;;) {
    const std::size_t end = std::min(s.find(':', start), s.size());
    digits.push_back(std::strtod(s.substr(start, end - start).c_str(), nullptr));
    if (end == s.size())
      break;
    start = end + 1;
  }
  double value = 0.0;
  double base = 1;
  for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
    value += *it * base;
    base *= 60;
  }
  return negative ? -value : value;
}

bool is_pyyaml_int_text(std::string_view t) {
  return is_decimal_int_text(t) || is_other_base_int(t) ||
         (is_sexagesimal(t) && t.find('.') == std::string_view::npos);
}

std::string without_underscores(std::string_view t) {
  std::string s;
  for (char c : t)
    if (c != '_')
      s += c;
  return s;
}

} // namespace

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
  // PyYAML tries its float resolver before its int resolver.
  if (is_sexagesimal(t) && t.find('.') != std::string::npos)
    return pyyaml_sexagesimal_float(without_underscores(t));
  if (is_pyyaml_float(t))
    return *parse_float_text(t);
  if (is_pyyaml_int_text(t)) {
    if (auto v = pyyaml_int(without_underscores(t)))
      return *v;
    return t; // beyond 64 bits, or no digits: plain_scalar_refusal refuses it
  }
  return t; // timestamps stay text: plain_scalar_refusal refuses them
}

std::string plain_scalar_refusal(const std::string& t) {
  if (t == "=")
    return "'=' is YAML 1.1's value key, which PyYAML's safe_load refuses: quote it";
  if (t == "<<")
    return "'<<' is YAML 1.1's merge key, which PyYAML's safe_load refuses as a value: quote it";
  if (t.empty() || !(std::isdigit(static_cast<unsigned char>(t[0])) || t[0] == '-' || t[0] == '+' ||
                     t[0] == '.'))
    return "";
  if (is_pyyaml_float(t) || (is_sexagesimal(t) && t.find('.') != std::string::npos))
    return "";
  if (is_pyyaml_int_text(t) && !pyyaml_int(without_underscores(t)))
    return "'" + clip(t) +
           "' is an integer PyYAML reads past 64 bits or cannot read at all: quote it to keep "
           "the text";
  if (is_timestamp(t))
    return "'" + clip(t) +
           "' is a date or time to PyYAML's safe_load, which a config cannot hold: quote it";
  return "";
}

namespace {

constexpr std::string_view kYamlTag = "tag:yaml.org,2002:";

// A plain scalar's value, or an error at its position for what PyYAML's safe_load refuses or
// reads as something a config cannot hold.
Value resolve_plain_at(const YamlDoc& doc, const YamlNode& n) {
  if (const std::string why = plain_scalar_refusal(n.text); !why.empty())
    throw Error(doc.where(n) + ": " + why);
  return resolve_plain_scalar(n.text);
}

Value convert(const YamlDoc& doc, const YamlNode& n) {
  auto unsupported_tag = [&]() {
    return Error(doc.where(n) + ": unsupported YAML tag '" + clip(n.tag) + "' on a " +
                 (n.kind == YamlNode::Kind::Scalar     ? "scalar"
                  : n.kind == YamlNode::Kind::Sequence ? "list"
                                                       : "mapping") +
                 "; remove the tag");
  };
  switch (n.kind) {
  case YamlNode::Kind::Null:
    return Null{};
  case YamlNode::Kind::Scalar:
    if (!n.tag.empty()) {
      if (n.tag == "tag:yaml.org,2002:str")
        return n.text;
      // PyYAML's constructors for these tags read more than its resolvers do (`!!float 1` is
      // 1.0, `!!null x` is None, `!!bool YeS` is True): only text that resolves to the tag's own
      // type is read.
      static const std::pair<std::string_view, Value::Kind> typed[] = {
          {"null", Value::Kind::Null},
          {"bool", Value::Kind::Bool},
          {"int", Value::Kind::Int},
          {"float", Value::Kind::Float}};
      for (const auto& [name, kind] : typed)
        if (n.tag.size() == kYamlTag.size() + name.size() && n.tag.starts_with(kYamlTag) &&
            n.tag.ends_with(name)) {
          Value v = resolve_plain_at(doc, n);
          if (v.kind() != kind)
            throw Error(doc.where(n) + ": '" + clip(n.text) + "' is not a plain " +
                        std::string(name) + " to every YAML reader: remove the tag '!!" +
                        std::string(name) + "' and write the value as one");
          return v;
        }
      throw unsupported_tag();
    }
    return n.plain ? resolve_plain_scalar(n.text) : Value(n.text); // refusals: at parse time
  case YamlNode::Kind::Sequence: {
    if (!n.tag.empty() && n.tag != "tag:yaml.org,2002:seq")
      throw unsupported_tag();
    List l;
    l.reserve(n.items.size());
    for (const YamlNode* item : n.items)
      l.push_back(convert(doc, *item));
    return l;
  }
  case YamlNode::Kind::Mapping: {
    if (!n.tag.empty() && n.tag != "tag:yaml.org,2002:map")
      throw unsupported_tag();
    Map m;
    std::unordered_set<std::string> seen; // a set, so that a big mapping reads in linear time
    for (const auto& [k, v] : n.entries) {
      if (k->kind != YamlNode::Kind::Scalar && k->kind != YamlNode::Kind::Null)
        throw Error(doc.where(*k) + ": mapping keys must be plain scalars");
      const Value key = k->kind == YamlNode::Kind::Null ? Value(Null{}) : convert(doc, *k);
      // Map keys are strings or ints; a tagged key (`!!float 1.5: x`) may be neither.
      if (!key.is_int() && !key.is_str())
        throw Error(doc.where(*k) + ": the key '" + clip(k->text) + "' is a " +
                    std::string(kind_name(key)) + " to PyYAML's safe_load, not a string: quote it");
      Key mk = key.is_int() ? Key{std::to_string(key.as_int()), true} : Key{key.as_str(), false};
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
