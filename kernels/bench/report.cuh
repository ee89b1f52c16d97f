// What gdn-bench's GDN and conv runs share (gdn_bench.cu, conv_bench.cu): a mode's passes
// captured into a CUDA graph for replay timing, and the text and JSON of the figures.
#pragma once

#include "common.cuh"
#include "peers.h"

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace qr::gdn {

// One mode's passes captured once into a CUDA graph, replayed for timing.
struct GraphExec {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec)
      cudaGraphExecDestroy(exec);
    if (graph)
      cudaGraphDestroy(graph);
  }
  template <class F>
  std::string capture(cudaStream_t st, F&& enqueue) {
    QR_CUDA_TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    const std::string e = enqueue();
    const cudaError_t end = cudaStreamEndCapture(st, &graph);
    if (!e.empty())
      return e;
    QR_CUDA_TRY(end);
    QR_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    return {};
  }
};

inline peers::Stats stats_of(std::vector<float> ms) {
  peers::Stats s;
  if (ms.empty())
    return s;
  std::sort(ms.begin(), ms.end());
  s.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  s.min = ms.front();
  s.max = ms.back();
  return s;
}

inline void json_stats(std::ostream& j, const peers::Stats& s) {
  if (s.median <= 0) {
    j << "null";
    return;
  }
  j << "{\"median\": " << s.median << ", \"min\": " << s.min << ", \"max\": " << s.max << "}";
}

inline std::string mb(double bytes) {
  if (bytes < 0)
    return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", bytes / 1e6);
  return b;
}

inline std::string ms_text(double ms) {
  if (ms <= 0)
    return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", ms);
  return b;
}

inline std::string ratio_text(double ms, double base) {
  if (ms <= 0 || base <= 0)
    return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", ms / base);
  return b;
}

inline std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
  return s;
}

inline std::string versions_text(const std::vector<std::pair<std::string, std::string>>& v) {
  std::string t;
  for (const auto& [dist, ver] : v)
    t += (t.empty() ? "" : ", ") + dist + " " + ver;
  return t.empty() ? "no versions found" : t;
}

// A peer's training step per kernel (peers::Row::kernel_times): GPU time, share and launches.
inline void print_kernel_times(std::ostream& out, const std::string& title,
                               const std::vector<peers::KernelTime>& times) {
  double total = 0;
  for (const peers::KernelTime& k : times)
    total += k.us;
  out << title << ": " << times.size() << " kernels, " << ms_text(total / 1e3)
      << " ms of GPU time\n";
  char line[64];
  for (const peers::KernelTime& k : times) {
    std::snprintf(line, sizeof line, "  %9.1f us %5.1f%% %5.1f x  ", k.us,
                  total > 0 ? 100 * k.us / total : 0.0, k.calls);
    out << line << one_line(k.name).substr(0, 100) << "\n";
  }
}

inline void json_kernel_times(std::ostream& j, const std::vector<peers::KernelTime>& times) {
  j << "[";
  for (size_t k = 0; k < times.size(); ++k)
    j << (k ? ", " : "") << "{\"name\": " << peers::json_string(times[k].name)
      << ", \"calls\": " << times[k].calls << ", \"us\": " << times[k].us << "}";
  j << "]";
}

} // namespace qr::gdn
