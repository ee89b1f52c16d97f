// What gdn-bench's GDN and conv runs share (gdn_bench.cu, conv_bench.cu) that needs CUDA: a
// mode's passes captured into a CUDA graph for replay timing. The rest is in bench_report.h.
#pragma once

#include "bench_report.h"
#include "common.cuh"
#include "harness.h"

#include <cmath>
#include <map>
#include <string>
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

// A device tensor for the driver: its name, buffer, element type ("bf16", "f32") and shape.
struct DeviceTensor {
  const char* name;
  const DeviceBuffer* buf;
  const char* dtype;
  std::vector<int64_t> shape;
};

// The tensors exactly as the device holds them, copied to the host and written as the tensor files
// STEM.json / STEM.bin (peers::write_tensors, with `extra` members).
inline std::string write_device_tensors(const std::string& stem, const peers::ShapeInfo& shape,
                                        const std::vector<DeviceTensor>& items,
                                        const std::string& extra) {
  std::vector<peers::HostTensor> tensors;
  for (const DeviceTensor& it : items) {
    peers::HostTensor t{it.name, it.dtype, it.shape, std::vector<uint8_t>(it.buf->bytes())};
    QR_CUDA_TRY(cudaMemcpy(t.bytes.data(), it.buf->get(), t.bytes.size(), cudaMemcpyDeviceToHost));
    tensors.push_back(std::move(t));
  }
  return peers::write_tensors(stem, shape, tensors, extra);
}

// A peer's outputs and gradients (`got`; `read_error` when they could not be read) against the
// reference's (`ref`): each of `need` must be there, each the reference has must match it in size
// and within `tol`. Every check goes through record(output, error, pass), the worst relative L2
// error into `res`. Returns whether all passed.
template <class Record>
bool check_peer_outputs(const std::string& read_error,
                        const std::map<std::string, std::vector<double>>& got,
                        const std::vector<std::string>& need,
                        const std::map<std::string, std::vector<double>>& ref, double tol,
                        BenchResult& res, Record record) {
  bool pass = read_error.empty();
  if (!read_error.empty())
    record(read_error, Error{}, false);
  for (const std::string& n : need)
    if (read_error.empty() && !got.count(n)) {
      record(n + " (missing)", Error{}, false);
      pass = false;
    }
  for (const auto& [name, data] : got) {
    auto it = ref.find(name);
    if (it == ref.end())
      continue;
    Error er;
    if (data.size() != it->second.size()) {
      er.rel_l2 = er.max_abs = NAN;
      record(name + " (wrong size)", er, false);
      pass = false;
      continue;
    }
    er = compare(data, it->second);
    const bool ok = er.ok(tol);
    record(name, er, ok);
    pass = pass && ok;
    if (er.rel_l2 > res.worst_rel_l2) {
      res.worst_rel_l2 = er.rel_l2;
      res.worst_output = name;
    }
  }
  return pass;
}

} // namespace qr::gdn
