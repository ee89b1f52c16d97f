// What gdn-bench's GDN and conv runs share (gdn_bench.cu, conv_bench.cu) that needs CUDA: a
// mode's passes captured into a CUDA graph for replay timing. The rest is in bench_report.h.
#pragma once

#include "bench_report.h"
#include "common.cuh"

#include <string>

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

} // namespace qr::gdn
