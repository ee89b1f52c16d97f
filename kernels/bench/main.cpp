// Standalone gdn-bench: bench_main without the recipe compiler (use --shape, or the defaults).
#include "gdn_bench.h"

#include <iostream>

int main(int argc, char** argv) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  auto no_recipes = [](const std::string&, qr::gdn::RecipeShape&, std::string& error) {
    error = "--recipe needs the full qwen-recipe build; use --shape";
    return false;
  };
  return qr::gdn::bench_main(args, no_recipes, std::cout, std::cerr);
}
