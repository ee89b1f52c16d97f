#include "check/check.h"

#include "diff/human.h"
#include "support/error.h"
#include "support/input.h"
#include "support/script_text.h"
#include "support/suggest.h"
#include "support/utf8.h"
#include "validate/validate.h"
#include "yaml/yaml_read.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <map>
#include <sys/stat.h>
#include <thread>

namespace qr {
namespace {

namespace fs = std::filesystem;

// A manifest is a short list; this bound only stops a mistaken argument (a huge file) early.
constexpr std::size_t kMaxManifestBytes = std::size_t{4} << 20;
// Goldens are configs of tens of kilobytes.
constexpr std::size_t kMaxGoldenBytes = std::size_t{64} << 20;
// What the report shows of one mismatch: a golden may be any file, and a report is for reading.
constexpr std::size_t kMaxMismatchLines = 200;
constexpr std::size_t kMaxMismatchLineBytes = 400;

const std::vector<std::string> kTopKeys = {"goldens"};
// The launcher shortcuts (tp, pp, ...) are keys too, as on the command line (--tp ...).
const std::vector<std::string> kEntryKeys = [] {
  std::vector<std::string> keys = {"spec",           "base",      "pipeline",    "mcore",
                                   "overrides_file", "overrides", "recipes_dir", "golden"};
  for (const ShortcutInfo& s : shortcut_table())
    keys.emplace_back(s.name);
  return keys;
}();

std::string list_of(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names)
    out += (out.empty() ? "" : ", ") + n;
  return out;
}

// The keys of a mapping node, refusing duplicates and keys not in `allowed`.
std::map<std::string, const YamlNode*> keys_of(const YamlDoc& doc, const YamlNode& map,
                                               const std::vector<std::string>& allowed,
                                               const std::string& what) {
  std::map<std::string, const YamlNode*> out;
  for (const auto& [key, value] : map.entries) {
    if (key->kind != YamlNode::Kind::Scalar)
      throw Error(doc.where(*key) + ": " + what + " keys are names such as " + allowed.front());
    if (std::find(allowed.begin(), allowed.end(), key->text) == allowed.end())
      throw Error(doc.where(*key) + ": unknown key '" + key->text + "' in " + what +
                  did_you_mean(key->text, allowed) + "; " + what + " has: " + list_of(allowed));
    if (!out.emplace(key->text, value).second)
      throw Error(doc.where(*key) + ": key '" + key->text + "' given twice in " + what +
                  duplicate_key_hint(map, *key));
  }
  return out;
}

std::string text_of(const YamlDoc& doc, const YamlNode& key_node, const YamlNode& n,
                    const std::string& key) {
  if (n.kind != YamlNode::Kind::Scalar || n.text.empty())
    throw Error(doc.where(n.kind == YamlNode::Kind::Null ? key_node : n) + ": '" + key +
                "' must be a non-empty string");
  return n.text;
}

std::string resolve(const fs::path& dir, const std::string& path) {
  const fs::path p(path);
  return (p.is_absolute() ? p : dir / p).lexically_normal().string();
}

GoldenEntry read_entry(const YamlDoc& doc, const YamlNode& n, const fs::path& dir) {
  if (n.kind != YamlNode::Kind::Mapping)
    throw Error(doc.where(n) + ": a goldens entry is a mapping with 'golden' and 'spec' (or "
                               "'base' and 'pipeline')");
  GoldenEntry e;
  e.where = doc.where(n.entries.empty() ? n : *n.entries.front().first);
  const auto keys = keys_of(doc, n, kEntryKeys, "a goldens entry");
  auto key_node = [&](const std::string& k) -> const YamlNode& {
    for (const auto& [key, value] : n.entries)
      if (key->text == k)
        return *key;
    return n;
  };
  auto text = [&](const std::string& k) {
    const auto it = keys.find(k);
    return it == keys.end() ? std::string() : text_of(doc, key_node(k), *it->second, k);
  };
  e.golden = text("golden");
  if (e.golden.empty())
    throw Error(e.where + ": entry has no 'golden' (the YAML file it must build to)");
  e.golden_path = resolve(dir, e.golden);
  const std::string spec = text("spec"), base = text("base");
  if (spec.empty() == base.empty())
    throw Error(e.where + ": entry for " + escaped_for_message(e.golden) +
                " needs 'spec' (MODEL@GPU[:PRECISION]) " + (spec.empty() ? "or" : "or, not both,") +
                " 'base' (a YAML file, with 'pipeline')");
  if (!spec.empty() && spec.find('@') == std::string::npos)
    throw Error(doc.where(*keys.at("spec")) + ": spec '" + spec +
                "' names no GPU; write MODEL@GPU[:PRECISION], e.g. qwen35_397b@gb300:fp8mx");
  e.request.recipe = spec;
  e.request.pipeline_text = text("pipeline");
  if (!base.empty()) {
    if (e.request.pipeline_text.empty())
      throw Error(e.where + ": entry for " + escaped_for_message(e.golden) +
                  " has 'base' but no 'pipeline': a base file has no recipe pipeline of its own");
    e.request.base_file = resolve(dir, base);
  }
  e.request.profile = text("mcore");
  if (const std::string file = text("overrides_file"); !file.empty())
    e.request.override_files.push_back(resolve(dir, file));
  // recipes_dir: one folder or a list of them, as --recipes-dir given once or more.
  if (const auto it = keys.find("recipes_dir"); it != keys.end()) {
    if (it->second->kind == YamlNode::Kind::Sequence) {
      if (it->second->items.empty())
        throw Error(doc.where(*it->second) + ": 'recipes_dir' lists no folder");
      for (const YamlNode* item : it->second->items)
        e.recipes_dirs.push_back(resolve(dir, text_of(doc, *item, *item, "recipes_dir's item")));
    } else {
      e.recipes_dirs.push_back(resolve(dir, text("recipes_dir")));
    }
  }
  for (const ShortcutInfo& info : shortcut_table())
    if (const auto it = keys.find(info.name); it != keys.end()) {
      const YamlNode& v = *it->second;
      if (v.kind != YamlNode::Kind::Scalar && v.kind != YamlNode::Kind::Null)
        throw Error(doc.where(v) + ": '" + info.name + "' is a whole number (as --" + info.name +
                    ")");
      try {
        e.request.shortcuts.push_back(
            parse_shortcut(info.name, v.kind == YamlNode::Kind::Null ? "None" : v.text));
      } catch (const Error& err) {
        throw Error(doc.where(v.kind == YamlNode::Kind::Null ? key_node(info.name) : v) + ": " +
                    err.what());
      }
    }
  if (const auto it = keys.find("overrides"); it != keys.end()) {
    const YamlNode& list = *it->second;
    if (list.kind != YamlNode::Kind::Sequence)
      throw Error(doc.where(list.kind == YamlNode::Kind::Null ? key_node("overrides") : list) +
                  ": 'overrides' must be a list of Hydra overrides such as "
                  "[train.global_batch_size=512]");
    for (const YamlNode* item : list.items)
      e.request.overrides.push_back(text_of(doc, *item, *item, "overrides' item"));
  }
  return e;
}

// A file's text, refusing what is not a regular file of sane size.
std::string read_golden(const std::string& path, bool& exists) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  exists = fs::exists(st);
  if (!exists)
    return {};
  if (!fs::is_regular_file(st))
    throw Error(escaped_for_message(path) + ": golden is not a regular file");
  return read_input_file(path, kMaxGoldenBytes, "a golden");
}

// Which file a golden path is, whatever its spelling: two entries whose goldens are one file
// (`a/g.yaml` and `b/g.yaml` with b -> a, or a hard link) would overwrite each other. An existing
// file is its device and inode; a missing one its path with every link in it resolved.
std::string golden_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0)
    return "inode " + std::to_string(st.st_dev) + ":" + std::to_string(st.st_ino);
  std::error_code ec;
  const fs::path real = fs::weakly_canonical(path, ec);
  return "path " + (ec ? fs::path(path).lexically_normal() : real).string();
}

Value untyped(const std::string& text, const std::string& label) {
  auto doc = parse_yaml(text, label);
  return doc->root == nullptr ? Value() : to_untyped_value(*doc, *doc->root);
}

GoldenResult check_entry(const GoldenEntry& e, const Compiler& compiler) {
  GoldenResult out;
  // The start-up checks, as build runs them: a failing one fails the entry.
  BuildRequest request = e.request;
  request.checks.enforce = false;
  const BuildResult r = compiler.run(request, through(Stage::Emit));
  std::string failed;
  for (const Finding& f : r.report.findings)
    if (f.level == Finding::Level::Error)
      failed += (failed.empty() ? "" : "; ") + ("check '" + f.check + "' failed: " + f.message);
  if (!failed.empty())
    throw Error(failed);
  out.build = r.command;
  out.actual = r.yaml;
  bool exists = false;
  const std::string golden = read_golden(e.golden_path, exists);
  if (!exists) {
    out.status = GoldenResult::Status::Missing;
    return out;
  }
  if (golden == out.actual) {
    out.status = GoldenResult::Status::Match;
    return out;
  }
  out.status = GoldenResult::Status::Mismatch;
  try {
    out.differences = diff_values(untyped(golden, e.golden), untyped(out.actual, r.command));
  } catch (const Error&) {
    // A golden that is not YAML (a merge conflict, a truncated file) still compares as text.
  }
  if (out.differences.empty())
    out.text_diff = unified_diff(golden, out.actual, e.golden, "built");
  return out;
}

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

const char* status_name(const GoldenResult& r, bool updated) {
  switch (r.status) {
  case GoldenResult::Status::Match:
    return "match";
  case GoldenResult::Status::Mismatch:
    return updated ? "updated" : "mismatch";
  case GoldenResult::Status::Missing:
    return updated ? "created" : "missing";
  case GoldenResult::Status::Error:
    break;
  }
  return "error";
}

// What a mismatch shows: the semantic diff in the diff command's layout, or the text diff. A
// golden can be any file (an absolute path is used as given), so what is shown of it is bounded
// (kMaxMismatchLines lines of at most kMaxMismatchLineBytes) and escaped as messages are.
std::string mismatch_text(const GoldenEntry& e, const GoldenResult& r) {
  const std::string full =
      !r.differences.empty()
          ? human_diff(r.differences, e.golden, r.build)
          : "no differences as values; the text differs (comments or layout):\n" + r.text_diff;
  std::string out;
  std::size_t lines = 0, start = 0;
  for (; start < full.size() && lines < kMaxMismatchLines; ++lines) {
    std::size_t end = full.find('\n', start);
    end = end == std::string::npos ? full.size() : end;
    std::string line = escaped_for_message(
        std::string_view(full).substr(start, std::min(end - start, kMaxMismatchLineBytes)));
    if (end - start > kMaxMismatchLineBytes)
      line += " ... (" + std::to_string(end - start - kMaxMismatchLineBytes) + " more bytes)";
    out += line + "\n";
    start = end + 1;
  }
  if (start < full.size()) {
    const auto more =
        std::count(full.begin() + static_cast<std::ptrdiff_t>(start), full.end(), '\n');
    out += "... (" + std::to_string(more) + " more lines; 'qwen-recipe diff' shows them all)\n";
  }
  return out;
}

std::string summary(const std::vector<GoldenResult>& results, bool updated) {
  std::size_t match = 0, mismatch = 0, missing = 0;
  for (const GoldenResult& r : results) {
    match += r.status == GoldenResult::Status::Match;
    mismatch += r.status == GoldenResult::Status::Mismatch;
    missing += r.status == GoldenResult::Status::Missing;
  }
  std::string out = count_of(results.size(), "golden", "goldens") + ": " + std::to_string(match) +
                    " match, " + std::to_string(mismatch) +
                    (updated ? " updated" : (mismatch == 1 ? " mismatch" : " mismatches"));
  if (missing > 0)
    out += ", " + std::to_string(missing) + (updated ? " created" : " missing");
  return out;
}

} // namespace

Manifest read_manifest(const std::string& path) {
  YamlLimits limits;
  limits.max_bytes = kMaxManifestBytes;
  const auto doc = read_yaml_file(path, limits);
  Manifest m;
  m.path = path;
  if (doc->root == nullptr || doc->root->kind != YamlNode::Kind::Mapping)
    throw Error(escaped_for_message(path) + ": a manifest is a mapping with a 'goldens' list");
  const auto top = keys_of(*doc, *doc->root, kTopKeys, "a manifest");
  const auto it = top.find("goldens");
  if (it == top.end() || it->second->kind != YamlNode::Kind::Sequence || it->second->items.empty())
    throw Error((it == top.end() ? path : doc->where(*it->second)) +
                ": a manifest needs a non-empty 'goldens' list");
  const fs::path dir = fs::path(path).parent_path();
  std::map<std::string, std::string> seen; // golden_identity -> where
  for (const YamlNode* n : it->second->items) {
    GoldenEntry e = read_entry(*doc, *n, dir);
    if (const auto [at, fresh] = seen.emplace(golden_identity(e.golden_path), e.where); !fresh)
      throw Error(e.where + ": golden " + escaped_for_message(e.golden) +
                  " is already the golden of the entry at " + at->second);
    m.entries.push_back(std::move(e));
  }
  return m;
}

std::vector<GoldenResult> check_goldens(const Manifest& manifest, const DataSources& data,
                                        unsigned jobs) {
  const std::size_t n = manifest.entries.size();
  std::vector<GoldenResult> results(n);
  // One compiler per recipes tree, made before the threads start; the compilers are read-only
  // while building, so the threads share them.
  std::map<std::vector<std::string>, std::shared_ptr<const Compiler>> compilers;
  std::map<std::vector<std::string>, std::string> compiler_errors;
  for (const GoldenEntry& e : manifest.entries) {
    if (compilers.count(e.recipes_dirs) != 0 || compiler_errors.count(e.recipes_dirs) != 0)
      continue;
    try {
      compilers[e.recipes_dirs] = std::make_shared<const Compiler>(
          e.recipes_dirs.empty() ? data : recipe_sources(e.recipes_dirs));
    } catch (const Error& err) {
      compiler_errors[e.recipes_dirs] = err.what();
    }
  }
  std::atomic<std::size_t> next{0};
  auto work = [&] {
    for (std::size_t i = next++; i < n; i = next++) {
      const GoldenEntry& e = manifest.entries[i];
      try {
        if (const auto err = compiler_errors.find(e.recipes_dirs); err != compiler_errors.end())
          throw Error(err->second);
        results[i] = check_entry(e, *compilers.at(e.recipes_dirs));
      } catch (const std::exception& err) {
        results[i].status = GoldenResult::Status::Error;
        results[i].error = e.where + ": " + escaped_for_message(e.golden) + ": " + err.what();
      }
    }
  };
  if (jobs == 0)
    jobs = std::max(1u, std::thread::hardware_concurrency());
  const std::size_t threads = std::min<std::size_t>(jobs, n);
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t)
    pool.emplace_back(work);
  work();
  for (std::thread& t : pool)
    t.join();
  return results;
}

std::string human_report(const Manifest& manifest, const std::vector<GoldenResult>& results,
                         bool updated) {
  std::string out;
  for (std::size_t i = 0; i < results.size(); ++i) {
    const GoldenEntry& e = manifest.entries[i];
    const GoldenResult& r = results[i];
    out += escaped_for_message(e.golden) + ": " + status_name(r, updated) + "\n";
    if (r.status == GoldenResult::Status::Mismatch)
      out += "\n" + mismatch_text(e, r) + "\n";
  }
  return out + "check " + escaped_for_message(manifest.path) + ": " + summary(results, updated) +
         "\n";
}

std::string json_report(const Manifest& manifest, const std::vector<GoldenResult>& results,
                        bool updated) {
  std::size_t counts[4] = {0, 0, 0, 0}; // by Status
  std::string out = "{\"manifest\": " + json_string(manifest.path) +
                    ", \"updated\": " + (updated ? "true" : "false") + ", \"goldens\": [";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const GoldenEntry& e = manifest.entries[i];
    const GoldenResult& r = results[i];
    ++counts[static_cast<int>(r.status)];
    out += std::string(i == 0 ? "\n" : ",\n") + "  {\"golden\": " + json_string(e.golden) +
           ", \"where\": " + json_string(e.where) + ", \"build\": " + json_string(r.build) +
           ", \"status\": \"" + status_name(r, updated) + "\"";
    if (r.status == GoldenResult::Status::Mismatch) {
      out += ", \"differences\": [";
      bool first = true;
      for (const Difference& d : r.differences)
        for (const Detail& det : d.details) {
          out += std::string(first ? "" : ", ") + "{\"path\": " + json_string(d.path()) +
                 ", \"change\": \"" + change_name(det.kind) + "\"}";
          first = false;
        }
      out += "], \"text_only\": " + std::string(r.differences.empty() ? "true" : "false");
    }
    out += "}";
  }
  out += "\n], \"summary\": {\"goldens\": " + std::to_string(results.size()) +
         ", \"match\": " + std::to_string(counts[0]) + ", \"" + (updated ? "updated" : "mismatch") +
         "\": " + std::to_string(counts[1]) + ", \"" + (updated ? "created" : "missing") +
         "\": " + std::to_string(counts[2]) + "}}\n";
  return out;
}

std::string junit_report(const Manifest& manifest, const std::vector<GoldenResult>& results,
                         bool updated) {
  std::size_t failures = 0;
  if (!updated)
    for (const GoldenResult& r : results)
      failures += r.status != GoldenResult::Status::Match;
  const std::string counts = " tests=\"" + std::to_string(results.size()) + "\" failures=\"" +
                             std::to_string(failures) + "\" errors=\"0\"";
  const std::string suite = xml_escape(manifest.path);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"qwen-recipe "
                    "check\"" +
                    counts + ">\n  <testsuite name=\"" + suite + "\"" + counts +
                    " skipped=\"0\">\n";
  for (std::size_t i = 0; i < results.size(); ++i) {
    const GoldenEntry& e = manifest.entries[i];
    const GoldenResult& r = results[i];
    out += "    <testcase classname=\"" + suite + "\" name=\"" + xml_escape(e.golden) + "\"";
    if (r.status == GoldenResult::Status::Match) {
      out += "/>\n";
      continue;
    }
    out += ">\n";
    const std::string what = r.status == GoldenResult::Status::Missing
                                 ? "no golden file"
                                 : (r.differences.empty() ? std::string("the text differs")
                                                          : count_of(r.differences.size(),
                                                                     "difference", "differences")) +
                                       " from " + r.build;
    if (updated)
      out += "      <system-out>" + std::string(status_name(r, updated)) + ": " + xml_escape(what) +
             "</system-out>\n";
    else
      out += "      <failure type=\"" + std::string(status_name(r, updated)) + "\" message=\"" +
             xml_escape(what) + "\">" +
             xml_escape(r.status == GoldenResult::Status::Missing ? e.golden_path + ": no such file"
                                                                  : mismatch_text(e, r)) +
             "</failure>\n";
    out += "    </testcase>\n";
  }
  return out + "  </testsuite>\n</testsuites>\n";
}

std::string xml_escape(std::string_view text) {
  std::u32string cps = to_u32(text); // invalid UTF-8 becomes U+FFFD
  std::string out;
  for (char32_t& cp : cps) {
    const bool allowed = cp == 0x9 || cp == 0xA || cp == 0xD || (cp >= 0x20 && cp <= 0xD7FF) ||
                         (cp >= 0xE000 && cp <= 0xFFFD) || (cp >= 0x10000 && cp <= 0x10FFFF);
    if (!allowed)
      cp = 0xFFFD;
    switch (cp) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    case '\n':
      out += "&#10;"; // kept in attribute values too
      break;
    case '\r':
      out += "&#13;";
      break;
    case '\t':
      out += "&#9;";
      break;
    default:
      append_utf8(out, std::u32string_view(&cp, 1));
    }
  }
  return out;
}

} // namespace qr
