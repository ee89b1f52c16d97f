// GatedDeltaNet (gated delta rule) host API: shapes, strided tensors, and the backend interface.
//
// Semantics are those of flash-linear-attention's chunk_gated_delta_rule. Per batch b and value
// head h (key head hk = h / (Hv / Hk)), with state S (Dk x Dv, fp32):
//   q_t, k_t <- q_t / sqrt(|q_t|^2 + 1e-6), likewise k_t      (only when l2norm_qk)
//   S_t = exp(g_t) S_{t-1} + beta_t k_t (v_t - exp(g_t) S_{t-1}^T k_t)^T
//   o_t = scale * S_t^T q_t
// Data types: q, k, v, beta, o, do and dq, dk, dv, dbeta are bf16; g and dg are fp32 (natural-log
// decay per token and value head); states h0, ht, dh0, dht are fp32, contiguous [B, Hv, Dk, Dv].
// Token tensors are [B, T, H, D] (or [B, T, H] for g and beta) with arbitrary strides in elements
// for B, T and H; the last dimension of a [B, T, H, D] tensor must be contiguous.
//
// Variable-length sequences (FLA's cu_seqlens convention): Shape::sequences = N > 0 packs N
// sequences into one batch row (batch must be 1, seq_len = T is the packed token count).
// FwdArgs / BwdArgs::cu_seqlens then points to N + 1 int32 offsets in device memory,
// 0 = cu[0] < cu[1] < ... < cu[N] = T (every sequence at least one token, boundaries anywhere);
// sequence s is tokens [cu[s], cu[s+1]), its state starts from initial_state[s] (or zero) and its
// final state goes to final_state[s]: states are [N, Hv, Dk, Dv]. Workspace and context sizes
// depend on T and N only, never on where the boundaries are, and no backend reads cu_seqlens on
// the host, so a varlen run needs no host sync and can be captured in a CUDA graph.
//
// Input contract checked on the device (Backend::input_error reports a violation after the run):
// g <= 0 for `fused` (its chunked algebra forms exp(G_i - G_j) and exp(Gl - G_i), which must stay
// <= 1); cu_seqlens as above; a saved context from a training forward of the same shape and
// options. A backward given a context follows the boundaries of the forward that wrote it.
// input_error also reports one internal fault: `fused`'s backward pipeline on sm_90 waiting
// seconds for a scan (a bug, reported rather than hanging the GPU).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

struct CUstream_st;

namespace qr::gdn {

using Stream = CUstream_st*; // cudaStream_t without pulling in the CUDA headers

struct Shape {
  int batch = 0;
  int seq_len = 0;
  int key_heads = 0;   // Hk: heads of q and k
  int value_heads = 0; // Hv: heads of v, g, beta and o; a multiple of Hk
  int head_dim_k = 0;  // Dk
  int head_dim_v = 0;  // Dv
  int sequences = 0;   // N > 0: variable-length sequences (see above; batch 1); 0: dense batch

  int group() const { return value_heads / key_heads; }
  bool varlen() const { return sequences > 0; }
  int states() const { return varlen() ? sequences : batch; } // first dimension of the states
  bool valid() const; // positive sizes, Hv a multiple of Hk; varlen: batch 1, 1 <= N <= T
};

// A [B, T, H, D] or [B, T, H] view: base pointer plus element strides for B, T and H.
template <class T>
struct TensorRef {
  T* data = nullptr;
  int64_t stride_b = 0, stride_t = 0, stride_h = 0;
};

// Dense row-major strides for a [B, T, H, D] tensor (D = 1 for [B, T, H]).
template <class T>
TensorRef<T> dense(T* data, const Shape& s, int heads, int dim) {
  return {data, int64_t(s.seq_len) * heads * dim, int64_t(heads) * dim, dim};
}

using bf16_t = uint16_t; // raw bf16 bits on the host side of the API

struct Options {
  float scale = 0.f;     // 0 means Dk^-0.5
  bool l2norm_qk = true; // normalise q and k inside the kernel (eps 1e-6 as in FLA's l2norm)
  float effective_scale(const Shape& s) const;
};

struct FwdArgs {
  Shape shape;
  Options opt;
  TensorRef<const bf16_t> q, k, v, beta; // q, k: [B,T,Hk,Dk]; v: [B,T,Hv,Dv]; beta: [B,T,Hv]
  TensorRef<const float> g;              // [B,T,Hv]
  const float* initial_state = nullptr;  // optional [B,Hv,Dk,Dv] ([N,Hv,Dk,Dv] when varlen)
  TensorRef<bf16_t> o;                   // [B,T,Hv,Dv]
  float* final_state = nullptr;          // optional, like initial_state
  void* saved = nullptr; // optional: a training forward writes its context for the backward here
  const int32_t* cu_seqlens = nullptr; // [N+1] device offsets when shape.sequences = N > 0
};

struct BwdArgs {
  Shape shape;
  Options opt;
  TensorRef<const bf16_t> q, k, v, beta;
  TensorRef<const float> g;
  const float* initial_state = nullptr; // optional, as in the forward
  TensorRef<const bf16_t> d_o;          // [B,T,Hv,Dv]
  const float* d_final_state = nullptr; // optional gradient of the final state
  TensorRef<bf16_t> dq, dk, dv, dbeta;  // like q, k, v, beta
  TensorRef<float> dg;                  // like g
  float* d_initial_state = nullptr;     // optional, like initial_state
  const void* saved = nullptr; // optional: the context a training forward on the same inputs left
  const int32_t* cu_seqlens = nullptr; // [N+1] device offsets when shape.sequences = N > 0
};

enum class Pass { fwd, bwd };

// Counts used to turn times into rates. FLOPs: the matrix work of the chunked algorithm
// (docs/gdn/bench.md; varlen: as for one sequence of T tokens); bytes: each input read once and
// each output written once (varlen: N states).
double model_flops(const Shape& s, Pass p);
double model_bytes(const Shape& s, Pass p, bool with_states);

struct DeviceInfo {
  int major = 0, minor = 0, sm_count = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Empty when the backend runs this shape on this device, else the reason it does not (among
  // them: the binary holds no machine code for the device's architecture).
  virtual std::string unsupported(const DeviceInfo& dev, const Shape& s) const = 0;
  // Device scratch the pass needs (bytes, 256-byte aligned base), with or without a saved context.
  virtual size_t workspace_bytes(const Shape& s, Pass p) const = 0;
  // Bytes of the context a training forward keeps for the backward, as autograd's saved tensors
  // (256-byte aligned base); 0 when the backend keeps none and its backward always recomputes.
  virtual size_t saved_bytes(const Shape&) const { return 0; }
  // Both enqueue on `stream` and return the first CUDA error as text, empty on success. A forward
  // given FwdArgs::saved also writes the context there; a backward given it (BwdArgs::saved, after
  // such a forward on the same inputs) reads it instead of recomputing the forward. Without one,
  // the backward is self-contained: it recomputes what it needs from the inputs.
  virtual std::string run_fwd(const FwdArgs& a, void* workspace, Stream stream) const = 0;
  virtual std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const = 0;
  // Waits for `stream`, then says why the last run given this workspace rejected its inputs (the
  // contract above; that run's outputs are then undefined), empty when it did not. The runs
  // themselves never wait: the check happens on the device, into the workspace.
  virtual std::string input_error(const void* /*workspace*/, Stream /*stream*/) const { return {}; }
};

std::unique_ptr<Backend> make_reference_backend();
std::unique_ptr<Backend> make_chunked_backend();
std::unique_ptr<Backend> make_fused_backend(); // docs/gdn/kernels.md, fused_algorithm.cuh
// Every backend, the oracle (`reference`) first.
std::vector<std::unique_ptr<Backend>> all_backends();

} // namespace qr::gdn
