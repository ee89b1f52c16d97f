// The generated reference pages in docs/ match the registries.
#include "compile/docs.h"
#include "helpers.h"

#include <filesystem>
#include <fstream>
#include <sstream>

namespace {

std::string read_doc(const std::string& name) {
  std::ifstream in(std::filesystem::path(QR_SOURCE_DIR) / "docs" / name, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

} // namespace

TEST_CASE("docs/passes.md is current (regenerate: qwen-recipe list passes --markdown)") {
  CHECK(qr::passes_markdown() == read_doc("passes.md"));
}

TEST_CASE("docs/recipes.md is current (regenerate: qwen-recipe list recipes --markdown)") {
  CHECK(qr::recipes_markdown(qr::test::compiler().catalog()) == read_doc("recipes.md"));
}
