// Recognizers for YAML scalar text, hand-written: std::regex is far too slow on the hot path of
// typing and emitting, and libstdc++'s recurses once per character, so a long scalar overflows
// the stack.
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
// `[A-Za-z_][A-Za-z0-9_]*`: a Python or shell identifier.
bool is_identifier(std::string_view s);
// YAML 1.1 ints in other bases: `[-+]?0b[0-1_]+`, `[-+]?0[0-7_]+`, `[-+]?0x[0-9a-fA-F_]+`.
bool is_other_base_int(std::string_view s);
// Sexagesimal numbers: `[-+]?[1-9][0-9_]*(:[0-5]?[0-9])+` (int) and
// `[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*` (float).
bool is_sexagesimal(std::string_view s);
// YAML 1.1 timestamps: `2002-12-14`, `2001-12-14t21:59:43.10-05:00`, `2001-12-14 21:59:43.10 Z`.
bool is_timestamp(std::string_view s);

} // namespace qr
