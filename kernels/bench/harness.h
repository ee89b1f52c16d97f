// Device-side test problem shared by gdn-bench and the GPU tests: dense random inputs, output
// buffers poisoned with NaN before every run, host read-back as float64, and error metrics.
#pragma once

#include "cpu_reference.h"
#include "gdn.h"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

struct CUevent_st;

namespace qr::gdn {

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  DeviceBuffer(DeviceBuffer&& o) noexcept : p_(o.p_), bytes_(o.bytes_) { o.p_ = nullptr; }
  ~DeviceBuffer();
  std::string alloc(size_t bytes); // frees what it held; empty string on success
  void* get() const { return p_; }
  size_t bytes() const { return bytes_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

private:
  void* p_ = nullptr;
  size_t bytes_ = 0;
};

enum class DType { bf16, f32 };

struct InputSpec {
  bool initial_state = false;
  bool d_final_state = false;
  float g_scale = 1.f;  // g = g_scale * logsigmoid(N(0, 1)); g_scale 0 gives g = 0
  float qk_scale = 1.f; // q, k ~ N(0, qk_scale^2); without l2norm use about D^-0.5 so that
                        // beta |k|^2 stays below 2 and the recurrence stays bounded
  uint64_t seed = 1;
  std::vector<int> seq_lens; // varlen (shape.sequences = N): the N lengths, summing to T
};

// All tensors dense: q, k [B,T,Hk,D]; v, o, do [B,T,Hv,D]; g, beta [B,T,Hv]; states [B,Hv,D,D]
// (varlen: [N,Hv,D,D], and cu_seqlens on the device).
struct Problem {
  Shape shape;
  Options opt;
  DeviceBuffer q, k, v, g, beta, h0, d_o, dht; // inputs
  DeviceBuffer cu_seqlens;                     // varlen offsets (int32), else empty
  std::vector<int32_t> cu_host;                // the same on the host
  DeviceBuffer o, ht;                          // forward outputs
  DeviceBuffer dq, dk, dv, dg, dbeta, dh0;     // backward outputs
  DeviceBuffer workspace;
  DeviceBuffer saved; // a training forward's context for the backward (Backend::saved_bytes)

  std::string init(const Shape& s, const Options& o, const InputSpec& in);
  FwdArgs fwd_args() const;
  BwdArgs bwd_args() const;
  std::string poison_outputs();               // NaN into every output buffer
  std::string ensure_workspace(size_t bytes); // grows, never shrinks
  std::string ensure_saved(size_t bytes);     // likewise
  std::string poison_saved();                 // NaN into the saved context
  cpu::Inputs to_cpu() const;                 // the exact device inputs as float64
};

std::vector<double> download(const DeviceBuffer& b, DType t);

struct Error {
  double max_abs = 0, rel_l2 = 0; // rel_l2 = |a - ref| / |ref|
  size_t non_finite = 0;
  bool ok(double tol) const { return non_finite == 0 && rel_l2 <= tol; }
};
Error compare(const std::vector<double>& a, const std::vector<double>& ref);
size_t count_non_finite(const std::vector<double>& a);

// One named output of a forward or backward pass, for comparisons.
struct Output {
  using Member = DeviceBuffer Problem::*;
  const char* name;
  Member buf;
  DType type;
};
std::vector<Output> forward_outputs();  // o, ht
std::vector<Output> backward_outputs(); // dq, dk, dv, dg, dbeta, dh0

// How a pass runs: an inference forward; a training forward, which also writes the backend's saved
// context into Problem::saved; a backward from that context; a self-contained backward. For a
// backend that keeps no context, fwd_train is fwd and bwd is bwd_recompute.
enum class Run { fwd, fwd_train, bwd, bwd_recompute };
std::string run_pass(const Backend& be, Problem& p, Run r, Stream stream);

std::string device_info(DeviceInfo& info, std::string& name);

// Event timing on one stream, shared by gdn-bench's GDN and conv runs: `warmup` untimed and
// `iters` timed runs of `enqueue`, each bracketed by CUDA events; with `flush_l2` each starts after
// a memset of twice the L2, so no run finds the previous one's data in the cache.
class RunTimer {
public:
  RunTimer() = default;
  RunTimer(const RunTimer&) = delete;
  RunTimer& operator=(const RunTimer&) = delete;
  ~RunTimer();
  std::string init(Stream stream); // the events and the flush buffer
  // Appends the timed runs' milliseconds to `ms`; the first error ends the runs.
  std::string time(int warmup, int iters, bool flush_l2,
                   const std::function<std::string()>& enqueue, std::vector<float>& ms);

private:
  Stream stream_ = nullptr;
  DeviceBuffer flush_;
  CUevent_st *start_ = nullptr, *stop_ = nullptr;
};

} // namespace qr::gdn
