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

  int group() const { return value_heads / key_heads; }
  bool valid() const; // positive sizes, Hv a multiple of Hk
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
  const float* initial_state = nullptr;  // optional [B,Hv,Dk,Dv]
  TensorRef<bf16_t> o;                   // [B,T,Hv,Dv]
  float* final_state = nullptr;          // optional [B,Hv,Dk,Dv]
  void* saved = nullptr; // optional: a training forward writes its context for the backward here
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
  float* d_initial_state = nullptr;     // optional [B,Hv,Dk,Dv]
  const void* saved = nullptr; // optional: the context a training forward on the same inputs left
};

enum class Pass { fwd, bwd };

// Counts used to turn times into rates. FLOPs: the matrix work of the chunked algorithm
// (docs/gdn-bench.md); bytes: each input read once and each output written once.
double model_flops(const Shape& s, Pass p);
double model_bytes(const Shape& s, Pass p, bool with_states);

struct DeviceInfo {
  int major = 0, minor = 0, sm_count = 0;
};

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Empty when the backend runs this shape on this device, else the reason it does not.
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
};

std::unique_ptr<Backend> make_reference_backend();
std::unique_ptr<Backend> make_chunked_backend();
std::unique_ptr<Backend> make_fused_backend(); // docs/gdn-bench.md, kernels/gdn/fused.cuh
// Every backend, the oracle (`reference`) first.
std::vector<std::unique_ptr<Backend>> all_backends();

} // namespace qr::gdn
