// Start-up checks of a finished config: the parallelism arithmetic that Megatron-Core and
// Megatron-Bridge would otherwise refuse at initialization (on hundreds of GPUs, minutes into a
// job), and the cuDNN GDN package checks of the GDN branch. Checks only read the config; the
// rules and where each comes from are in docs/validate.md.
#pragma once

#include "config/config.h"
#include "passes/pipeline.h"
#include "yaml/yaml_read.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct CheckInfo {
  std::string name;
  std::string summary;
  std::string source; // the upstream check it mirrors
};

// Every check, in the order they run.
const std::vector<CheckInfo>& check_registry();
const CheckInfo* find_check(std::string_view name);

// Installed Python distributions by normalized name (PEP 503: lower case, runs of `-_.` as
// `-`), as `pip freeze` prints them or as a YAML mapping of package -> version. A version is
// empty when the distribution is installed from a URL (`name @ file:///...`).
struct PackageEnv {
  std::string source;
  std::map<std::string, std::string, std::less<>> versions;

  [[nodiscard]] const std::string* version(std::string_view name) const;
};

// Throws qr::Error naming the source and line of anything that is neither.
PackageEnv parse_package_env(std::string_view text, const std::string& source);
PackageEnv read_package_env(const std::string& path);

// A Python-style release tuple: the leading integers of the first three dot components, local
// label dropped, zero-padded ("4.6" -> 4.6.0, "1.29.0rc1" -> 1.29.0); empty when nothing parses.
std::vector<int> release_tuple(std::string_view version);

struct Finding {
  enum class Level { Error, Warning, Skipped };
  Level level = Level::Error;
  std::string check;
  std::string message;
};

// An upstream advisory (recipes/advisories.yaml): a change Megatron-Bridge made to its recipes
// after the pin, for a correctness reason, that a released package carries. It applies to a config
// in which any field of `when` is true.
struct Advisory {
  std::string id, upstream, summary, fix;
  std::vector<std::string> when;
};

// Throws qr::Error naming the file and entry for anything that is not a list of advisories.
std::vector<Advisory> parse_advisories(const YamlDoc& doc);
// `list advisories`: one block per advisory, or {"advisories": [...]}.
std::string advisories_text(const std::vector<Advisory>& advisories);
std::string advisories_json(const std::vector<Advisory>& advisories);

struct ValidateOptions {
  std::optional<std::int64_t> world_size; // absent: the checks that need it are skipped
  std::optional<PackageEnv> env;          // absent: the package checks are skipped
  // A recipe's waivers: a failing check (or invariant) it names becomes a warning that gives the
  // reason.
  Waivers waivers;
  // Also run every invariant (lib/passes/invariants), as a build checks them after its last
  // step. Off for a build's own validation: its pipeline has just checked them.
  bool invariants = true;
  bool strict = false;              // warnings are errors
  std::vector<Advisory> advisories; // each that applies is a warning
};

struct ValidationReport {
  std::vector<Finding> findings;
  int checks = 0;     // checks that applied to this config
  std::string layout; // "world 64 = TP 1 x PP 1 x CP 1 x DP 64; ...", or what is known of it
  std::optional<std::int64_t> world_size;
  std::string world_source; // where world_size came from when not given ("" when given)
  bool strict = false;

  [[nodiscard]] std::size_t count(Finding::Level level) const;
};

ValidationReport validate_config(const Config& config, const ValidateOptions& options);

// Sorts waivers into the invariants and the start-up checks they name, as the catalogue does
// once when it loads; throws qr::Error ("waives unknown invariant or check 'x'", with a "did you
// mean") for a name that is neither.
Waivers classify_waivers(std::vector<Waiver> waivers);

// "error: check 'pipeline-layers' failed: ...", "warning: ...", "skipped: ...".
std::string format_finding(const Finding& f);

// The upstream check a start-up check or invariant mirrors ("Megatron-Core TransformerConfig").
std::string check_source(std::string_view check);

// validate's report of `label` (a file name or recipe spec): the layout, one line per finding, and
// a count that names the skipped checks.
std::string report_text(const ValidationReport& report, const std::string& label);
// The same as one JSON object (the keys are documented in docs/validate.md and stay stable).
std::string report_json(const ValidationReport& report, const std::string& label);

// A config file's text typed by the schema, as `build --base` reads it (missing fields take
// their defaults). With no profile, the first Megatron-Core profile that can type it (the
// default first), so a YAML built with `--mcore gdn` validates without saying so again. The
// Config refers to `schema`, which must outlive it.
Config load_config_text(const Schema& schema, std::string_view text, const std::string& source,
                        const std::string& profile);

} // namespace qr
