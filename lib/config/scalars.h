// Fast recognizers for YAML scalar text (the hot path of typing and emitting; std::regex is far
// too slow there). Rare forms (sexagesimal, timestamps) fall back to regexes at the call sites.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace qr {

// `[-+]?(0|[1-9][0-9_]*)`: a YAML 1.1 decimal int, underscores allowed.
std::optional<std::int64_t> parse_decimal_int(std::string_view s);
// The text of a decimal int, whether or not it fits in 64 bits.
bool is_decimal_int_text(std::string_view s);
// A float as OmegaConf reads one: `[-+]?digits[.digits][e[-+]digits]`, `.5`, `.inf`, `.nan`
// (also `inf`, `nan`); underscores allowed between digits. Ints are floats too.
std::optional<double> parse_float_text(std::string_view s);
// PyYAML's own float pattern, which needs a '.' and a signed exponent (`1.0e-05`, not `1e-5`).
bool is_pyyaml_float(std::string_view s);

} // namespace qr
