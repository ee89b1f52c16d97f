#include "diff/diff.h"

#include "yaml/yaml_write.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string_view>
#include <unordered_map>

namespace qr {
namespace {

// A key a Hydra override can name as one path segment.
bool nameable(const std::string& key) {
  return !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-';
  });
}

bool opaque(const Value& v) {
  if (is_atomic_map(v))
    return true;
  if (!v.is_map())
    return false;
  const Map& m = v.as_map();
  return std::any_of(m.begin(), m.end(),
                     [](const Map::Entry& e) { return !nameable(e.first.text); });
}

// Items of `from` not matched by an equal item of `other` (a multiset difference, in order).
List unmatched(const List& from, const List& other) {
  std::vector<bool> used(other.size(), false);
  List out;
  for (const Value& item : from) {
    bool found = false;
    for (std::size_t i = 0; i < other.size(); ++i)
      if (!used[i] && other[i] == item) {
        used[i] = found = true;
        break;
      }
    if (!found)
      out.push_back(item);
  }
  return out;
}

void compare(const Value& a, const Value& b, std::vector<std::string>& keys,
             std::vector<Difference>& out) {
  if (a == b)
    return;
  Difference d{keys, {}};
  if (a.kind() != b.kind()) {
    Detail t{Detail::Kind::TypeChange};
    t.from = a;
    t.to = b;
    d.details.push_back(std::move(t));
    out.push_back(std::move(d));
    return;
  }
  if (a.is_map() && !opaque(a) && !opaque(b)) {
    if (a.target() != b.target()) {
      Detail c{Detail::Kind::ClassChange};
      c.from = a;
      c.to = b;
      d.details.push_back(std::move(c));
    }
    Detail removed{Detail::Kind::EntriesRemoved}, added{Detail::Kind::EntriesAdded};
    for (const Map::Entry* e : a.as_map().sorted())
      if (!b.as_map().contains(e->first.text))
        removed.entries.set(e->first, e->second);
    for (const Map::Entry* e : b.as_map().sorted())
      if (!a.as_map().contains(e->first.text))
        added.entries.set(e->first, e->second);
    if (!removed.entries.empty())
      d.details.push_back(std::move(removed));
    if (!added.entries.empty())
      d.details.push_back(std::move(added));
    if (!d.details.empty())
      out.push_back(std::move(d));
    for (const Map::Entry* e : a.as_map().sorted())
      if (const Value* other = b.as_map().find(e->first.text);
          other != nullptr && !(e->first.text == "_target_" && a.target() != b.target())) {
        keys.push_back(e->first.text);
        compare(e->second, *other, keys, out);
        keys.pop_back();
      }
    return;
  }
  if (a.is_list()) {
    const List removed = unmatched(a.as_list(), b.as_list());
    const List added = unmatched(b.as_list(), a.as_list());
    if (removed.empty() && added.empty()) {
      Detail o{Detail::Kind::OrderChange};
      o.from = a;
      o.to = b;
      d.details.push_back(std::move(o));
    }
    for (auto [kind, items] : {std::pair{Detail::Kind::ItemsRemoved, &removed},
                               std::pair{Detail::Kind::ItemsAdded, &added}})
      if (!items->empty()) {
        Detail r{kind};
        r.items = *items;
        r.from = a;
        r.to = b;
        d.details.push_back(std::move(r));
      }
    out.push_back(std::move(d));
    return;
  }
  Detail v{Detail::Kind::ValueChange};
  v.from = a;
  v.to = b;
  d.details.push_back(std::move(v));
  out.push_back(std::move(d));
}

std::string join_keys(const std::vector<std::string>& keys, const std::string& last = {}) {
  std::string out;
  auto append = [&](const std::string& k) {
    if (!out.empty())
      out += '.';
    out += k;
  };
  for (const std::string& k : keys)
    append(k);
  if (!last.empty())
    append(last);
  return out;
}

// --- unified diff ----------------------------------------------------------------------------
// Myers' O(ND) algorithm where it is cheap (a few thousand lines, a few thousand edits: every
// real config diff), so that hunks are the minimal ones diff -u shows; beyond that, unique lines
// common to both sides anchor the rest (patience diff, n log n) and what lies between anchors is
// diffed the same way, so that two configs of 400k changed keys cost n log n, not n x d.

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (start < text.size()) {
    const std::size_t nl = text.find('\n', start);
    const std::size_t end = nl == std::string::npos ? text.size() : nl;
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

enum class Op { Keep, Del, Ins };

using Lines = std::vector<std::string>;

// Where Myers runs: at most this many lines on both sides together, and this many edits (its
// saved frontiers grow with the square of the edits).
constexpr std::size_t kMyersLines = 20'000;
constexpr int kMyersEdits = 1'000;
// How often what lies between anchors is anchored again before it is replaced whole.
constexpr int kAnchorDepth = 8;

// Myers' shortest edit script of a[a0, a1) into b[b0, b1), appended to `out`; false (nothing
// appended) when it needs more than kMyersEdits edits.
bool myers(const Lines& a, int a0, int a1, const Lines& b, int b0, int b1, std::vector<Op>& out) {
  const int n = a1 - a0, m = b1 - b0;
  const int max = std::min(n + m, kMyersEdits);
  std::vector<int> v(2 * static_cast<std::size_t>(max) + 3, 0);
  auto at = [&](int k) -> int& { return v[static_cast<std::size_t>(k + max + 1)]; };
  std::vector<std::vector<int>> trace; // trace[d]: the frontier before step d, k in [-d, d]
  int found_d = -1;
  for (int d = 0; d <= max && found_d < 0; ++d) {
    trace.emplace_back(v.begin() + (max + 1 - d), v.begin() + (max + 2 + d));
    for (int k = -d; k <= d; k += 2) {
      int x = (k == -d || (k != d && at(k - 1) < at(k + 1))) ? at(k + 1) : at(k - 1) + 1;
      int y = x - k;
      while (x < n && y < m &&
             a[static_cast<std::size_t>(a0 + x)] == b[static_cast<std::size_t>(b0 + y)]) {
        ++x;
        ++y;
      }
      at(k) = x;
      if (x >= n && y >= m) {
        found_d = d;
        break;
      }
    }
  }
  if (found_d < 0)
    return false;
  // Walk back through the saved frontiers.
  std::vector<Op> ops;
  int x = n, y = m;
  for (int d = found_d; d > 0; --d) {
    const std::vector<int>& pv = trace[static_cast<std::size_t>(d)];
    auto prev = [&](int k) { return pv[static_cast<std::size_t>(k + d)]; };
    const int k = x - y;
    const int pk = (k == -d || (k != d && prev(k - 1) < prev(k + 1))) ? k + 1 : k - 1;
    const int px = prev(pk), py = px - pk;
    while (x > px && y > py) {
      ops.push_back(Op::Keep);
      --x;
      --y;
    }
    ops.push_back(x == px ? Op::Ins : Op::Del);
    x = px;
    y = py;
  }
  while (x > 0 && y > 0) {
    ops.push_back(Op::Keep);
    --x;
    --y;
  }
  out.insert(out.end(), ops.rbegin(), ops.rend());
  return true;
}

void diff_range(const Lines& a, int a0, int a1, const Lines& b, int b0, int b1, int depth,
                std::vector<Op>& out) {
  while (a0 < a1 && b0 < b1 && a[static_cast<std::size_t>(a0)] == b[static_cast<std::size_t>(b0)]) {
    out.push_back(Op::Keep); // as Myers' first snake would
    ++a0;
    ++b0;
  }
  if (static_cast<std::size_t>(a1 - a0 + b1 - b0) <= kMyersLines &&
      myers(a, a0, a1, b, b0, b1, out))
    return;
  int suffix = 0;
  while (a1 - suffix > a0 && b1 - suffix > b0 &&
         a[static_cast<std::size_t>(a1 - suffix - 1)] ==
             b[static_cast<std::size_t>(b1 - suffix - 1)])
    ++suffix;
  a1 -= suffix;
  b1 -= suffix;
  // Anchors: lines that occur once on each side, in the longest run that keeps both orders.
  std::vector<std::pair<int, int>> anchors; // (in a, in b)
  if (depth < kAnchorDepth) {
    std::unordered_map<std::string_view, std::pair<int, int>> seen; // line -> (count in a, at)
    for (int i = a0; i < a1; ++i) {
      auto& [count, where] = seen[a[static_cast<std::size_t>(i)]];
      ++count;
      where = i;
    }
    std::unordered_map<std::string_view, std::pair<int, int>> in_b; // line -> (count, at)
    for (int j = b0; j < b1; ++j) {
      auto& [count, where] = in_b[b[static_cast<std::size_t>(j)]];
      ++count;
      where = j;
    }
    std::vector<std::pair<int, int>> unique;
    for (int i = a0; i < a1; ++i) {
      const std::string_view line = a[static_cast<std::size_t>(i)];
      const auto ia = seen.find(line);
      const auto ib = in_b.find(line);
      if (ia->second.first == 1 && ib != in_b.end() && ib->second.first == 1)
        unique.emplace_back(i, ib->second.second);
    }
    // Longest increasing run of b positions (patience sorting).
    std::vector<int> tails, tail_at, parent(unique.size(), -1);
    for (std::size_t u = 0; u < unique.size(); ++u) {
      const auto pos = static_cast<std::size_t>(
          std::lower_bound(tails.begin(), tails.end(), unique[u].second) - tails.begin());
      if (pos == tails.size()) {
        tails.push_back(unique[u].second);
        tail_at.push_back(static_cast<int>(u));
      } else {
        tails[pos] = unique[u].second;
        tail_at[pos] = static_cast<int>(u);
      }
      parent[u] = pos == 0 ? -1 : tail_at[pos - 1];
    }
    for (int u = tail_at.empty() ? -1 : tail_at.back(); u >= 0;
         u = parent[static_cast<std::size_t>(u)])
      anchors.push_back(unique[static_cast<std::size_t>(u)]);
    std::reverse(anchors.begin(), anchors.end());
  }
  int ia = a0, ib = b0;
  for (const auto& [anchor_a, anchor_b] : anchors) {
    diff_range(a, ia, anchor_a, b, ib, anchor_b, depth + 1, out);
    out.push_back(Op::Keep);
    ia = anchor_a + 1;
    ib = anchor_b + 1;
  }
  if (anchors.empty()) { // nothing in common to align on: the one side replaces the other
    out.insert(out.end(), static_cast<std::size_t>(a1 - ia), Op::Del);
    out.insert(out.end(), static_cast<std::size_t>(b1 - ib), Op::Ins);
  } else {
    diff_range(a, ia, a1, b, ib, b1, depth + 1, out);
  }
  out.insert(out.end(), static_cast<std::size_t>(suffix), Op::Keep);
}

std::vector<Op> edit_script(const Lines& a, const Lines& b) {
  std::vector<Op> ops;
  diff_range(a, 0, static_cast<int>(a.size()), b, 0, static_cast<int>(b.size()), 0, ops);
  return ops;
}

std::string range(int start, int len) {
  // GNU diff: "s" for one line, "s,len" otherwise; an empty range names the line before it.
  if (len == 1)
    return std::to_string(start + 1);
  return std::to_string(len == 0 ? start : start + 1) + "," + std::to_string(len);
}

} // namespace

// Enums, dtypes, callables and partials serialize as maps, but their fields are not config
// fields (no override can name `model.x._name_`).
bool is_atomic_map(const Value& v) {
  if (!v.is_map())
    return false;
  const Map& m = v.as_map();
  return m.contains("_call_") || m.contains("_partial_");
}

std::string Difference::path() const {
  return join_keys(keys);
}

std::string Difference::section() const {
  return keys.empty() ? std::string() : keys.front();
}

std::vector<Difference> diff_values(const Value& a, const Value& b) {
  std::vector<Difference> out;
  std::vector<std::string> keys;
  compare(a, b, keys, out);
  return out;
}

std::vector<std::string> dotlist(const std::vector<Difference>& diffs,
                                 const SectionDefaults& defaults) {
  std::vector<std::string> out;
  std::vector<std::string> replaced_sections; // their fields came with the replacement
  for (const Difference& d : diffs) {
    const std::string path = d.path();
    if (std::any_of(replaced_sections.begin(), replaced_sections.end(),
                    [&](const std::string& s) { return path.starts_with(s + "."); }))
      continue;
    bool replaced = false; // a list's details all come down to one replacement
    for (const Detail& det : d.details) {
      if (replaced)
        break;
      switch (det.kind) {
      case Detail::Kind::EntriesRemoved:
        for (const Map::Entry* e : det.entries.sorted())
          out.push_back(std::string(1, '~').append(join_keys(d.keys, e->first.text)));
        break;
      case Detail::Kind::EntriesAdded:
        for (const Map::Entry* e : det.entries.sorted())
          out.push_back(std::string(1, '+')
                            .append(join_keys(d.keys, e->first.text))
                            .append("=")
                            .append(to_flow_yaml(e->second)));
        break;
      case Detail::Kind::ClassChange: {
        replaced_sections.push_back(path);
        replaced = true;
        const std::optional<Value> fresh =
            defaults ? defaults(det.to.target()) : std::optional<Value>();
        if (!fresh) {
          out.push_back(path + "=" + to_flow_yaml(det.to));
          break;
        }
        // The new class at its defaults, then what differs from them: the defaults keep their
        // exact types (an int default in a float field stays an int).
        Map stub;
        stub.set("_target_", Value(std::string(det.to.target())));
        out.push_back(path + "=" + to_flow_yaml(Value(std::move(stub))));
        std::vector<Difference> inner = diff_values(*fresh, det.to);
        for (Difference& i : inner)
          i.keys.insert(i.keys.begin(), d.keys.begin(), d.keys.end());
        for (std::string& token : dotlist(inner, defaults))
          out.push_back(std::move(token));
        break;
      }
      case Detail::Kind::ItemsAdded:
      case Detail::Kind::ItemsRemoved:
      case Detail::Kind::OrderChange:
      case Detail::Kind::ValueChange:
      case Detail::Kind::TypeChange:
        out.push_back(path + "=" + to_flow_yaml(det.to));
        replaced = true;
        break;
      }
    }
  }
  return out;
}

std::string show(const Value& v) {
  if (v.is_map()) {
    const Map& m = v.as_map();
    const Value* target = m.find("_target_");
    const Value* name = m.find("_name_");
    const Value* call = m.find("_call_");
    if (target != nullptr && target->is_str() && call != nullptr && call->is_bool()) {
      if (name != nullptr && name->is_str() && call->as_bool()) {
        const std::string& t = target->as_str();
        return t.substr(t.rfind('.') + 1) + "." + name->as_str();
      }
      if (!call->as_bool() && m.size() == 2)
        return target->as_str();
    }
    std::string out = "{";
    for (const Map::Entry* e : m.sorted()) {
      if (out.size() > 1)
        out += ", ";
      out += to_flow_yaml(e->first.integer
                              ? Value(static_cast<std::int64_t>(std::stoll(e->first.text)))
                              : Value(e->first.text)) +
             ": " + show(e->second);
    }
    return out + "}";
  }
  if (v.is_list()) {
    std::string out = "[";
    for (const Value& item : v.as_list()) {
      if (out.size() > 1)
        out += ", ";
      out += show(item);
    }
    return out + "]";
  }
  return to_flow_yaml(v);
}

std::string unified_diff(const std::string& a, const std::string& b, const std::string& a_label,
                         const std::string& b_label) {
  if (a == b)
    return {};
  const std::vector<std::string> la = lines_of(a), lb = lines_of(b);
  const std::vector<Op> ops = edit_script(la, lb);
  constexpr int kContext = 3;
  std::string out = "--- " + a_label + "\n+++ " + b_label + "\n";
  // Positions (in a, in b) before each op.
  std::vector<std::pair<int, int>> pos;
  int x = 0, y = 0;
  for (Op op : ops) {
    pos.emplace_back(x, y);
    if (op != Op::Ins)
      ++x;
    if (op != Op::Del)
      ++y;
  }
  const int total = static_cast<int>(ops.size());
  int i = 0;
  while (i < total) {
    if (ops[static_cast<std::size_t>(i)] == Op::Keep) {
      ++i;
      continue;
    }
    // A hunk: from kContext before this change to kContext after the last change that lies
    // within 2 x kContext of the previous one.
    const int begin = std::max(0, i - kContext);
    int end = i;
    int last_change = i;
    while (end < total) {
      if (ops[static_cast<std::size_t>(end)] != Op::Keep)
        last_change = end;
      else if (end - last_change > 2 * kContext)
        break;
      ++end;
    }
    end = std::min(total, last_change + 1 + kContext);
    int a_len = 0, b_len = 0;
    std::string body;
    for (int j = begin; j < end; ++j) {
      const auto [px, py] = pos[static_cast<std::size_t>(j)];
      switch (ops[static_cast<std::size_t>(j)]) {
      case Op::Keep:
        body += " " + la[static_cast<std::size_t>(px)] + "\n";
        ++a_len;
        ++b_len;
        break;
      case Op::Del:
        body += "-" + la[static_cast<std::size_t>(px)] + "\n";
        ++a_len;
        break;
      case Op::Ins:
        body += "+" + lb[static_cast<std::size_t>(py)] + "\n";
        ++b_len;
        break;
      }
    }
    const auto [sa, sb] = pos[static_cast<std::size_t>(begin)];
    out += "@@ -" + range(sa, a_len) + " +" + range(sb, b_len) + " @@\n" + body;
    i = end;
  }
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (unsigned char c : s) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\r':
      out += "\\r";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\u%04x", c);
        out += buf;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out + "\"";
}

std::string to_json(const Value& v) {
  switch (v.kind()) {
  case Value::Kind::Null:
    return "null";
  case Value::Kind::Bool:
    return v.as_bool() ? "true" : "false";
  case Value::Kind::Int:
    return std::to_string(v.as_int());
  case Value::Kind::Float:
    // JSON has no inf or nan; YAML's spelling keeps the value readable.
    return std::isfinite(v.as_float()) ? format_float(v.as_float())
                                       : json_string(format_float(v.as_float()));
  case Value::Kind::Str:
    return json_string(v.as_str());
  case Value::Kind::List: {
    std::string out = "[";
    for (const Value& item : v.as_list())
      out += (out.size() > 1 ? ", " : "") + to_json(item);
    return out + "]";
  }
  case Value::Kind::Map: {
    std::string out = "{";
    for (const Map::Entry* e : v.as_map().sorted())
      out += (out.size() > 1 ? ", " : "") + json_string(e->first.text) + ": " + to_json(e->second);
    return out + "}";
  }
  }
  return "null";
}

} // namespace qr
