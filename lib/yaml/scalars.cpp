#include "yaml/scalars.h"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace qr {
namespace {

bool digit(char c) {
  return c >= '0' && c <= '9';
}

// Consumes [0-9_]* starting with a digit; returns false if none.
bool digits(std::string_view s, std::size_t& i) {
  if (i >= s.size() || !digit(s[i]))
    return false;
  while (i < s.size() && (digit(s[i]) || s[i] == '_'))
    ++i;
  return true;
}

std::string without_underscores(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s)
    if (c != '_')
      out += c;
  return out;
}

bool word(std::string_view s, std::string_view lower, std::string_view title,
          std::string_view upper) {
  return s == lower || s == title || s == upper;
}

void skip_sign(std::string_view s, std::size_t& i) {
  if (i < s.size() && (s[i] == '-' || s[i] == '+'))
    ++i;
}

// Consumes a run of digits; true when its length is within [min, max].
bool digit_run(std::string_view s, std::size_t& i, std::size_t min, std::size_t max) {
  const std::size_t start = i;
  while (i < s.size() && digit(s[i]))
    ++i;
  return i - start >= min && i - start <= max;
}

// True when s[from..] is not empty and every character is `_` or passes `ok`.
template <typename Pred>
bool rest_is(std::string_view s, std::size_t from, Pred ok) {
  if (from >= s.size())
    return false;
  for (std::size_t i = from; i < s.size(); ++i)
    if (s[i] != '_' && !ok(s[i]))
      return false;
  return true;
}

bool blank(char c) {
  return c == ' ' || c == '\t';
}

} // namespace

bool is_decimal_int_text(std::string_view s) {
  std::size_t i = 0;
  if (i < s.size() && (s[i] == '-' || s[i] == '+'))
    ++i;
  if (i >= s.size() || !digit(s[i]))
    return false;
  if (s[i] == '0')
    return i + 1 == s.size(); // a leading 0 is octal in YAML 1.1
  return digits(s, i) && i == s.size();
}

std::optional<std::int64_t> parse_decimal_int(std::string_view s) {
  if (!is_decimal_int_text(s))
    return std::nullopt;
  std::string clean = without_underscores(s[0] == '+' ? s.substr(1) : s);
  std::int64_t v = 0;
  auto [p, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if (ec != std::errc() || p != clean.data() + clean.size())
    return std::nullopt;
  return v;
}

std::optional<double> parse_float_text(std::string_view s) {
  std::string_view body = s;
  bool negative = false;
  if (!body.empty() && (body[0] == '-' || body[0] == '+')) {
    negative = body[0] == '-';
    body.remove_prefix(1);
  }
  if (word(body, ".inf", ".Inf", ".INF") || word(body, "inf", "Inf", "INF"))
    return negative ? -INFINITY : INFINITY;
  if (s == body && (word(body, ".nan", ".NaN", ".NAN") || word(body, "nan", "NaN", "NAN")))
    return NAN;
  std::size_t i = 0;
  const bool int_part = digits(body, i);
  bool frac_part = false;
  if (i < body.size() && body[i] == '.') {
    ++i;
    frac_part = digits(body, i);
  }
  if (!int_part && !frac_part)
    return std::nullopt;
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i < body.size() && (body[i] == '-' || body[i] == '+'))
      ++i;
    if (i >= body.size() || !digit(body[i]))
      return std::nullopt;
    while (i < body.size() && digit(body[i]))
      ++i;
  }
  if (i != body.size())
    return std::nullopt;
  std::string clean = without_underscores(body);
  if (clean.back() == '.')
    clean.pop_back(); // "1." is 1.0
  double v = 0;
  auto [p, ec] = std::from_chars(clean.data(), clean.data() + clean.size(), v);
  if ((ec != std::errc() && ec != std::errc::result_out_of_range) ||
      p != clean.data() + clean.size())
    return std::nullopt;
  if (ec == std::errc::result_out_of_range) // from_chars leaves v alone; Python gives inf or 0.0
    v = std::strtod(clean.c_str(), nullptr);
  return negative ? -v : v;
}

bool is_pyyaml_float(std::string_view s) {
  std::string_view body = s;
  if (!body.empty() && (body[0] == '-' || body[0] == '+'))
    body.remove_prefix(1);
  if (word(body, ".inf", ".Inf", ".INF"))
    return true;
  if (s == body && word(body, ".nan", ".NaN", ".NAN"))
    return true;
  std::size_t i = 0;
  if (body.empty())
    return false;
  if (body[0] == '.') {
    if (s != body) // `[-+].5` is not a PyYAML float
      return false;
    i = 1;
    if (!digits(body, i))
      return false;
  } else {
    if (!digits(body, i) || i >= body.size() || body[i] != '.')
      return false;
    ++i;
    while (i < body.size() && (digit(body[i]) || body[i] == '_'))
      ++i;
  }
  if (i < body.size() && (body[i] == 'e' || body[i] == 'E')) {
    ++i;
    if (i >= body.size() || (body[i] != '-' && body[i] != '+'))
      return false;
    ++i;
    if (i >= body.size() || !digit(body[i]))
      return false;
    while (i < body.size() && digit(body[i]))
      ++i;
  }
  return i == body.size();
}

bool is_identifier(std::string_view s) {
  auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !letter(s[0]))
    return false;
  for (char c : s)
    if (!letter(c) && !digit(c))
      return false;
  return true;
}

bool is_other_base_int(std::string_view s) {
  std::size_t i = 0;
  skip_sign(s, i);
  if (i >= s.size() || s[i] != '0')
    return false;
  ++i;
  if (i < s.size() && s[i] == 'b')
    return rest_is(s, i + 1, [](char c) { return c == '0' || c == '1'; });
  if (i < s.size() && s[i] == 'x')
    return rest_is(s, i + 1, [](char c) {
      return digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
    });
  return rest_is(s, i, [](char c) { return c >= '0' && c <= '7'; });
}

bool is_sexagesimal(std::string_view s) {
  std::size_t i = 0;
  skip_sign(s, i);
  const bool leading_zero = i < s.size() && s[i] == '0';
  if (!digits(s, i))
    return false;
  int segments = 0;
  while (i < s.size() && s[i] == ':') {
    const std::size_t start = ++i;
    if (!digit_run(s, i, 1, 2) || (i - start == 2 && s[start] > '5'))
      return false;
    ++segments;
  }
  if (segments == 0)
    return false;
  if (i == s.size())
    return !leading_zero; // the int form starts with [1-9]
  if (s[i] != '.')
    return false;
  ++i;
  while (i < s.size() && (digit(s[i]) || s[i] == '_'))
    ++i;
  return i == s.size();
}

bool is_timestamp(std::string_view s) {
  std::size_t i = 0;
  if (!digit_run(s, i, 4, 4) || i >= s.size() || s[i] != '-')
    return false;
  const std::size_t month = ++i;
  if (!digit_run(s, i, 1, 2) || i >= s.size() || s[i] != '-')
    return false;
  const bool two_digit_month = i - month == 2;
  const std::size_t day = ++i;
  if (!digit_run(s, i, 1, 2))
    return false;
  if (i == s.size())
    return two_digit_month && i - day == 2; // a date alone: YYYY-MM-DD
  if (s[i] == 'T' || s[i] == 't') {
    ++i;
  } else {
    if (!blank(s[i]))
      return false;
    while (i < s.size() && blank(s[i]))
      ++i;
  }
  if (!digit_run(s, i, 1, 2) || i >= s.size() || s[i] != ':')
    return false;
  ++i;
  if (!digit_run(s, i, 2, 2) || i >= s.size() || s[i] != ':')
    return false;
  ++i;
  if (!digit_run(s, i, 2, 2))
    return false;
  if (i < s.size() && s[i] == '.') {
    ++i;
    while (i < s.size() && digit(s[i]))
      ++i;
  }
  if (i == s.size())
    return true;
  while (i < s.size() && blank(s[i]))
    ++i;
  if (i < s.size() && s[i] == 'Z')
    return i + 1 == s.size();
  if (i >= s.size() || (s[i] != '-' && s[i] != '+'))
    return false;
  ++i;
  if (!digit_run(s, i, 1, 2))
    return false;
  if (i == s.size())
    return true;
  if (s[i] != ':')
    return false;
  ++i;
  return digit_run(s, i, 2, 2) && i == s.size();
}

} // namespace qr
