// Reads the results.json that shared/tools/gdn_fla_bench.py writes (--out DIR), so that gdn-bench
// --compare-fla can print FLA's times beside ours. Plain C++ (no CUDA), tested on the CPU.
#pragma once

#include <string>
#include <vector>

namespace qr::gdn {

struct FlaTiming {
  std::string name; // FLA's shape name, e.g. "S35gva"
  int batch, seq_len, key_heads, value_heads, head_dim;
  double fwd_ms = -1, fwdbwd_ms = -1; // CUDA-graph medians (eager medians when no graph ran)
  bool graph = false;                 // whether the times are graph replays
};

struct FlaResults {
  std::vector<FlaTiming> shapes;
  std::string env; // one line: device, torch, triton, fla versions
  // The entry for a shape, or nullptr.
  const FlaTiming* find(int b, int t, int hk, int hv, int d) const;
};

// Parses the JSON text; returns an error text, empty on success.
std::string parse_fla_results(const std::string& json, FlaResults& out);
std::string read_fla_results(const std::string& path, FlaResults& out);

} // namespace qr::gdn
