// Hydra-style overrides, as Megatron-Bridge's perf launcher takes them after the recipe:
//   key.path=value   set an existing key (struct mode: the key must exist)
//   +key.path=value  add a key that does not exist
//   ++key.path=value add or set
//   ~key.path        delete (~key.path=value: only if the value matches)
// Values are YAML, typed by the schema of the field they land in.
#pragma once

#include "config/config.h"

#include <string>
#include <string_view>
#include <vector>

namespace qr {

struct Override {
  enum class Op { Set, Add, Upsert, Delete };
  Op op = Op::Set;
  std::string key;
  std::string value; // YAML text; empty with has_value=false for a bare ~key
  bool has_value = false;
  std::string token;  // as given, for messages
  std::string origin; // "file:line:col" of an overrides file's entry; empty from the command line
};

// Parses one token; throws qr::Error naming the token and what is wrong with it.
Override parse_override(std::string_view token);

// Applies overrides in order, each typed and checked against the schema; errors start with the
// override's origin when it has one.
void apply_override(Config& config, const Override& o);

// The canonical token for an override (`a.b=1`, `+c=x`, `~d`).
std::string to_token(const Override& o);

} // namespace qr
