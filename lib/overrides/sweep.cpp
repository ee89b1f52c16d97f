#include "overrides/sweep.h"

#include "overrides/overrides.h"
#include "overrides/shortcuts.h"
#include "support/error.h"
#include "support/script_text.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <map>
#include <optional>

namespace qr {
namespace {

std::string quoted(std::string_view token) {
  return "sweep '" + escaped_for_message(token) + "'";
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
    s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
    s.remove_suffix(1);
  return s;
}

// Splits at the commas outside quotes and brackets. A quote opens a quoted part only where an
// element (or an item inside brackets) starts, as in Hydra, so `it's` stays text; inside, YAML's
// escapes (\" in double quotes, '' in single ones) do not close it.
std::vector<std::string_view> split_elements(std::string_view text, std::string_view token) {
  std::vector<std::string_view> out;
  std::string closers;
  std::size_t start = 0;
  char quote = 0;
  bool at_item_start = true;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quote != 0) {
      // YAML's escapes: \" (and any \x) in double quotes, '' in single quotes.
      if (quote == '"' && c == '\\')
        ++i;
      else if (quote == '\'' && c == '\'' && i + 1 < text.size() && text[i + 1] == '\'')
        ++i;
      else if (c == quote)
        quote = 0;
      continue;
    }
    if ((c == '\'' || c == '"') && at_item_start) {
      quote = c;
      at_item_start = false;
      continue;
    }
    if (c == '[' || c == '{' || c == '(') {
      closers.push_back(c == '[' ? ']' : c == '{' ? '}' : ')');
      at_item_start = true;
      continue;
    }
    if (c == ']' || c == '}' || c == ')') {
      if (closers.empty() || closers.back() != c)
        throw Error(quoted(token) + ": '" + std::string(1, c) + "' at column " +
                    std::to_string(i + 1) + " of the value closes nothing");
      closers.pop_back();
      at_item_start = false;
      continue;
    }
    if (c == ',' && closers.empty()) {
      out.push_back(text.substr(start, i - start));
      start = i + 1;
      at_item_start = true;
      continue;
    }
    if (c == ',' || c == ':')
      at_item_start = true;
    else if (c != ' ' && c != '\t')
      at_item_start = false;
  }
  if (quote != 0)
    throw Error(quoted(token) + ": a " + (quote == '\'' ? "'" : "\"") +
                " quote is never closed; close it, or quote the whole value");
  if (!closers.empty())
    throw Error(quoted(token) + ": a '" +
                std::string(1, closers.back() == ']'   ? '['
                               : closers.back() == '}' ? '{'
                                                       : '(') +
                "' is never closed");
  out.push_back(text.substr(start));
  for (std::string_view& e : out) {
    e = trim(e);
    if (e.empty())
      throw Error(quoted(token) + ": an empty element (two commas in a row, or one at an end); "
                                  "give a value between every pair of commas");
  }
  return out;
}

// `name(` at the start of an element: a Hydra function call. Empty when it is none.
std::string function_name(std::string_view element) {
  std::size_t i = 0;
  while (i < element.size() &&
         (std::isalnum(static_cast<unsigned char>(element[i])) != 0 || element[i] == '_'))
    ++i;
  if (i == 0 || i >= element.size() || element[i] != '(' ||
      std::isdigit(static_cast<unsigned char>(element[0])) != 0)
    return {};
  return std::string(element.substr(0, i));
}

// Why a Hydra function other than choice and range is refused.
std::string unsupported_function(const std::string& name, std::string_view token) {
  static const std::map<std::string, std::string> known = {
      {"interval", "it is a continuous interval for optimizing sweepers (Ax, Nevergrad, Optuna), "
                   "which a list of configs cannot enumerate; list the values (a,b,c) or use "
                   "range()"},
      {"glob", "it selects config-group options, and a recipe has none; list the values"},
      {"sort", "list the values in the order you want"},
      {"shuffle", "list the values in the order you want"},
      {"tag", "sweeper tags have no meaning here; drop tag()"},
      {"int", "casts are not supported; write the value as it should be typed"},
      {"float", "casts are not supported; write the value as it should be typed"},
      {"str", "casts are not supported; quote the value to make it a string"},
      {"bool", "casts are not supported; write true or false"},
      {"json_str", "casts are not supported; write the value as YAML"},
      {"extend_list", "list the whole new value, key=[a,b,c]"},
  };
  const auto it = known.find(name);
  return quoted(token) + ": Hydra's " + name + "() is not supported in a sweep" +
         (it != known.end() ? ": " + it->second
                            : "; a sweep takes a,b,c, choice(a,b,c) and range(start,stop,step); "
                              "to pass the text, quote it: '" +
                                  std::string(token.substr(token.find('=') + 1)) + "'");
}

std::int64_t range_number(std::string_view text, std::string_view what, std::string_view token) {
  std::int64_t n = 0;
  const char* end = text.data() + text.size();
  const char* first = text.data() + (text.starts_with('+') ? 1 : 0);
  const auto [ptr, ec] = std::from_chars(first, end, n);
  if (ec == std::errc::result_out_of_range)
    throw Error(quoted(token) + ": range() " + std::string(what) + " '" + std::string(text) +
                "' is out of range");
  if (ec != std::errc() || ptr != end || first == end) {
    const bool looks_float = text.find_first_of(".eE") != std::string_view::npos &&
                             text.find_first_not_of("+-0123456789.eE") == std::string_view::npos;
    throw Error(quoted(token) + ": range() " + std::string(what) + " '" + std::string(text) +
                "' is not a whole number" +
                (looks_float ? "; ranges over floats are not supported: list the values "
                               "(e.g. 1e-4,2e-4,4e-4)"
                             : ""));
  }
  return n;
}

// range(stop), range(start,stop), range(start,stop,step), arguments positional or named.
std::vector<std::string> range_values(std::string_view args, std::string_view token) {
  const std::vector<std::string_view> parts = split_elements(args, token);
  std::optional<std::int64_t> start, stop, step;
  const char* names[] = {"start", "stop", "step"};
  std::vector<std::optional<std::int64_t>*> slots = {&start, &stop, &step};
  if (parts.size() > 3)
    throw Error(quoted(token) + ": range() takes at most 3 arguments (start, stop, step), got " +
                std::to_string(parts.size()));
  bool named_seen = false;
  for (std::size_t i = 0; i < parts.size(); ++i) {
    const std::size_t eq = parts[i].find('=');
    if (eq == std::string_view::npos) {
      if (named_seen)
        throw Error(quoted(token) + ": a positional argument after a named one in range()");
      // range(stop) alone is Python's and Hydra's one-argument form.
      std::optional<std::int64_t>& slot = parts.size() == 1 ? stop : *slots[i];
      slot = range_number(parts[i], parts.size() == 1 ? "stop" : names[i], token);
      continue;
    }
    named_seen = true;
    const std::string_view name = trim(parts[i].substr(0, eq));
    const auto at = std::find(std::begin(names), std::end(names), name);
    if (at == std::end(names))
      throw Error(quoted(token) + ": range() has no argument '" + std::string(name) +
                  "'; it takes start, stop and step");
    std::optional<std::int64_t>& slot = *slots[static_cast<std::size_t>(at - std::begin(names))];
    if (slot)
      throw Error(quoted(token) + ": range() argument '" + std::string(name) + "' given twice");
    slot = range_number(trim(parts[i].substr(eq + 1)), name, token);
  }
  if (!stop)
    throw Error(quoted(token) + ": range() needs a stop: range(stop) or range(start,stop,step)");
  const std::int64_t from = start.value_or(0), by = step.value_or(1), to = *stop;
  if (by == 0)
    throw Error(quoted(token) + ": range() step is 0; give a step other than 0");
  std::vector<std::string> out;
  for (std::int64_t v = from; by > 0 ? v < to : v > to; v += by) {
    out.push_back(std::to_string(v));
    if (out.size() > kMaxSweepRuns)
      throw Error(quoted(token) + ": range() gives more than " + std::to_string(kMaxSweepRuns) +
                  " values");
    if ((by > 0 && v > INT64_MAX - by) || (by < 0 && v < INT64_MIN - by))
      break;
  }
  if (out.empty())
    throw Error(quoted(token) + ": range(" + std::to_string(from) + ", " + std::to_string(to) +
                ", " + std::to_string(by) + ") is empty" +
                (by > 0 ? "; stop must be above start" : "; stop must be below start"));
  return out;
}

// The elements of a sweep value, or none when the value is not a sweep.
std::vector<std::string> sweep_values(std::string_view value, std::string_view token) {
  if (value.empty())
    return {};
  const std::vector<std::string_view> elements = split_elements(value, token);
  for (std::string_view e : elements)
    if (const std::string name = function_name(e); !name.empty()) {
      if ((name == "choice" || name == "range") && elements.size() > 1)
        throw Error(quoted(token) + ": " + name +
                    "() must be the whole value, not one element of a list of values");
      if (name != "choice" && name != "range")
        throw Error(unsupported_function(name, token));
      if (!e.ends_with(')'))
        throw Error(quoted(token) + ": text after the ')' of " + name + "()");
      const std::string_view args = e.substr(name.size() + 1, e.size() - name.size() - 2);
      if (name == "range")
        return range_values(args, token);
      if (trim(args).empty())
        throw Error(quoted(token) + ": choice() needs at least one value");
      std::vector<std::string> out;
      for (std::string_view v : split_elements(args, token)) {
        if (!function_name(v).empty())
          throw Error(quoted(token) + ": a function inside choice() is not supported");
        out.emplace_back(v);
      }
      return out;
    }
  if (elements.size() == 1)
    return {};
  return {elements.begin(), elements.end()};
}

} // namespace

std::string file_name_part(std::string_view text) {
  static const char hex[] = "0123456789ABCDEF";
  std::string out;
  for (const char ch : text) {
    const auto c = static_cast<unsigned char>(ch);
    if (std::isalnum(c) != 0 || c == '.' || c == '_' || c == '-' || c == '+') {
      out.push_back(ch);
    } else {
      out.push_back('%');
      out.push_back(hex[c >> 4]);
      out.push_back(hex[c & 15]);
    }
  }
  return out;
}

Sweep parse_sweep(const std::vector<std::string>& tokens,
                  const std::vector<std::pair<std::string, std::string>>& shortcuts) {
  Sweep s;
  s.tokens = tokens;
  s.shortcuts = shortcuts;
  for (const std::string& token : tokens) {
    std::string_view rest = token;
    std::string prefix;
    for (const char* p : {"++", "+", "~"})
      if (rest.starts_with(p)) {
        prefix = p;
        rest.remove_prefix(prefix.size());
        break;
      }
    const std::size_t eq = rest.find('=');
    std::vector<std::string> values;
    if (eq != std::string_view::npos)
      values = sweep_values(rest.substr(eq + 1), token);
    if (values.empty()) {
      s.axis_of_token.push_back(-1);
      continue;
    }
    if (prefix == "~")
      throw Error(quoted(token) + ": a delete cannot be swept; give ~KEY or ~KEY=VALUE once");
    SweepAxis axis{token, prefix, std::string(rest.substr(0, eq)), false, {}, {}};
    for (const std::string& v : values) {
      // Each value must make a valid single override (the key's grammar, a value that is one).
      (void)parse_override(prefix + axis.key + "=" + v);
      if (std::find(axis.values.begin(), axis.values.end(), v) != axis.values.end())
        throw Error(quoted(token) + ": value '" + v + "' is given twice");
      axis.values.push_back(v);
    }
    for (const SweepAxis& other : s.axes)
      if (other.key == axis.key)
        throw Error(quoted(token) + ": '" + axis.key + "' is already swept by '" + other.token +
                    "'; give all its values in one sweep");
    s.axis_of_token.push_back(static_cast<int>(s.axes.size()));
    s.axes.push_back(std::move(axis));
  }
  for (const auto& [name, text] : shortcuts) {
    const std::string token = "--" + name + " " + text;
    const std::vector<std::string> values = sweep_values(text, token);
    if (values.empty()) {
      (void)parse_shortcut(name, text);
      s.axis_of_shortcut.push_back(-1);
      continue;
    }
    SweepAxis axis{token, "--", name, true, {}, {}};
    for (const std::string& v : values) {
      try {
        (void)parse_shortcut(name, v);
      } catch (const Error& e) {
        throw Error(quoted(token) + ": " + e.what());
      }
      if (std::find(axis.values.begin(), axis.values.end(), v) != axis.values.end())
        throw Error(quoted(token) + ": value '" + v + "' is given twice");
      axis.values.push_back(v);
    }
    for (const SweepAxis& other : s.axes)
      if (other.shortcut && other.key == name)
        throw Error(quoted(token) + ": --" + name + " is already swept by '" + other.token +
                    "'; give all its values in one sweep");
    s.axis_of_shortcut.push_back(static_cast<int>(s.axes.size()));
    s.axes.push_back(std::move(axis));
  }
  for (SweepAxis& a : s.axes) {
    const std::string last = a.key.substr(a.key.rfind('.') + 1);
    const bool shared = std::count_if(s.axes.begin(), s.axes.end(), [&](const SweepAxis& b) {
                          return b.key.substr(b.key.rfind('.') + 1) == last;
                        }) > 1;
    a.short_key = shared ? a.key : last;
  }
  return s;
}

std::vector<SweepRun> expand_sweep(const Sweep& sweep, std::size_t max_runs) {
  std::size_t total = 1;
  std::string product;
  bool over = false;
  for (const SweepAxis& a : sweep.axes) {
    product += (product.empty() ? "" : " x ") + std::to_string(a.values.size());
    over = over || a.values.size() > max_runs || total * a.values.size() > max_runs;
    if (!over)
      total *= a.values.size();
  }
  if (over)
    throw Error("sweep: " + product + " combinations is more than " + std::to_string(max_runs) +
                "; sweep fewer values");
  std::vector<SweepRun> runs;
  std::vector<std::size_t> index(sweep.axes.size(), 0);
  for (std::size_t n = 0; n < total; ++n) {
    SweepRun run;
    for (std::size_t i = 0; i < sweep.axes.size(); ++i) {
      const SweepAxis& a = sweep.axes[i];
      const std::string& v = a.values[index[i]];
      run.choices.push_back(a.prefix + a.key + (a.shortcut ? " " : "=") + v);
      run.name += (run.name.empty() ? "" : ",") + a.short_key + "=" + file_name_part(v);
    }
    if (run.name.empty())
      run.name = "run";
    if (run.name.size() > kMaxRunNameBytes)
      throw Error("sweep: the file name for " + run.choices.front() +
                  (run.choices.size() > 1 ? " ..." : "") + " would be " +
                  std::to_string(run.name.size()) + " bytes, more than " +
                  std::to_string(kMaxRunNameBytes) + "; sweep fewer keys or shorter values");
    for (std::size_t t = 0; t < sweep.tokens.size(); ++t)
      run.overrides.push_back(sweep.axis_of_token[t] < 0
                                  ? sweep.tokens[t]
                                  : run.choices[static_cast<std::size_t>(sweep.axis_of_token[t])]);
    for (std::size_t t = 0; t < sweep.shortcuts.size(); ++t)
      run.shortcuts.emplace_back(
          sweep.shortcuts[t].first,
          sweep.axis_of_shortcut[t] < 0
              ? sweep.shortcuts[t].second
              : sweep.axes[static_cast<std::size_t>(sweep.axis_of_shortcut[t])]
                    .values[index[static_cast<std::size_t>(sweep.axis_of_shortcut[t])]]);
    runs.push_back(std::move(run));
    // The last axis varies fastest.
    for (std::size_t i = sweep.axes.size(); i-- > 0;) {
      if (++index[i] < sweep.axes[i].values.size())
        break;
      index[i] = 0;
    }
  }
  return runs;
}

Value sweep_index(const Sweep& sweep, const std::vector<SweepRun>& runs,
                  const std::vector<std::string>& config_files,
                  const std::vector<std::string>& launch_files) {
  List axes;
  for (const SweepAxis& a : sweep.axes) {
    Map m;
    m.set("key", a.prefix + a.key);
    List values;
    for (const std::string& v : a.values)
      values.emplace_back(v);
    m.set("values", std::move(values));
    axes.emplace_back(std::move(m));
  }
  List entries;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    Map m;
    m.set("name", runs[i].name);
    m.set("config", config_files[i]);
    if (i < launch_files.size())
      m.set("launch", launch_files[i]);
    List choices;
    for (const std::string& c : runs[i].choices)
      choices.emplace_back(c);
    m.set("choices", std::move(choices));
    entries.emplace_back(std::move(m));
  }
  Map root;
  root.set("sweep", std::move(axes));
  root.set("runs", std::move(entries));
  return root;
}

} // namespace qr
