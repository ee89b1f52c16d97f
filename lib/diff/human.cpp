#include "diff/human.h"

#include "yaml/yaml_write.h"

#include <algorithm>
#include <cstdint>
#include <string>

namespace qr {
namespace {

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

bool structured(const Value& v) {
  if (v.is_map())
    return !v.as_map().empty() && !is_atomic_map(v);
  return v.is_list() && std::any_of(v.as_list().begin(), v.as_list().end(), structured);
}

// A value after a "- " or "+ " marker: one line when it has no nested structure, else YAML-like
// block lines continuing at `indent`.
void block(const Value& v, const std::string& indent, std::string& out) {
  if (!structured(v)) {
    out += show(v) + "\n";
    return;
  }
  bool first = true;
  auto next = [&] {
    if (!first)
      out += indent;
    first = false;
  };
  if (v.is_list()) {
    for (const Value& item : v.as_list()) {
      next();
      out += "- ";
      block(item, indent + "  ", out);
    }
    return;
  }
  for (const Map::Entry* e : v.as_map().sorted()) {
    next();
    out +=
        to_flow_yaml(e->first.integer ? Value(static_cast<std::int64_t>(std::stoll(e->first.text)))
                                      : Value(e->first.text)) +
        ":";
    if (structured(e->second)) {
      out += "\n" + indent + "  ";
      block(e->second, indent + "  ", out);
    } else {
      out += ' ' + show(e->second) + '\n';
    }
  }
}

} // namespace

std::string human_diff(const std::vector<Difference>& diffs, const std::string& a_label,
                       const std::string& b_label,
                       const std::function<std::string(const Difference&)>& set_by) {
  std::string out =
      "between " + a_label + "\n    and " + b_label + "\nreturned " +
      (diffs.empty() ? "no differences" : count_of(diffs.size(), "difference", "differences")) +
      "\n";
  std::string section = "\x01"; // no section yet
  for (const Difference& d : diffs) {
    if (d.section() != section) {
      section = d.section();
      std::size_t n = 0;
      for (const Difference& e : diffs)
        n += e.section() == section;
      out += "\n[" + (section.empty() ? std::string("(root level)") : section) + "] " +
             count_of(n, "difference", "differences") + "\n";
    }
    out += "\n" + (d.keys.empty() ? std::string("(root level)") : d.path()) + "\n";
    for (const Detail& det : d.details) {
      switch (det.kind) {
      case Detail::Kind::ValueChange:
      case Detail::Kind::TypeChange:
      case Detail::Kind::OrderChange:
        out += det.kind == Detail::Kind::ValueChange ? "  ± value change\n"
               : det.kind == Detail::Kind::OrderChange
                   ? "  ⇆ order changed\n"
                   : "  ± type change from " + std::string(kind_name(det.from)) + " to " +
                         std::string(kind_name(det.to)) + "\n";
        out += "    - ";
        block(det.from, "      ", out);
        out += "    + ";
        block(det.to, "      ", out);
        break;
      case Detail::Kind::ClassChange:
        out += "  ± class change\n    - " + std::string(det.from.target()) + "\n    + " +
               std::string(det.to.target()) + "\n";
        break;
      case Detail::Kind::EntriesAdded:
      case Detail::Kind::EntriesRemoved:
        out += det.kind == Detail::Kind::EntriesAdded ? "  + " : "  - ";
        out += count_of(det.entries.size(), "map entry", "map entries") +
               (det.kind == Detail::Kind::EntriesAdded ? " added:\n" : " removed:\n") + "    ";
        block(Value(det.entries), "    ", out);
        break;
      case Detail::Kind::ItemsAdded:
      case Detail::Kind::ItemsRemoved:
        out += det.kind == Detail::Kind::ItemsAdded ? "  + " : "  - ";
        out += count_of(det.items.size(), "list entry", "list entries") +
               (det.kind == Detail::Kind::ItemsAdded ? " added:\n" : " removed:\n");
        for (const Value& item : det.items) {
          out += "    - ";
          block(item, "      ", out);
        }
        break;
      }
    }
    if (set_by)
      out += "  set by: " + set_by(d) + "\n";
  }
  return out;
}

const char* change_name(Detail::Kind kind) {
  static const char* const names[] = {"value",           "type",        "entries-added",
                                      "entries-removed", "items-added", "items-removed",
                                      "order",           "class"};
  return names[static_cast<int>(kind)];
}

} // namespace qr
