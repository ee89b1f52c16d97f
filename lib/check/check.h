// `qwen-recipe check MANIFEST`: golden files for users' configs. A manifest lists recipe builds
// and the YAML each must produce; every entry is built (with the start-up checks) and compared
// with its golden byte for byte. The format and the reports are documented in docs/check.md.
#pragma once

#include "build/build.h"
#include "diff/diff.h"

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

namespace qr {

struct GoldenEntry {
  std::string where;       // "manifest.yaml:3:5", the entry's first key, for messages
  std::string golden;      // the golden's path as the manifest writes it: how reports name it
  std::string golden_path; // resolved against the manifest's directory
  std::vector<std::string> recipes_dirs; // resolved, in order; empty: the caller's recipes
  BuildRequest request;                  // base_file resolved like golden_path
};

struct Manifest {
  std::string path;
  std::vector<GoldenEntry> entries;
};

// Throws qr::Error naming manifest:line:col for anything it does not accept (unknown keys with a
// "did you mean", wrong types, an entry with both or neither of spec and base, a golden twice).
Manifest read_manifest(const std::string& path);

struct GoldenResult {
  enum class Status { Match, Mismatch, Missing, Error };
  Status status = Status::Error;
  std::string build;  // the build command that reproduces the entry (from the YAML header)
  std::string actual; // the built YAML (all but Error)
  // Mismatch: golden -> built. Empty when the two texts differ but not as values (comments,
  // layout) or the golden is not YAML; then `text_diff` holds a unified diff of the texts.
  std::vector<Difference> differences;
  std::string text_diff;
  std::string error; // Error: one line, "manifest:line:col: golden: message"
};

// Builds and compares every entry, `jobs` at a time (0: one per hardware thread); results in the
// manifest's order whatever the threads' timing. Entries without a recipes_dir use `data`.
std::vector<GoldenResult> check_goldens(const Manifest& manifest, const DataSources& data,
                                        unsigned jobs = 0);

// Reports over results without errors; `updated`: the mismatched and missing goldens were
// rewritten (--update). Human: one line per golden, the diff of each mismatch, a summary line.
std::string human_report(const Manifest& manifest, const std::vector<GoldenResult>& results,
                         bool updated);
std::string json_report(const Manifest& manifest, const std::vector<GoldenResult>& results,
                        bool updated);
// JUnit XML: one testsuite, one testcase per entry, a <failure> per mismatch.
std::string junit_report(const Manifest& manifest, const std::vector<GoldenResult>& results,
                         bool updated);

// Text made safe for XML 1.0 character data and attribute values: markup characters as
// entities, characters XML cannot carry (most C0 controls, invalid UTF-8) as U+FFFD.
std::string xml_escape(std::string_view text);

} // namespace qr
