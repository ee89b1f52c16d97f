// The GatedDeltaNet layer's short convolution and gates (issue 6, item 2): host API.
//
// What the layer computes (checked against HF transformers' modeling_qwen3_next.py
// Qwen3NextGatedDeltaNet.forward, Megatron-Core's ssm/gated_delta_net.py and Dao-AILab's
// causal-conv1d). The projected mixed_qkv x [B, T, C] (bf16, channels last) has
// C = 2 Hk Dk + Hv Dv channels, laid out as [q (Hk*Dk) | k (Hk*Dk) | v (Hv*Dv)] (HF and Megatron
// torch.split it as [key_dim, key_dim, value_dim]). It goes through nn.Conv1d(C, C, kernel 4,
// groups=C, padding=3) cut back to the first T outputs (HF) or causal_conv1d_fn(x, weight [C, 4],
// bias, activation="silu") (HF fast path and Megatron), which is the same causal depthwise conv:
//   z[b,t,c] = bias[c] + sum_{j=0..3} w[c,j] x[b, t-3+j, c]     (x at t < 0 is 0)
//   y = silu(z) = z sigmoid(z)
// Qwen3-Next / Qwen3.5 build the conv without a bias (bias=False); a bias is supported anyway.
// y is split into q [B,T,Hk,Dk], k [B,T,Hk,Dk], v [B,T,Hv,Dv]; q and k are then L2-normalised per
// head as FLA's l2norm does (use_qk_l2norm_in_kernel=True): qn = q / sqrt(|q|^2 + 1e-6).
// The gates, per token and value head, from in_proj_ba's a and b [B,T,Hv] (bf16):
//   g = -exp(A_log) * softplus(a + dt_bias)      (fp32: A_log.float(), a.float(); fp32 out)
//   beta = sigmoid(b)                             (bf16 out)
// A_log and dt_bias are fp32 [Hv]. softplus is torch's: x for x > 20, else log1p(exp(x)).
//
// Backward: given the gradients of qn, kn, v (bf16), g (fp32) and beta (bf16), it produces d x
// (bf16), d weight [C,4] and d bias [C] (fp32, sums over all tokens), d a and d b (bf16), d A_log
// and d dt_bias (fp32 [Hv], sums over all tokens). All sums are in a fixed order: bit-identical
// results run to run. The backward recomputes the forward from its inputs (no forward call first).
//
// Tensors: x, dx are TensorRef views [B, T, C] with stride_h ignored (channels contiguous, stride
// 1); q, k, v, their gradients [B,T,H,D]; a, b, g, beta and their gradients [B,T,Hv] (D = 1).
// weight [C,4] and bias [C] are bf16, contiguous (weight.squeeze(1) of the nn.Conv1d parameter).
#pragma once

#include "gdn.h"

#include <memory>
#include <string>
#include <vector>

namespace qr::gdn::conv {

constexpr int kWidth = 4;                 // conv kernel width (linear_conv_kernel_dim)
constexpr double kL2Eps = 1e-6;           // FLA l2norm eps
constexpr double kSoftplusThreshold = 20; // torch softplus: identity above

inline int channels(const Shape& s) {
  return 2 * s.key_heads * s.head_dim_k + s.value_heads * s.head_dim_v;
}

struct FwdArgs {
  Shape shape;
  TensorRef<const bf16_t> x;      // [B,T,C]
  const bf16_t* weight = nullptr; // [C,4]
  const bf16_t* bias = nullptr;   // optional [C]
  TensorRef<const bf16_t> a, b;   // [B,T,Hv]
  const float* A_log = nullptr;   // [Hv]
  const float* dt_bias = nullptr; // [Hv]
  TensorRef<bf16_t> q, k, v;      // q, k [B,T,Hk,Dk] (normalised); v [B,T,Hv,Dv]
  TensorRef<float> g;             // [B,T,Hv]
  TensorRef<bf16_t> beta;         // [B,T,Hv]
};

struct BwdArgs {
  Shape shape;
  TensorRef<const bf16_t> x;
  const bf16_t* weight = nullptr;
  const bf16_t* bias = nullptr; // optional; when set, dbias is written
  TensorRef<const bf16_t> a, b;
  const float* A_log = nullptr;
  const float* dt_bias = nullptr;
  TensorRef<const bf16_t> dq, dk, dv; // gradients of the forward's q, k (normalised), v
  TensorRef<const float> dg;
  TensorRef<const bf16_t> dbeta;
  TensorRef<bf16_t> dx;      // [B,T,C]
  float* dweight = nullptr;  // [C,4]
  float* dbias = nullptr;    // [C], needed when bias is set
  TensorRef<bf16_t> da, db;  // [B,T,Hv]
  float* dA_log = nullptr;   // [Hv]
  float* ddt_bias = nullptr; // [Hv]
};

// Fewest HBM bytes of a pass: each input read once, each output written once.
double model_bytes(const Shape& s, Pass p, bool bias);

class Backend {
public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // Empty when the backend runs this shape on this device, else the reason it does not.
  virtual std::string unsupported(const DeviceInfo& dev, const Shape& s) const = 0;
  // Empty when run_bwd takes these arguments (bias, strides), else why not; run_bwd refuses
  // them with the same text.
  virtual std::string unsupported_bwd(const BwdArgs&) const { return {}; }
  // Device scratch the pass needs (bytes, 256-byte aligned base).
  virtual size_t workspace_bytes(const Shape& s, Pass p) const = 0;
  // Enqueue on `stream`; return the first error as text, empty on success.
  virtual std::string run_fwd(const FwdArgs& a, void* workspace, Stream stream) const = 0;
  virtual std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const = 0;
};

// One kernel forward, one kernel backward plus an ordered reduce (kernels/conv/conv_fused.cu).
std::unique_ptr<Backend> make_fused_backend();
// cuDNN convolution + separate small kernels (kernels/conv/conv_cudnn.cu); nullptr when the build
// has no cuDNN.
std::unique_ptr<Backend> make_cudnn_backend();
bool have_cudnn();

// fp64 CPU reference (kernels/conv/conv_cpu_reference.cpp): dense row-major tensors as above;
// an empty bias means none.
namespace cpu {

struct Inputs {
  Shape shape;
  std::vector<double> x, weight, bias, a, b, A_log, dt_bias;
};

struct Forward {
  std::vector<double> q, k, v, g, beta;
};

struct Grads {
  std::vector<double> dx, dweight, dbias, da, db, dA_log, ddt_bias;
};

struct OutGrads {
  std::vector<double> dq, dk, dv, dg, dbeta;
};

Forward forward(const Inputs& in);
// dbias is empty when the inputs have no bias.
Grads backward(const Inputs& in, const OutGrads& d);
// sum(dq . q) + sum(dk . k) + sum(dv . v) + sum(dg . g) + sum(dbeta . beta): the scalar whose
// gradient backward() returns; for the finite-difference tests.
double loss(const Inputs& in, const OutGrads& w);

} // namespace cpu

} // namespace qr::gdn::conv
