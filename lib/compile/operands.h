// Configs named on the command line (diff, validate): a YAML file, `-` for standard input, or
// a recipe spec MODEL@GPU[:PRECISION] that is built on the spot.
#pragma once

#include <string>
#include <string_view>

namespace qr {

// True for MODEL@GPU[:PRECISION] text that is not also the name of an existing file.
bool is_recipe_spec(std::string_view operand);

// The text of a YAML file, or of standard input for "-"; throws qr::Error naming the file.
std::string read_operand_text(const std::string& operand);

// "<stdin>" for "-", else the operand itself: how messages name it.
std::string operand_label(const std::string& operand);

} // namespace qr
