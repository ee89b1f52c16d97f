#include "yaml/yaml_write.h"

#include "support/utf8.h"
#include "yaml/scalars.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>

namespace qr {
namespace {

constexpr int kBestWidth = 80;

bool is_break(char32_t c) {
  return c == '\n' || c == 0x85 || c == 0x2028 || c == 0x2029;
}
bool is_space_or_break(char32_t c) {
  return c == 0 || c == ' ' || c == '\t' || c == '\r' || is_break(c);
}
bool is_printable_ascii(char32_t c) {
  return c >= 0x20 && c <= 0x7E;
}

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// `[eE][-+]?[0-9]+` (the sign required when `signed_exp`), if there is an exponent at i.
bool exponent(std::string_view s, std::size_t& i, bool signed_exp) {
  if (i >= s.size() || (s[i] != 'e' && s[i] != 'E'))
    return true;
  ++i;
  if (i < s.size() && (s[i] == '-' || s[i] == '+'))
    ++i;
  else if (signed_exp)
    return false;
  if (i >= s.size() || !digit(s[i]))
    return false;
  while (i < s.size() && digit(s[i]))
    ++i;
  return true;
}

// The floats PyYAML or OmegaConf read, ints among them: `[-+]?[0-9][0-9_]*(\.[0-9_]*)?
// ([eE][-+]?[0-9]+)?`, `\.[0-9_]+([eE][-+][0-9]+)?`, `[-+]?\.inf` and `.nan` (three spellings).
bool is_number_text(std::string_view s) {
  std::size_t i = 0;
  if (s[0] == '.') {
    const std::string_view rest = s.substr(1);
    if (rest == "inf" || rest == "Inf" || rest == "INF" || rest == "nan" || rest == "NaN" ||
        rest == "NAN")
      return true;
    i = 1;
    if (i >= s.size() || !(digit(s[i]) || s[i] == '_'))
      return false;
    while (i < s.size() && (digit(s[i]) || s[i] == '_'))
      ++i;
    return exponent(s, i, true) && i == s.size();
  }
  if (s[0] == '-' || s[0] == '+') {
    const std::string_view rest = s.substr(1);
    if (rest == ".inf" || rest == ".Inf" || rest == ".INF")
      return true;
    i = 1;
  }
  if (i >= s.size() || !digit(s[i]))
    return false;
  while (i < s.size() && (digit(s[i]) || s[i] == '_'))
    ++i;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && (digit(s[i]) || s[i] == '_'))
      ++i;
  }
  return exponent(s, i, false) && i == s.size();
}

struct Analysis {
  bool empty = false;
  bool multiline = false;
  bool allow_block_plain = true;
  bool allow_single_quoted = true;
};

// PyYAML's Emitter.analyze_scalar with allow_unicode=False, for block context.
Analysis analyze(const std::u32string& s) {
  Analysis a;
  if (s.empty()) {
    a.empty = true;
    return a;
  }
  bool block_indicators = false, line_breaks = false, special = false;
  bool leading_space = false, leading_break = false, trailing_space = false, trailing_break = false;
  bool break_space = false, space_break = false;
  if (s.starts_with(U"---") || s.starts_with(U"..."))
    block_indicators = true;
  bool preceded_by_ws = true;
  bool followed_by_ws = s.size() == 1 || is_space_or_break(s[1]);
  bool previous_space = false, previous_break = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char32_t ch = s[i];
    if (i == 0) {
      if (std::u32string_view(U"#,[]{}&*!|>'\"%@`").find(ch) != std::u32string_view::npos)
        block_indicators = true;
      if ((ch == '?' || ch == ':' || ch == '-') && followed_by_ws)
        block_indicators = true;
    } else {
      if (ch == ':' && followed_by_ws)
        block_indicators = true;
      if (ch == '#' && preceded_by_ws)
        block_indicators = true;
    }
    if (is_break(ch))
      line_breaks = true;
    if (!(ch == '\n' || is_printable_ascii(ch)))
      special = true; // non-ASCII is escaped (allow_unicode=False), controls too
    if (ch == ' ') {
      if (i == 0)
        leading_space = true;
      if (i == s.size() - 1)
        trailing_space = true;
      if (previous_break)
        break_space = true;
      previous_space = true;
      previous_break = false;
    } else if (is_break(ch)) {
      if (i == 0)
        leading_break = true;
      if (i == s.size() - 1)
        trailing_break = true;
      if (previous_space)
        space_break = true;
      previous_space = false;
      previous_break = true;
    } else {
      previous_space = previous_break = false;
    }
    preceded_by_ws = is_space_or_break(ch);
    followed_by_ws = i + 2 >= s.size() || is_space_or_break(s[i + 2]);
  }
  a.multiline = line_breaks;
  if (leading_space || leading_break || trailing_space || trailing_break || line_breaks ||
      block_indicators)
    a.allow_block_plain = false;
  if (break_space)
    a.allow_block_plain = a.allow_single_quoted = false;
  if (space_break || special)
    a.allow_block_plain = a.allow_single_quoted = false;
  return a;
}

std::string escape(char32_t ch) {
  switch (ch) {
  case 0:
    return "\\0";
  case 0x07:
    return "\\a";
  case 0x08:
    return "\\b";
  case 0x09:
    return "\\t";
  case 0x0A:
    return "\\n";
  case 0x0B:
    return "\\v";
  case 0x0C:
    return "\\f";
  case 0x0D:
    return "\\r";
  case 0x1B:
    return "\\e";
  case '"':
    return "\\\"";
  case '\\':
    return "\\\\";
  case 0x85:
    return "\\N";
  case 0xA0:
    return "\\_";
  case 0x2028:
    return "\\L";
  case 0x2029:
    return "\\P";
  default:
    break;
  }
  char buf[16];
  if (ch <= 0xFF)
    std::snprintf(buf, sizeof buf, "\\x%02X", static_cast<unsigned>(ch));
  else if (ch <= 0xFFFF)
    std::snprintf(buf, sizeof buf, "\\u%04X", static_cast<unsigned>(ch));
  else
    std::snprintf(buf, sizeof buf, "\\U%08X", static_cast<unsigned>(ch));
  return buf;
}

// Mirrors the column/indent bookkeeping of PyYAML's Emitter so that line folding and
// indentation come out byte for byte the same.
class BlockWriter {
public:
  std::string out;

  void document(const Value& root) {
    node(root, -1, /*mapping_ctx=*/false, /*simple_key=*/false);
    write_line_break();
  }

private:
  int column_ = 0;
  bool whitespace_ = true;
  bool indention_ = true;
  int indent_ = 0;

  void write(std::u32string_view data) {
    append_utf8(out, data);
    column_ += static_cast<int>(data.size());
  }
  void write_ascii(std::string_view data) {
    out += data;
    column_ += static_cast<int>(data.size());
  }
  void write_line_break() {
    out += '\n';
    whitespace_ = indention_ = true;
    column_ = 0;
  }
  void write_indent() {
    if (!indention_ || column_ > indent_ || (column_ == indent_ && !whitespace_))
      write_line_break();
    if (column_ < indent_) {
      whitespace_ = true;
      out.append(static_cast<std::size_t>(indent_ - column_), ' ');
      column_ = indent_;
    }
  }
  void write_indicator(std::string_view ind, bool need_ws, bool ws = false,
                       bool indention = false) {
    if (!whitespace_ && need_ws)
      write_ascii(" ");
    write_ascii(ind);
    whitespace_ = ws;
    indention_ = indention_ && indention;
  }

  // `parent_indent` is the indent of the enclosing block collection (-1 at the root).
  void node(const Value& v, int parent_indent, bool mapping_ctx, bool simple_key) {
    if (v.is_map() && !v.as_map().empty())
      block_mapping(v.as_map(), parent_indent);
    else if (v.is_list() && !v.as_list().empty())
      block_sequence(v.as_list(), parent_indent, mapping_ctx);
    else if (v.is_map())
      write_indicator("{}", true);
    else if (v.is_list())
      write_indicator("[]", true);
    else
      scalar(v, parent_indent, simple_key);
  }

  void block_mapping(const Map& m, int parent_indent) {
    const int saved = indent_;
    indent_ = parent_indent < 0 ? 0 : parent_indent + 2;
    for (const Map::Entry* e : m.sorted()) {
      write_indent();
      Value key = e->first.integer ? Value(static_cast<std::int64_t>(std::stoll(e->first.text)))
                                   : Value(e->first.text);
      if (simple_key(e->first.text)) {
        scalar(key, indent_, /*simple_key=*/true);
        write_indicator(":", false);
      } else { // PyYAML's explicit form: `? key` on its own lines, then `: value`
        write_indicator("?", true, false, true);
        scalar(key, indent_, /*simple_key=*/false);
        write_indent();
        write_indicator(":", true, false, true);
      }
      node(e->second, indent_, /*mapping_ctx=*/true, false);
    }
    indent_ = saved;
  }

  // PyYAML's check_simple_key: a key shorter than 128 characters with its tag ("!!str" or
  // "!!int", 5), not empty and on one line.
  static bool simple_key(const std::string& text) {
    const std::u32string s = to_u32(text);
    const Analysis a = analyze(s);
    return s.size() + 5 < 128 && !a.empty && !a.multiline;
  }

  void block_sequence(const List& l, int parent_indent, bool mapping_ctx) {
    const int saved = indent_;
    const bool indentless = mapping_ctx && !indention_;
    indent_ = parent_indent < 0 ? 0 : (indentless ? parent_indent : parent_indent + 2);
    for (const Value& item : l) {
      write_indent();
      write_indicator("-", true, false, true);
      node(item, indent_, false, false);
    }
    indent_ = saved;
  }

  void scalar(const Value& v, int parent_indent, bool simple_key) {
    // Scalars fold onto lines indented one step past their owner, as PyYAML's
    // increase_indent(flow=True) does.
    const int saved = indent_;
    indent_ = parent_indent < 0 ? 0 : parent_indent + 2;
    switch (v.kind()) {
    case Value::Kind::Null:
      plain(U"null");
      break;
    case Value::Kind::Bool:
      plain(v.as_bool() ? U"true" : U"false");
      break;
    case Value::Kind::Int:
      plain(to_u32(std::to_string(v.as_int())));
      break;
    case Value::Kind::Float:
      plain(to_u32(format_float(v.as_float())));
      break;
    case Value::Kind::Str:
      string(v.as_str(), simple_key);
      break;
    default:
      throw std::logic_error("scalar(): not a scalar");
    }
    indent_ = saved;
  }

  void string(const std::string& text, bool simple_key) {
    const std::u32string s = to_u32(text);
    const Analysis a = analyze(s);
    const bool implicit = !plain_text_is_ambiguous(text);
    if (implicit && !(simple_key && (a.empty || a.multiline)) && a.allow_block_plain && !a.empty) {
      plain(s, !simple_key);
      return;
    }
    if (a.allow_single_quoted && !(simple_key && a.multiline))
      single_quoted(s, !simple_key);
    else
      double_quoted(s, !simple_key);
  }

  void plain(std::u32string_view text, bool split = true) {
    if (text.empty())
      return;
    if (!whitespace_)
      write_ascii(" ");
    whitespace_ = indention_ = false;
    bool spaces = false;
    std::size_t start = 0;
    for (std::size_t end = 0; end <= text.size(); ++end) {
      const char32_t ch = end < text.size() ? text[end] : 0;
      const bool at_end = end == text.size();
      if (spaces) {
        if (at_end || ch != ' ') {
          if (start + 1 == end && column_ > kBestWidth && split) {
            write_indent();
            whitespace_ = indention_ = false;
          } else {
            write(text.substr(start, end - start));
          }
          start = end;
        }
      } else if (at_end || ch == ' ') {
        write(text.substr(start, end - start));
        start = end;
      }
      if (!at_end)
        spaces = ch == ' ';
    }
  }

  void single_quoted(std::u32string_view text, bool split) {
    write_indicator("'", true);
    bool spaces = false, breaks = false;
    std::size_t start = 0;
    for (std::size_t end = 0; end <= text.size(); ++end) {
      const bool at_end = end == text.size();
      const char32_t ch = at_end ? 0 : text[end];
      if (spaces) {
        if (at_end || ch != ' ') {
          if (start + 1 == end && column_ > kBestWidth && split && start != 0 &&
              end != text.size()) {
            write_indent();
          } else {
            write(text.substr(start, end - start));
          }
          start = end;
        }
      } else if (breaks) {
        if (at_end || !is_break(ch)) {
          if (text[start] == '\n')
            write_line_break();
          for (std::size_t i = start; i < end; ++i)
            write_line_break(); // YAML folds one break away: each break is written twice
          write_indent();
          start = end;
        }
      } else if (at_end || ch == ' ' || is_break(ch) || ch == '\'') {
        if (start < end) {
          write(text.substr(start, end - start));
          start = end;
        }
      }
      if (ch == '\'' && !at_end) {
        write_ascii("''");
        start = end + 1;
      }
      if (!at_end) {
        spaces = ch == ' ';
        breaks = is_break(ch);
      }
    }
    write_indicator("'", false);
  }

  void double_quoted(std::u32string_view text, bool split) {
    write_indicator("\"", true);
    std::size_t start = 0;
    for (std::size_t end = 0; end <= text.size(); ++end) {
      const bool at_end = end == text.size();
      const char32_t ch = at_end ? 0 : text[end];
      if (at_end || ch == '"' || ch == '\\' || ch == 0x85 || ch == 0x2028 || ch == 0x2029 ||
          ch == 0xFEFF || !is_printable_ascii(ch)) {
        if (start < end) {
          write(text.substr(start, end - start));
          start = end;
        }
        if (!at_end) {
          write_ascii(escape(ch));
          start = end + 1;
        }
      }
      if (end > 0 && end + 1 < text.size() && (ch == ' ' || start >= end) &&
          column_ + static_cast<int>(end - start) > kBestWidth && split) {
        // Right after an escape start is end + 1: Python's text[start:end] is then empty.
        if (start < end) {
          write(text.substr(start, end - start));
          start = end;
        }
        write_ascii("\\");
        write_indent();
        whitespace_ = indention_ = false;
        if (text[start] == ' ')
          write_ascii("\\");
      }
    }
    write_indicator("\"", false);
  }
};

void flow(const Value& v, std::string& out, std::string_view sep) {
  switch (v.kind()) {
  case Value::Kind::List: {
    out += '[';
    bool first = true;
    for (const Value& item : v.as_list()) {
      if (!first)
        out += sep;
      first = false;
      flow(item, out, sep);
    }
    out += ']';
    return;
  }
  case Value::Kind::Map: {
    out += '{';
    bool first = true;
    for (const Map::Entry* e : v.as_map().sorted()) {
      if (!first)
        out += sep;
      first = false;
      flow(e->first.integer ? Value(static_cast<std::int64_t>(std::stoll(e->first.text)))
                            : Value(e->first.text),
           out, sep);
      out += ": ";
      flow(e->second, out, sep);
    }
    out += '}';
    return;
  }
  case Value::Kind::Str: {
    const std::string& s = v.as_str();
    const Analysis a = analyze(to_u32(s));
    const bool flow_indicator = s.find_first_of(",[]{}") != std::string::npos;
    if (!a.empty && a.allow_block_plain && !flow_indicator && !plain_text_is_ambiguous(s)) {
      out += s;
    } else if (a.allow_single_quoted && !a.multiline) {
      // (a line break inside single quotes folds: a one-line text keeps it only double-quoted)
      out += '\'';
      for (char c : s) {
        if (c == '\'')
          out += '\'';
        out += c;
      }
      out += '\'';
    } else {
      out += '"';
      for (char32_t c : to_u32(s)) {
        if (is_printable_ascii(c) && c != '"' && c != '\\')
          out += static_cast<char>(c);
        else
          out += escape(c);
      }
      out += '"';
    }
    return;
  }
  case Value::Kind::Null:
    out += "null";
    return;
  case Value::Kind::Bool:
    out += v.as_bool() ? "true" : "false";
    return;
  case Value::Kind::Int:
    out += std::to_string(v.as_int());
    return;
  case Value::Kind::Float:
    out += format_float(v.as_float());
    return;
  }
}

} // namespace

bool plain_text_is_ambiguous(const std::string& text) {
  // PyYAML's implicit resolvers (YAML 1.1) plus OmegaConf's looser float. Words (bool and null
  // spellings) by look-up, then number- and date-like text.
  static const std::set<std::string_view> words{
      "",      "~",  "<<", "=",  "null", "Null", "NULL", "yes",   "Yes",
      "YES",   "no", "No", "NO", "true", "True", "TRUE", "false", "False",
      "FALSE", "on", "On", "ON", "off",  "Off",  "OFF"};
  if (words.count(text))
    return true;
  if (std::string_view("0123456789+-.").find(text[0]) == std::string_view::npos)
    return false;
  return is_number_text(text) || is_other_base_int(text) || is_sexagesimal(text) ||
         is_timestamp(text);
}

std::string format_float(double d) {
  if (std::isnan(d))
    return ".nan";
  if (std::isinf(d))
    return d > 0 ? ".inf" : "-.inf";
  // Shortest round-trip digits, then Python's repr layout: fixed notation while the decimal
  // exponent is in [-4, 16), scientific outside it.
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  if (ec != std::errc())
    throw std::runtime_error("format_float: to_chars failed");
  std::string sci(buf, end); // e.g. "-1.2345e-05"
  const bool negative = sci[0] == '-';
  if (negative)
    sci.erase(0, 1);
  const std::size_t e = sci.find('e');
  std::string digits = sci.substr(0, e);
  digits.erase(std::remove(digits.begin(), digits.end(), '.'), digits.end());
  const int exp10 = std::stoi(sci.substr(e + 1));
  std::string out = negative ? "-" : "";
  if (exp10 < -4 || exp10 >= 16) {
    out += digits[0];
    if (digits.size() > 1) {
      out += '.';
      out += digits.substr(1);
    } else {
      out += ".0"; // PyYAML adds ".0" so that the scalar reads back as a float
    }
    char ebuf[16];
    std::snprintf(ebuf, sizeof ebuf, "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
    out += ebuf;
  } else if (exp10 < 0) {
    out += "0.";
    out.append(static_cast<std::size_t>(-exp10 - 1), '0');
    out += digits;
  } else {
    const auto int_len = static_cast<std::size_t>(exp10 + 1);
    if (digits.size() <= int_len) {
      out += digits;
      out.append(int_len - digits.size(), '0');
      out += ".0";
    } else {
      out += digits.substr(0, int_len);
      out += '.';
      out += digits.substr(int_len);
    }
  }
  return out;
}

std::string to_yaml(const Value& root) {
  BlockWriter w;
  w.document(root);
  return std::move(w.out);
}

std::string to_flow_yaml(const Value& v, std::string_view separator) {
  std::string out;
  flow(v, out, separator);
  return out;
}

} // namespace qr
