// gdn-bench's side of the Python peers driver (kernels/bench/peers/gdn_peers.py): the tensor files
// that carry the very inputs to the driver and the peers' outputs back, the reader of the
// driver's results (peers.json), and starting a process without a shell. Plain C++ (no CUDA),
// tested on the CPU (test/gdn/test_peers.cpp).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace qr::gdn::peers {

// The tensor files: STEM.json (manifest) and STEM.bin (the raw bytes, back to back); the format
// the driver's read_manifest / write_tensors use.
extern const char* const kTensorsFormat;

struct HostTensor {
  std::string name;
  std::string dtype; // "bf16", "f32" or "i32"
  std::vector<int64_t> shape;
  std::vector<uint8_t> bytes; // little-endian elements, dense row-major
};

struct ShapeInfo {
  std::string name; // the recipe or "custom"
  int batch = 0, seq_len = 0, key_heads = 0, value_heads = 0, head_dim = 0;
  int sequences = 0; // N > 0: N packed sequences in one batch row (the shape's "N"); 0: dense
};

// One tensor of a manifest: its name, element type and dimensions.
struct TensorLayout {
  std::string name, dtype;
  std::vector<int64_t> shape;
};

// The tensors of a GDN shape's inputs.json, in the order gdn-bench writes them (the driver's
// gdn_inputs is the same list): q, k [B,T,Hk,D]; v [B,T,Hv,D]; g, beta [B,T,Hv]; do [B,T,Hv,D];
// with `states` h0 and dht, one per sequence ([B,Hv,D,D], packed [N,Hv,D,D]); packed, the
// offsets cu_seqlens, int32 [N + 1]. With `gate_in_kernel` (the fla-layer contract) the gate's
// inputs a, b [B,T,Hv] (bf16), A_log, dt_bias [Hv] (f32) stand in place of g and beta.
std::vector<TensorLayout> gdn_input_layout(const ShapeInfo& shape, bool states,
                                           bool gate_in_kernel = false);

// Writes STEM.json / STEM.bin atomically (temporary files, then renamed); the shape's "N" only
// when it packs sequences. `extra` holds further top-level JSON members, already formatted
// ("\"scale\": 0.088, ..."), or is empty.
std::string write_tensors(const std::string& stem, const ShapeInfo& shape,
                          const std::vector<HostTensor>& tensors, const std::string& extra);
// Reads a manifest (path of the .json) and its .bin, every tensor as float64.
std::string read_tensors(const std::string& manifest_path,
                         std::map<std::string, std::vector<double>>& out);

struct Stats {
  double median = -1, min = -1, max = -1; // milliseconds; -1 when not measured
};

struct ModeTimes {
  std::string mode;
  Stats graph, eager;
  std::string graph_error; // why no graph replay was timed
};

// One kernel's share of a peer's training step (torch.profiler, averaged over a few steps).
struct KernelTime {
  std::string name;
  double calls = 0, us = 0; // launches and GPU microseconds per step
};

// One row of peers.json: one backend at one shape.
struct Row {
  std::string backend, status, reason, runs; // status: ok, unavailable, error
  ShapeInfo shape;
  std::vector<std::pair<std::string, std::string>> versions; // distribution, version
  std::vector<std::string> kernels;                          // CUDA kernels of one fwd+bwd
  std::vector<KernelTime> kernel_times;                      // the same, timed; longest first
  std::string pinned; // for fla: how the run shows it ran FLA's Triton kernels
  bool pinned_verified = false;
  std::string outputs; // manifest of the outputs and gradients
  std::vector<ModeTimes> times;
  double saved_bytes = -1, peak_bytes = -1, first_call_s = -1;
  double own_kernels_ms = -1; // conv: GPU time of the peer's own kernels in one training step
};

// Parses peers.json; returns an error text, empty on success.
std::string parse_results(const std::string& json, std::vector<Row>& out);
std::string read_results(const std::string& path, std::vector<Row>& out);

// Runs argv[0] (looked up on PATH) with argv, no shell, its stdout sent to our stderr, and waits.
// Returns the exit code, or -1 with `error` set when it could not be started or was killed.
int run_process(const std::vector<std::string>& argv, std::string& error);

// JSON text of a string, quotes included.
std::string json_string(const std::string& s);

} // namespace qr::gdn::peers
