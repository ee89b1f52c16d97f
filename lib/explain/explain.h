// Where a built config's values come from: the model's base config, then every pass or override
// that wrote them, in order, read from the config's write log.
#pragma once

#include "build/build.h"
#include "diff/diff.h"

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct FieldStep {
  std::string who;             // "pass 'qwen35-vl-post' (position 8)", "override 'a.b=1'"
  std::string via;             // the section it replaced whole, when not the field itself
  std::optional<Value> before; // absent: the field did not exist
  std::optional<Value> after;
};

struct FieldHistory {
  std::string path;
  std::optional<Value> base, final; // absent: not in that config
  std::string base_origin;          // "schema default" or the model's base layers
  std::vector<FieldStep> steps;
};

// "pass 'x' (position N)" or "override 'TOKEN'" for one write of a build.
std::string step_label(const BuildResult& result, const Write& write);

// The last step that wrote `path`, a section above it or a key below it; empty when none did
// (the value is the base config's).
std::string last_writer(const BuildResult& result, std::string_view path);

// Leaves by dotted path: scalars, lists, empty maps and enum/dtype/callable maps.
std::map<std::string, Value> leaves(const Value& root);

// The history of each named field (a section names every field under it that changed), or of
// every field whose final value differs from the base config when none is named. Throws
// qr::Error with a "did you mean" for a name that is no field. Needs a recipe build.
std::vector<FieldHistory> explain_fields(const Compiler& compiler, const BuildResult& result,
                                         const std::vector<std::string>& fields);

// `explain --format json`: {"recipe", "profile", "fields": [...]}, one field a line; a value that
// is absent from its config (FieldHistory's empty optionals) has no key. Schema: docs/explain.md.
std::string explain_json(const BuildResult& result, const std::vector<FieldHistory>& histories);

// Section defaults for dotlist(): the schema's instance of each class in `profile`, read back
// as PyYAML reads its YAML (as diff compares configs).
SectionDefaults section_defaults(const Schema& schema, std::string profile);

} // namespace qr
