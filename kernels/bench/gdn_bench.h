// gdn-bench: checks every GDN backend (ours, and the Python peers through
// kernels/bench/peers/gdn_peers.py on the same input tensors) against `reference`, times it
// (CUDA-graph replays; eager runs with the L2 flushed), measures its memory and prints the tables
// and a recommendation (docs/gdn/bench.md); `--op conv` does the same for the short convolution.
// One runner (bench_runner.cuh) serves both ops. Used by the standalone `gdn-bench` executable and
// by `qwen-recipe gdn-bench`.
#pragma once

#include "bench_options.h"

#include <ostream>
#include <string>
#include <vector>

namespace qr::gdn {

// Parses args (without the program name) and runs the bench. Returns the process exit code
// (0 ok, 2 bad arguments or one of our backends failed its check, 77 no CUDA device). Table on
// `out`, progress/errors on `err`.
int bench_main(const std::vector<std::string>& args, const RecipeShapeResolver& resolver,
               std::ostream& out, std::ostream& err);

} // namespace qr::gdn
