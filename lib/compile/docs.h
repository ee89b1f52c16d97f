// Reference text generated from the registries, so that docs/passes.md and docs/recipes.md never
// drift from the code (a test compares them).
#pragma once

#include "recipes/catalog.h"

#include <string>

namespace qr {

std::string passes_markdown();
std::string recipes_markdown(const Catalog& catalog);

// Plain-text tables for `qwen-recipe list`.
std::string passes_table();
std::string recipes_table(const Catalog& catalog);
std::string invariants_table();

} // namespace qr
