// Determinism in-process: with the C and C++ global locales set to a decimal-comma locale, every
// recipe (both Megatron-Core profiles) emits the same bytes as under "C". The CLI-level twin,
// test/cli/determinism.py, varies the whole environment of the process.
#include "helpers.h"

#include <clocale>
#include <cstring>
#include <locale>

using namespace qr;

namespace {

// A locale whose decimal point is ',' (scripts/setup generates de_DE.UTF-8), or null.
const char* decimal_comma_locale() {
  for (const char* name : {"de_DE.UTF-8", "de_DE.utf8", "fr_FR.UTF-8", "fr_FR.utf8"})
    if (std::setlocale(LC_ALL, name) != nullptr &&
        std::strcmp(std::localeconv()->decimal_point, ",") == 0)
      return name;
  return nullptr;
}

std::vector<std::string> emit_every_recipe() {
  std::vector<std::string> out;
  for (const RecipeSpec& s : qr::test::compiler().catalog().all())
    for (const char* profile : {"pinned", "gdn"})
      out.push_back(
          emit_config(qr::test::build(s.model->name, s.gpu->name, s.precision, {}, profile)));
  return out;
}

} // namespace

TEST_CASE("every recipe emits the same bytes under a decimal-comma locale") {
  const char* name = decimal_comma_locale();
  std::setlocale(LC_ALL, "C");
  if (name == nullptr)
    FAIL("no decimal-comma locale installed; scripts/setup generates de_DE.UTF-8");
  const std::vector<std::string> plain = emit_every_recipe();
  std::setlocale(LC_ALL, name);
  std::locale::global(std::locale(name));
  const std::vector<std::string> comma = emit_every_recipe();
  std::setlocale(LC_ALL, "C");
  std::locale::global(std::locale::classic());
  REQUIRE(plain.size() == comma.size());
  for (std::size_t i = 0; i < plain.size(); ++i)
    REQUIRE(plain[i] == comma[i]);
}
