#include "config/scalars.h"

#include <charconv>
#include <cmath>
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

} // namespace qr
