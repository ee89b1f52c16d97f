// gdn-bench: checks every GDN backend (ours, and the Python peers through
// kernels/bench/peers/gdn_peers.py on the same input tensors) against `reference`, times it
// (CUDA-graph replays; eager runs with the L2 flushed), measures its memory and prints the tables
// and a recommendation (docs/gdn-bench.md). Used by the standalone `gdn-bench` executable and by
// `qwen-recipe gdn-bench`.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <vector>

namespace qr::gdn {

struct RecipeShape {
  int batch, seq_len, key_heads, value_heads, head_dim;
};

// Resolves a recipe name (e.g. "qwen35_397b") to its GDN shape; returns false and sets `error`
// when unknown.
using RecipeShapeResolver =
    std::function<bool(const std::string& recipe, RecipeShape& out, std::string& error)>;

// Parses args (without the program name) and runs the bench. Returns the process exit code
// (0 ok, 2 bad arguments or one of our backends failed its check, 77 no CUDA device). Table on
// `out`, progress/errors on `err`.
int bench_main(const std::vector<std::string>& args, const RecipeShapeResolver& resolver,
               std::ostream& out, std::ostream& err);

} // namespace qr::gdn
