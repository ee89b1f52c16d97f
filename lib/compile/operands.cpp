#include "compile/operands.h"

#include "support/error.h"
#include "support/input.h"
#include "support/script_text.h"

#include <filesystem>
#include <regex>

namespace qr {

bool is_recipe_spec(std::string_view operand) {
  static const std::regex re("[A-Za-z0-9_]+@[A-Za-z0-9_]+(:[A-Za-z0-9_]+)?");
  std::error_code ec;
  return std::regex_match(operand.begin(), operand.end(), re) &&
         !std::filesystem::exists(std::filesystem::path(operand), ec);
}

std::string read_operand_text(const std::string& operand) {
  if (operand == "-")
    return read_standard_input();
  std::error_code ec;
  if (!std::filesystem::exists(operand, ec))
    throw Error(escaped_for_message(operand) +
                ": no such file (operands are YAML files, '-' for standard input, or recipe specs "
                "such as qwen35_35b@gb300:fp8mx)");
  return read_input_file(operand);
}

std::string operand_label(const std::string& operand) {
  return operand == "-" ? "<stdin>" : escaped_for_message(operand);
}
} // namespace qr
