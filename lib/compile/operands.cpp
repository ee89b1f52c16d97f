#include "compile/operands.h"

#include "support/error.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <regex>
#include <sstream>

namespace qr {

bool is_recipe_spec(std::string_view operand) {
  static const std::regex re("[A-Za-z0-9_]+@[A-Za-z0-9_]+(:[A-Za-z0-9_]+)?");
  std::error_code ec;
  return std::regex_match(operand.begin(), operand.end(), re) &&
         !std::filesystem::exists(std::filesystem::path(operand), ec);
}

std::string read_operand_text(const std::string& operand) {
  if (operand == "-") {
    std::ostringstream ss;
    ss << std::cin.rdbuf();
    if (std::cin.bad())
      throw Error("<stdin>: read error");
    return ss.str();
  }
  std::error_code ec;
  if (!std::filesystem::exists(operand, ec))
    throw Error(operand + ": no such file (operands are YAML files, '-' for standard input, or "
                          "recipe specs such as qwen35_35b@gb300:fp8mx)");
  if (std::filesystem::is_directory(operand, ec))
    throw Error(operand + ": is a directory, expected a YAML file");
  std::ifstream in(operand, std::ios::binary);
  if (!in)
    throw Error(operand + ": cannot read: " + std::strerror(errno));
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string operand_label(const std::string& operand) {
  return operand == "-" ? "<stdin>" : operand;
}

} // namespace qr
