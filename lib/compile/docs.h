// Reference text generated from the registries, so that docs/passes.md and docs/recipes.md never
// drift from the code (a test compares them).
#pragma once

#include "recipes/catalog.h"
#include "schema/schema.h"

#include <string>

namespace qr {

std::string passes_markdown();
std::string recipes_markdown(const Catalog& catalog);

// Plain-text tables for `qwen-recipe list`.
std::string passes_table();
std::string recipes_table(const Catalog& catalog);
std::string invariants_table();

// `qwen-recipe list WHAT --format json`: {"WHAT": [...]}, one element a line, in the order the
// table lists them; the fields of each kind are in docs/recipes.md ("list --format json").
std::string list_json(const std::string& what, const Catalog& catalog, const Schema& schema);

} // namespace qr
