// YAML output that matches PyYAML's `safe_dump(default_flow_style=False)`, the call behind
// Megatron-Bridge's `ConfigContainer.to_yaml()`: block style, indent 2, keys sorted, floats as
// Python's repr, strings quoted only where a YAML 1.1 reader (PyYAML) or OmegaConf would read
// them as something else, long scalars folded at column 80.
#pragma once

#include "yaml/value.h"

#include <string>

namespace qr {

// The whole document, ending in a newline.
std::string to_yaml(const Value& root);

// One line of flow-style YAML (`[a, b]`, `{k: v}`), for messages and Hydra override values.
// `separator` goes between items: ", " by default, "," for the compact pipeline text.
std::string to_flow_yaml(const Value& v, std::string_view separator = ", ");

// Python's `repr(float)` as PyYAML writes it (`1.0e-05`, `10000000.0`, `.inf`).
std::string format_float(double d);

// True when a plain scalar with this text would not read back as this string, under PyYAML's
// YAML 1.1 resolvers or OmegaConf's float resolver (`yes`, `1_0`, `1e-5`, `null`, `''` ...).
bool plain_text_is_ambiguous(const std::string& text);

} // namespace qr
