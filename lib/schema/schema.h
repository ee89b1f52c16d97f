// The schema: every ConfigContainer section and field, with its type, default, allowed values,
// `_target_` class path and the Megatron-Core profiles it exists in. Kept as data under
// recipes/schema/ and loaded at start-up.
//
// Typing is by schema, never by how a token looks: `1e-8` is a float where the field is a float,
// `yes` is the string "yes" where the field is a string.
#pragma once

#include "data/data_source.h"
#include "yaml/value.h"
#include "yaml/yaml_read.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct Type;
using TypePtr = std::shared_ptr<const Type>;

struct Type {
  enum class Kind {
    Any,
    Null,
    Bool,
    Int,
    Float,
    Str,
    Literal,
    List,
    Map,
    Enum,
    Dtype,
    Callable,
    Section,
    Union
  };
  Kind kind = Kind::Any;
  std::vector<std::string> choices; // Str: the allowed values, empty when any string goes
  std::string name;                 // Literal text, Enum name or Section class name
  TypePtr elem;                     // List and Map element type
  std::vector<TypePtr> alts;        // Union alternatives
  std::string text;                 // as written, for messages

  [[nodiscard]] bool accepts_null() const;
  // The alternative of kind `k` (this type itself or one union member), if any.
  [[nodiscard]] const Type* find(Kind k) const;
};

// Parses the schema's type notation: `int?`, `str{none|local}`, `list<enum<CudaGraphModule>> |
// 'full' | null`, `map<int | str>`, `section<CheckpointConfig>`.
TypePtr parse_type(std::string_view text);

struct ClassSpec;

struct FieldSpec {
  std::string name;
  TypePtr type;
  Value default_value;
  bool has_default = true;
  std::vector<std::string> profiles; // empty: every profile
  const ClassSpec* owner = nullptr;

  [[nodiscard]] bool in_profile(std::string_view profile) const;
};

struct ClassSpec {
  std::string name;   // short name used in types, e.g. "TrainingConfig"
  std::string target; // Python class path written as `_target_`
  bool abstract = false;
  const ClassSpec* base = nullptr;
  std::string file; // schema file it came from
  std::map<std::string, FieldSpec, std::less<>> own_fields;

  [[nodiscard]] bool is_a(const ClassSpec& other) const;
  // The field as seen from this class (own declaration first, then base classes).
  [[nodiscard]] const FieldSpec* field(std::string_view name) const;
  // Every field name, own and inherited, sorted.
  [[nodiscard]] std::vector<const FieldSpec*> all_fields() const;
};

struct EnumSpec {
  std::string name;
  std::string target;
  std::vector<std::pair<std::string, std::int64_t>> members;
};

struct ProfileSpec {
  std::string name;
  std::string summary;
};

// Where a value being typed sits, for error messages: `<file:line:col>: 'model.x': ...`.
struct TypingContext {
  const YamlDoc* doc = nullptr;
  std::string profile;
  bool fill_defaults = true; // sections: missing fields take their class defaults
  // A plain int in a float field stays an int, as when Python builds a dataclass from YAML (and
  // Megatron-Bridge then writes it back as an int). Overrides go through OmegaConf: floats.
  bool ints_stay_ints = false;
};

class Schema {
public:
  static std::shared_ptr<const Schema> load(const DataSource& data);

  [[nodiscard]] const ClassSpec& root() const { return *root_; }
  [[nodiscard]] const ClassSpec* class_named(std::string_view name) const;
  [[nodiscard]] const ClassSpec* class_by_target(std::string_view target) const;
  [[nodiscard]] const EnumSpec* enum_named(std::string_view name) const;
  [[nodiscard]] const std::vector<ProfileSpec>& profiles() const { return profiles_; }
  [[nodiscard]] const std::string& default_profile() const { return default_profile_; }
  [[nodiscard]] const ProfileSpec& profile(std::string_view name) const; // throws on unknown

  // A section with every field at its default (fields of other profiles left out).
  [[nodiscard]] Value instantiate(const ClassSpec& cls, std::string_view profile) const;

  // Types a YAML node. Throws qr::Error naming the location, the dotted path and the token.
  [[nodiscard]] Value coerce(const YamlNode& node, const Type& type, const std::string& path,
                             const TypingContext& ctx) const;
  // Text as an override or a pipeline option gives it (a YAML flow scalar, list or mapping),
  // typed as `type` for the field at `path` in `profile`: the one "text -> typed value" of every
  // such caller. `source` names the text in errors ("override 'a.b=x'"); a value has no
  // line:column of its own. Throws qr::Error.
  [[nodiscard]] Value parse_value(std::string_view text, const Type& type, const std::string& path,
                                  std::string_view profile, const std::string& source) const;
  // Overlays a YAML mapping on an existing section value (recipe layers, `--base` files).
  void overlay(Value& section, const YamlNode& node, const std::string& path,
               const TypingContext& ctx) const;
  // Checks an already-built value; returns an empty string when it fits, else what is wrong.
  [[nodiscard]] std::string check(const Value& v, const Type& type, std::string_view profile) const;

  // Enum and dtype values in their serialized form.
  [[nodiscard]] Value enum_value(std::string_view enum_name, std::string_view member) const;
  [[nodiscard]] static Value dtype_value(std::string_view torch_name);

  // The class of a section value (by its `_target_`), or null.
  [[nodiscard]] const ClassSpec* class_of(const Value& section) const;

  // Fields of `cls` that exist in `profile`, for "did you mean" hints.
  [[nodiscard]] std::vector<std::string> field_names(const ClassSpec& cls,
                                                     std::string_view profile) const;
  // "; it exists with --mcore gdn" when `field` is a field of `cls` in another profile.
  [[nodiscard]] std::string other_profile_hint(const ClassSpec& cls, std::string_view field) const;

private:
  std::vector<std::unique_ptr<ClassSpec>> classes_;
  std::vector<EnumSpec> enums_;
  std::vector<ProfileSpec> profiles_;
  std::string default_profile_;
  const ClassSpec* root_ = nullptr;

  Value coerce_scalar(const YamlNode& node, const Type& type, const std::string& path,
                      const TypingContext& ctx) const;
  Value coerce_section(const YamlNode& node, const ClassSpec& declared, const std::string& path,
                       const TypingContext& ctx) const;
};

// The dotted path of a field inside a section path ("" + "model" -> "model").
std::string join_path(const std::string& parent, std::string_view key);

} // namespace qr
