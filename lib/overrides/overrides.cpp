#include "overrides/overrides.h"

#include "support/error.h"
#include "support/script_text.h"
#include "yaml/yaml_write.h"

namespace qr {
namespace {

std::string quoted(std::string_view token) {
  return "override '" + escaped_for_message(token) + "'";
}

// Types the override's value for the field it lands in.
Value typed_value(const Config& config, const Override& o, const Type& type) {
  // `key=` is the empty string, as in Hydra.
  if (o.value.empty()) {
    if (type.find(Type::Kind::Str) != nullptr || type.kind == Type::Kind::Any)
      return std::string{};
    throw Error(quoted(o.token) + ": '" + o.key + "' is " + type.text +
                ", not a string; give a value (or null)");
  }
  return config.schema().parse_value(o.value, type, o.key, config.profile(), quoted(o.token));
}

} // namespace

Override parse_override(std::string_view token) {
  Override o;
  o.token = std::string(token);
  std::string_view rest = token;
  if (rest.starts_with("++")) {
    o.op = Override::Op::Upsert;
    rest.remove_prefix(2);
  } else if (rest.starts_with("+")) {
    o.op = Override::Op::Add;
    rest.remove_prefix(1);
  } else if (rest.starts_with("~")) {
    o.op = Override::Op::Delete;
    rest.remove_prefix(1);
  }
  const std::size_t eq = rest.find('=');
  o.key = std::string(rest.substr(0, eq));
  if (eq != std::string_view::npos) {
    o.has_value = true;
    o.value = std::string(rest.substr(eq + 1));
  }
  if (o.key.empty())
    throw Error(quoted(token) + ": no key before '='; overrides look like key.path=value");
  try {
    (void)split_path(o.key); // names empty segments precisely
  } catch (const Error& e) {
    throw Error(quoted(token) + ": " + e.what());
  }
  if (o.key.find_first_not_of(
          "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.") != std::string::npos)
    throw Error(quoted(token) + ": bad key '" + escaped_for_message(o.key) +
                "'; keys are dotted names of letters, digits, '_' and '-'");
  if (o.op != Override::Op::Delete && !o.has_value)
    throw Error(quoted(token) + ": missing '=value'; write " + o.key + "=VALUE (or ~" + o.key +
                " to delete it)");
  // Hydra reads `a=1,2` as a sweep; a single run takes one value.
  if (o.has_value && !o.value.empty() && o.value.front() != '[' && o.value.front() != '{' &&
      o.value.front() != '\'' && o.value.front() != '"' && o.value.find(',') != std::string::npos)
    throw Error(quoted(token) + ": a comma outside brackets is a Hydra sweep (give --multirun " +
                "--out-dir DIR to sweep); for a list write " + o.key + "=[" + o.value +
                "], for text with a comma quote it: " + o.key + "='" + o.value + "'");
  return o;
}

std::string to_token(const Override& o) {
  std::string prefix;
  switch (o.op) {
  case Override::Op::Set:
    break;
  case Override::Op::Add:
    prefix = "+";
    break;
  case Override::Op::Upsert:
    prefix = "++";
    break;
  case Override::Op::Delete:
    prefix = "~";
    break;
  }
  return prefix + o.key + (o.has_value ? "=" + o.value : "");
}

namespace {

void apply_here(Config& config, const Override& o) {
  std::string why;
  const auto ref = config.resolve(o.key, &why);
  if (!ref) {
    const char* verb = o.op == Override::Op::Delete ? "delete"
                       : o.op == Override::Op::Set  ? "override"
                                                    : "add";
    // `+` cannot add a field a dataclass lacks: Megatron-Bridge could not load the YAML.
    throw Error(std::string("could not ") + verb + " '" + o.key + "': " + why);
  }
  const Value* current = config.find(o.key);
  switch (o.op) {
  case Override::Op::Set:
    if (current == nullptr)
      throw Error("could not override '" + o.key + "': the key is not in the config" +
                  (ref->in_open_map
                       ? "; to add it use +" + o.key + "=" + o.value
                       : "; to restore a deleted field use ++" + o.key + "=" + o.value));
    config.set(o.key, typed_value(config, o, *ref->type));
    return;
  case Override::Op::Add:
    if (current != nullptr)
      throw Error("could not add '" + o.key + "': it already exists (value " + brief(*current) +
                  "); to change it use " + o.key + "=" + o.value + " or ++" + o.key + "=" +
                  o.value);
    config.set(o.key, typed_value(config, o, *ref->type));
    return;
  case Override::Op::Upsert:
    config.set(o.key, typed_value(config, o, *ref->type));
    return;
  case Override::Op::Delete:
    if (current == nullptr)
      throw Error("could not delete '" + o.key + "': it is not in the config");
    if (o.has_value) {
      const Value expected = typed_value(config, o, *ref->type);
      if (!(expected == *current))
        throw Error("could not delete '" + o.key + "': its value is " + brief(*current) + ", not " +
                    brief(expected));
    }
    config.erase(o.key);
    return;
  }
}

} // namespace

void apply_override(Config& config, const Override& o) {
  if (o.origin.empty())
    return apply_here(config, o);
  try {
    apply_here(config, o);
  } catch (const Error& e) {
    throw Error(o.origin + ": " + e.what());
  }
}

} // namespace qr
