// Unfused short-convolution baseline (conv.h) through cuDNN's convolution API, for gdn-bench
// --op conv. Built only when CMake finds cuDNN (QR_HAVE_CUDNN); otherwise make_cudnn_backend()
// returns nullptr.
//
// The causal depthwise conv is a grouped (groups = C) 2-D convolution on NHWC tensors with H = 1,
// W = T and a filter [C, 1, 1, 4] (KRSC, which is weight [C, 4] as stored). cuDNN pads both
// sides, so it runs with pad_w = 3 into a [B, T + 3, C] buffer whose first T tokens are the causal
// outputs. Forward: cudnnConvolutionForward, then a kernel for bias + SiLU (in place), a kernel for
// split + l2norm(q, k) (writes q, k, v) and a kernel for the gates. Backward (self-contained like
// the fused path): cudnnConvolutionForward again for z, a kernel for the l2norm and SiLU backward
// (writes dz into a [B, T + 3, C] buffer with 3 zero tokens at the end of each batch),
// cudnnConvolutionBackwardData (dz -> dx), cudnnConvolutionBackwardFilter (x, dz -> bf16 dw, then
// widened to fp32), a gates kernel and an ordered per-head reduce for d A_log and d dt_bias.
// The backward takes neither a conv bias nor a strided dx: cuDNN 9.19 refused both on the H200
// (unsupported_bwd); the forward takes both. Algorithms: cudnnFind* once per shape, the
// fastest that works within 64 MiB of workspace (for the backward a deterministic one if any).
#include "conv_common.cuh"

#if QR_HAVE_CUDNN

#include <cudnn.h>
#include <dlfcn.h>
#include <map>
#include <mutex>
#include <tuple>

namespace qr::gdn::conv {
namespace {

constexpr size_t kCudnnWorkspace = size_t(64) << 20;

// cuDNN is opened at run time, not linked: a qwen-recipe built with this baseline still starts
// where no libcudnn.so.9 is installed (a login node, CI), and only this backend says it cannot
// run. The pointers take the API's names, so the code below reads as plain cuDNN calls.
// clang-format off (one API function per line)
#define QR_CUDNN_API(X)                                                                            \
  X(cudnnGetErrorString)                                                                           \
  X(cudnnCreate)                                                                                   \
  X(cudnnDestroy)                                                                                  \
  X(cudnnSetStream)                                                                                \
  X(cudnnCreateTensorDescriptor)                                                                   \
  X(cudnnDestroyTensorDescriptor)                                                                  \
  X(cudnnSetTensor4dDescriptorEx)                                                                  \
  X(cudnnCreateFilterDescriptor)                                                                   \
  X(cudnnDestroyFilterDescriptor)                                                                  \
  X(cudnnSetFilter4dDescriptor)                                                                    \
  X(cudnnCreateConvolutionDescriptor)                                                              \
  X(cudnnDestroyConvolutionDescriptor)                                                             \
  X(cudnnSetConvolution2dDescriptor)                                                               \
  X(cudnnSetConvolutionGroupCount)                                                                 \
  X(cudnnSetConvolutionMathType)                                                                   \
  X(cudnnFindConvolutionForwardAlgorithm)                                                          \
  X(cudnnFindConvolutionBackwardDataAlgorithm)                                                     \
  X(cudnnFindConvolutionBackwardFilterAlgorithm)                                                   \
  X(cudnnConvolutionForward)                                                                       \
  X(cudnnConvolutionBackwardData)                                                                  \
  X(cudnnConvolutionBackwardFilter)
// clang-format on
#define QR_CUDNN_POINTER(name) decltype(&::name) name = nullptr;
QR_CUDNN_API(QR_CUDNN_POINTER)
#undef QR_CUDNN_POINTER

// Empty once every function above resolved, else why not. Tries the loader's path
// (LD_LIBRARY_PATH, ld.so.cache), then the folder CMake found cuDNN in.
const std::string& cudnn_load_error() {
  static const std::string error = []() -> std::string {
    void* lib = dlopen("libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      lib = dlopen(QR_CUDNN_DIR "/libcudnn.so.9", RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      return "cannot load libcudnn.so.9 (put a cuDNN 9 lib folder on LD_LIBRARY_PATH)";
#define QR_CUDNN_RESOLVE(name)                                                                     \
  if (!(name = reinterpret_cast<decltype(name)>(dlsym(lib, #name))))                               \
    return "libcudnn.so.9 has no " #name;
    QR_CUDNN_API(QR_CUDNN_RESOLVE)
#undef QR_CUDNN_RESOLVE
    return {};
  }();
  return error;
}

#define QR_CUDNN_TRY(call)                                                                         \
  do {                                                                                             \
    if (cudnnStatus_t s_ = (call); s_ != CUDNN_STATUS_SUCCESS)                                     \
      return std::string("cudnn: ") + #call + ": " + cudnnGetErrorString(s_);                      \
  } while (0)

// ---- small kernels -------------------------------------------------------------------------

// y = silu(z + bias) in place on the first T tokens of each batch of the [B, T + 3, C] buffer.
__global__ void bias_silu_kernel(bf16* y, const bf16* bias, int B, int T, int C) {
  const int64_t n = int64_t(B) * T * C;
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int c = int(i % C);
    const int64_t tok = i / C, b = tok / T, t = tok % T;
    bf16* p = y + (b * (T + 3) + t) * C + c;
    const float z = __bfloat162float(*p) + (bias ? __bfloat162float(bias[c]) : 0.f);
    *p = __float2bfloat16(siluf_(z));
  }
}

// One warp per (token, head): split into q, k, v and l2-normalise q and k heads.
__global__ void split_l2norm_kernel(const bf16* y, int B, int T, int Hk, int Hv, int D, Ref<bf16> q,
                                    Ref<bf16> k, Ref<bf16> v) {
  const int heads = 2 * Hk + Hv, C = heads * D;
  const int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (w >= int64_t(B) * T * heads)
    return;
  const int head = int(w % heads);
  const int64_t tok = w / heads, b = tok / T, t = tok % T;
  const bf16* src = y + (b * (T + 3) + t) * C + head * D;
  float ss = 0.f;
  for (int d = lane; d < D; d += 32) {
    const float x = __bfloat162float(src[d]);
    ss += x * x;
  }
  const bool norm = head < 2 * Hk;
  const float r = norm ? rsqrtf(warp_sum(ss) + float(kL2Eps)) : 1.f;
  bf16* dst = head < Hk       ? q.at(int(b), int(t), head)
              : head < 2 * Hk ? k.at(int(b), int(t), head - Hk)
                              : v.at(int(b), int(t), head - 2 * Hk);
  for (int d = lane; d < D; d += 32)
    dst[d] = __float2bfloat16(__bfloat162float(src[d]) * r);
}

__global__ void gates_fwd_kernel(int B, int T, int Hv, Ref<const bf16> a, Ref<const bf16> bb,
                                 const float* A_log, const float* dt_bias, Ref<float> g,
                                 Ref<bf16> beta) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(B) * T * Hv)
    return;
  const int h = int(i % Hv), t = int((i / Hv) % T), b = int(i / Hv / T);
  const float u = __bfloat162float(*a.at(b, t, h)) + dt_bias[h];
  *g.at(b, t, h) = -__expf(A_log[h]) * softplusf_(u);
  *beta.at(b, t, h) = __float2bfloat16(sigmoidf_(__bfloat162float(*bb.at(b, t, h))));
}

// One warp per (token, head) over T + 3 tokens: dz = d silu(z) of the l2norm / v gradient;
// zeros for the 3 padding tokens. z = conv output (bf16) + bias.
__global__ void act_bwd_kernel(const bf16* zbuf, const bf16* bias, int B, int T, int Hk, int Hv,
                               int D, Ref<const bf16> dq, Ref<const bf16> dk, Ref<const bf16> dv,
                               bf16* dz) {
  const int heads = 2 * Hk + Hv, C = heads * D, Tp = T + 3;
  const int64_t w = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / 32;
  const int lane = threadIdx.x % 32;
  if (w >= int64_t(B) * Tp * heads)
    return;
  const int head = int(w % heads);
  const int64_t tok = w / heads, b = tok / Tp, t = tok % Tp;
  const int64_t off = (b * Tp + t) * C + head * D;
  if (t >= T) {
    for (int d = lane; d < D; d += 32)
      dz[off + d] = __float2bfloat16(0.f);
    return;
  }
  const bf16* dout = head < Hk       ? dq.at(int(b), int(t), head)
                     : head < 2 * Hk ? dk.at(int(b), int(t), head - Hk)
                                     : dv.at(int(b), int(t), head - 2 * Hk);
  auto zval = [&](int d) {
    return __bfloat162float(zbuf[off + d]) + (bias ? __bfloat162float(bias[head * D + d]) : 0.f);
  };
  float r = 1.f, dot = 0.f;
  if (head < 2 * Hk) {
    float ss = 0.f, yd = 0.f;
    for (int d = lane; d < D; d += 32) {
      const float y = siluf_(zval(d));
      ss += y * y;
      yd += y * __bfloat162float(dout[d]);
    }
    r = rsqrtf(warp_sum(ss) + float(kL2Eps));
    dot = warp_sum(yd) * r;
  }
  for (int d = lane; d < D; d += 32) {
    const float z = zval(d), s = sigmoidf_(z), y = z * s;
    float g = __bfloat162float(dout[d]);
    if (head < 2 * Hk)
      g = r * (g - y * r * dot);
    dz[off + d] = __float2bfloat16(g * s * (1.f + z * (1.f - s)));
  }
}

__global__ void widen_kernel(const bf16* src, float* dst, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    dst[i] = __bfloat162float(src[i]);
}

// da, db per element, and each token's contributions to d A_log and d dt_bias ([B*T, Hv]).
__global__ void gates_bwd_kernel(int B, int T, int Hv, Ref<const bf16> a, Ref<const bf16> bb,
                                 const float* A_log, const float* dt_bias, Ref<const float> dg,
                                 Ref<const bf16> dbeta, Ref<bf16> da, Ref<bf16> db, float* cA,
                                 float* cD) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= int64_t(B) * T * Hv)
    return;
  const int h = int(i % Hv), t = int((i / Hv) % T), b = int(i / Hv / T);
  const float u = __bfloat162float(*a.at(b, t, h)) + dt_bias[h], A = __expf(A_log[h]);
  const float gd = *dg.at(b, t, h);
  const float dav = -gd * A * softplus_gradf_(u);
  *da.at(b, t, h) = __float2bfloat16(dav);
  cD[i] = dav;
  cA[i] = -gd * A * softplusf_(u);
  const float be = sigmoidf_(__bfloat162float(*bb.at(b, t, h)));
  *db.at(b, t, h) = __float2bfloat16(__bfloat162float(*dbeta.at(b, t, h)) * be * (1.f - be));
}

// One block per head: fixed-order sum over tokens of cA and cD.
__global__ void gates_reduce_kernel(const float* cA, const float* cD, int64_t tokens, int Hv,
                                    float* dA_log, float* ddt_bias) {
  __shared__ float sA[256], sD[256];
  const int h = blockIdx.x;
  float a = 0.f, d = 0.f;
  for (int64_t n = threadIdx.x; n < tokens; n += 256)
    a += cA[n * Hv + h], d += cD[n * Hv + h];
  sA[threadIdx.x] = a, sD[threadIdx.x] = d;
  __syncthreads();
  for (int s = 128; s > 0; s >>= 1) {
    if (int(threadIdx.x) < s)
      sA[threadIdx.x] += sA[threadIdx.x + s], sD[threadIdx.x] += sD[threadIdx.x + s];
    __syncthreads();
  }
  if (threadIdx.x == 0)
    dA_log[h] = sA[0], ddt_bias[h] = sD[0];
}

unsigned blocks_for(int64_t threads) {
  return unsigned((threads + 255) / 256);
}

// ---- cuDNN plan ----------------------------------------------------------------------------

struct Plan {
  cudnnTensorDescriptor_t x = nullptr, dx = nullptr, y = nullptr;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  cudnnConvolutionFwdAlgo_t fwd{};
  cudnnConvolutionBwdDataAlgo_t bwd_data{};
  cudnnConvolutionBwdFilterAlgo_t bwd_filter{};
  bool have_bwd = false;
  bool deterministic = true; // the backward algorithms cuDNN chose
};

using PlanKey = std::tuple<int, int, int, int64_t, int64_t, int64_t, int64_t>;

class CudnnConv final : public Backend {
public:
  ~CudnnConv() override {
    for (auto& [k, p] : plans_) {
      cudnnDestroyTensorDescriptor(p.x), cudnnDestroyTensorDescriptor(p.dx);
      cudnnDestroyTensorDescriptor(p.y);
      cudnnDestroyFilterDescriptor(p.w), cudnnDestroyConvolutionDescriptor(p.conv);
    }
    if (handle_)
      cudnnDestroy(handle_);
  }
  std::string name() const override { return "cudnn"; }
  std::string unsupported(const DeviceInfo&, const Shape& s) const override {
    if (const std::string& e = cudnn_load_error(); !e.empty())
      return e;
    if (!s.valid())
      return "invalid shape";
    if (s.head_dim_k != s.head_dim_v)
      return "needs Dk == Dv";
    return {};
  }
  // Both seen on the H200 with cuDNN 9.19: cudnnConvolutionBackwardBias answers
  // CUDNN_STATUS_NOT_SUPPORTED for bf16, and cudnnFindConvolutionBackwardDataAlgorithm offers no
  // working algorithm for a grouped conv whose dx rows are padded (stride_t > C). (A strided x with
  // a dense dx was never tried, so it is refused too.)
  std::string unsupported_bwd(const BwdArgs& a) const override {
    const int64_t C = channels(a.shape);
    if (a.bias)
      return "no bf16 cudnnConvolutionBackwardBias in cuDNN 9 (CUDNN_STATUS_NOT_SUPPORTED); "
             "the baseline's backward takes no conv bias";
    auto dense_rows = [&](int64_t sb, int64_t st) { return st == C && sb == C * a.shape.seq_len; };
    if (!dense_rows(a.dx.stride_b, a.dx.stride_t) || !dense_rows(a.x.stride_b, a.x.stride_t))
      return "cuDNN has no backward-data algorithm for a grouped conv into a strided dx; the "
             "baseline's backward needs dense x and dx";
    return {};
  }
  size_t workspace_bytes(const Shape& s, Pass p) const override {
    const size_t padded = size_t(s.batch) * (s.seq_len + 3) * channels(s);
    const size_t tok = size_t(s.batch) * s.seq_len;
    Carver c{nullptr};
    c.take<bf16>(padded); // conv output / z
    c.take<char>(kCudnnWorkspace);
    if (p == Pass::bwd) {
      c.take<bf16>(padded); // dz
      c.take<bf16>(size_t(channels(s)) * kWidth);
      c.take<float>(tok * s.value_heads);
      c.take<float>(tok * s.value_heads);
    }
    return c.used;
  }

  std::string run_fwd(const FwdArgs& a, void* workspace, Stream stream) const override {
    const Shape& s = a.shape;
    Plan* plan = nullptr;
    if (std::string e = get_plan(s, a.x, a.x, false, plan); !e.empty())
      return e;
    QR_CUDNN_TRY(cudnnSetStream(handle_, stream));
    const size_t padded = size_t(s.batch) * (s.seq_len + 3) * channels(s);
    Carver c{static_cast<char*>(workspace)};
    bf16* y = c.take<bf16>(padded);
    void* ws = c.take<char>(kCudnnWorkspace);
    const float one = 1.f, zero = 0.f;
    QR_CUDNN_TRY(cudnnConvolutionForward(handle_, &one, plan->x, a.x.data, plan->w, a.weight,
                                         plan->conv, plan->fwd, ws, kCudnnWorkspace, &zero, plan->y,
                                         y));
    const int C = channels(s);
    bias_silu_kernel<<<4 * 132 * 8, 256, 0, stream>>>(y, reinterpret_cast<const bf16*>(a.bias),
                                                      s.batch, s.seq_len, C);
    const int64_t warps = int64_t(s.batch) * s.seq_len * (2 * s.key_heads + s.value_heads);
    split_l2norm_kernel<<<blocks_for(warps * 32), 256, 0, stream>>>(
        y, s.batch, s.seq_len, s.key_heads, s.value_heads, s.head_dim_k, ref<bf16>(a.q),
        ref<bf16>(a.k), ref<bf16>(a.v));
    gates_fwd_kernel<<<blocks_for(int64_t(s.batch) * s.seq_len * s.value_heads), 256, 0, stream>>>(
        s.batch, s.seq_len, s.value_heads, ref<const bf16>(a.a), ref<const bf16>(a.b), a.A_log,
        a.dt_bias, ref<float>(a.g), ref<bf16>(a.beta));
    QR_CUDA_TRY(cudaGetLastError());
    return {};
  }

  std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const override {
    const Shape& s = a.shape;
    if (std::string why = unsupported_bwd(a); !why.empty())
      return "conv cudnn: " + why;
    TensorRef<const bf16_t> dxc{a.dx.data, a.dx.stride_b, a.dx.stride_t, a.dx.stride_h};
    Plan* plan = nullptr;
    if (std::string e = get_plan(s, a.x, dxc, true, plan); !e.empty())
      return e;
    QR_CUDNN_TRY(cudnnSetStream(handle_, stream));
    const int C = channels(s);
    const size_t padded = size_t(s.batch) * (s.seq_len + 3) * C;
    const size_t tok = size_t(s.batch) * s.seq_len;
    Carver c{static_cast<char*>(workspace)};
    bf16* z = c.take<bf16>(padded);
    void* ws = c.take<char>(kCudnnWorkspace);
    bf16* dz = c.take<bf16>(padded);
    bf16* dw16 = c.take<bf16>(size_t(C) * kWidth);
    float* cA = c.take<float>(tok * s.value_heads);
    float* cD = c.take<float>(tok * s.value_heads);
    const float one = 1.f, zero = 0.f;
    QR_CUDNN_TRY(cudnnConvolutionForward(handle_, &one, plan->x, a.x.data, plan->w, a.weight,
                                         plan->conv, plan->fwd, ws, kCudnnWorkspace, &zero, plan->y,
                                         z));
    const int64_t warps = int64_t(s.batch) * (s.seq_len + 3) * (2 * s.key_heads + s.value_heads);
    act_bwd_kernel<<<blocks_for(warps * 32), 256, 0, stream>>>(
        z, reinterpret_cast<const bf16*>(a.bias), s.batch, s.seq_len, s.key_heads, s.value_heads,
        s.head_dim_k, ref<const bf16>(a.dq), ref<const bf16>(a.dk), ref<const bf16>(a.dv), dz);
    QR_CUDA_TRY(cudaGetLastError());
    QR_CUDNN_TRY(cudnnConvolutionBackwardData(handle_, &one, plan->w, a.weight, plan->y, dz,
                                              plan->conv, plan->bwd_data, ws, kCudnnWorkspace,
                                              &zero, plan->dx, a.dx.data));
    QR_CUDNN_TRY(cudnnConvolutionBackwardFilter(handle_, &one, plan->x, a.x.data, plan->y, dz,
                                                plan->conv, plan->bwd_filter, ws, kCudnnWorkspace,
                                                &zero, plan->w, dw16));
    widen_kernel<<<blocks_for(C * kWidth), 256, 0, stream>>>(dw16, a.dweight, C * kWidth);
    gates_bwd_kernel<<<blocks_for(int64_t(tok) * s.value_heads), 256, 0, stream>>>(
        s.batch, s.seq_len, s.value_heads, ref<const bf16>(a.a), ref<const bf16>(a.b), a.A_log,
        a.dt_bias, ref<const float>(a.dg), ref<const bf16>(a.dbeta), ref<bf16>(a.da),
        ref<bf16>(a.db), cA, cD);
    gates_reduce_kernel<<<s.value_heads, 256, 0, stream>>>(cA, cD, int64_t(tok), s.value_heads,
                                                           a.dA_log, a.ddt_bias);
    QR_CUDA_TRY(cudaGetLastError());
    return {};
  }

private:
  // Descriptors and algorithms for a shape and x / dx strides, found once (not thread-safe
  // beyond the mutex around the cache).
  std::string get_plan(const Shape& s, const TensorRef<const bf16_t>& x,
                       const TensorRef<const bf16_t>& dx, bool bwd, Plan*& out) const {
    std::lock_guard<std::mutex> lock(mu_);
    if (const std::string& e = cudnn_load_error(); !e.empty())
      return e;
    if (!handle_)
      QR_CUDNN_TRY(cudnnCreate(&handle_));
    const int C = channels(s), B = s.batch, T = s.seq_len;
    const PlanKey key{
        B, T, C, x.stride_b, x.stride_t, bwd ? dx.stride_b : 0, bwd ? dx.stride_t : 0};
    auto it = plans_.find(key);
    if (it != plans_.end() && (!bwd || it->second.have_bwd)) {
      out = &it->second;
      return {};
    }
    Plan& p = plans_[key];
    if (!p.conv) {
      QR_CUDNN_TRY(cudnnCreateTensorDescriptor(&p.x));
      QR_CUDNN_TRY(cudnnCreateTensorDescriptor(&p.dx));
      QR_CUDNN_TRY(cudnnCreateTensorDescriptor(&p.y));
      QR_CUDNN_TRY(cudnnCreateFilterDescriptor(&p.w));
      QR_CUDNN_TRY(cudnnCreateConvolutionDescriptor(&p.conv));
      // n, c, h, w dims; n, c, h, w strides (NHWC with H = 1)
      QR_CUDNN_TRY(cudnnSetTensor4dDescriptorEx(p.x, CUDNN_DATA_BFLOAT16, B, C, 1, T, x.stride_b, 1,
                                                x.stride_b, x.stride_t));
      const int64_t ys = int64_t(T + 3) * C;
      QR_CUDNN_TRY(
          cudnnSetTensor4dDescriptorEx(p.y, CUDNN_DATA_BFLOAT16, B, C, 1, T + 3, ys, 1, ys, C));
      QR_CUDNN_TRY(cudnnSetConvolution2dDescriptor(p.conv, 0, kWidth - 1, 1, 1, 1, 1,
                                                   CUDNN_CROSS_CORRELATION, CUDNN_DATA_FLOAT));
      QR_CUDNN_TRY(cudnnSetConvolutionGroupCount(p.conv, C));
      QR_CUDNN_TRY(cudnnSetConvolutionMathType(p.conv, CUDNN_DEFAULT_MATH));
      // [C, 1, 1, 4] filter: KRSC (NHWC) and KCRS (NCHW) are the same bytes for C/groups = 1.
      std::string why;
      bool found = false;
      for (cudnnTensorFormat_t fmt : {CUDNN_TENSOR_NHWC, CUDNN_TENSOR_NCHW}) {
        QR_CUDNN_TRY(cudnnSetFilter4dDescriptor(p.w, CUDNN_DATA_BFLOAT16, fmt, C, 1, 1, kWidth));
        cudnnConvolutionFwdAlgoPerf_t perf[8];
        int n = 0;
        if (cudnnStatus_t st =
                cudnnFindConvolutionForwardAlgorithm(handle_, p.x, p.w, p.conv, p.y, 8, &n, perf);
            st != CUDNN_STATUS_SUCCESS) {
          why = std::string("cudnnFindConvolutionForwardAlgorithm: ") + cudnnGetErrorString(st);
          continue;
        }
        for (int i = 0; i < n && !found; ++i)
          if (perf[i].status == CUDNN_STATUS_SUCCESS && perf[i].memory <= kCudnnWorkspace)
            p.fwd = perf[i].algo, found = true;
        if (found)
          break;
        why = "no forward algorithm for the grouped bf16 conv";
      }
      if (!found) {
        plans_.erase(key);
        return "cudnn: " + why;
      }
    }
    if (bwd && !p.have_bwd) {
      QR_CUDNN_TRY(cudnnSetTensor4dDescriptorEx(p.dx, CUDNN_DATA_BFLOAT16, B, C, 1, T, dx.stride_b,
                                                1, dx.stride_b, dx.stride_t));
      cudnnConvolutionBwdDataAlgoPerf_t pd[8];
      cudnnConvolutionBwdFilterAlgoPerf_t pf[8];
      int nd = 0, nf = 0;
      QR_CUDNN_TRY(
          cudnnFindConvolutionBackwardDataAlgorithm(handle_, p.w, p.y, p.conv, p.dx, 8, &nd, pd));
      QR_CUDNN_TRY(
          cudnnFindConvolutionBackwardFilterAlgorithm(handle_, p.x, p.y, p.conv, p.w, 8, &nf, pf));
      // Deterministic algorithms first; any working one otherwise (noted in `deterministic`).
      bool okd = false, okf = false;
      for (int pass = 0; pass < 2; ++pass) {
        for (int i = 0; i < nd && !okd; ++i)
          if (pd[i].status == CUDNN_STATUS_SUCCESS && pd[i].memory <= kCudnnWorkspace &&
              (pass || pd[i].determinism == CUDNN_DETERMINISTIC))
            p.bwd_data = pd[i].algo, okd = true, p.deterministic &= pass == 0;
        for (int i = 0; i < nf && !okf; ++i)
          if (pf[i].status == CUDNN_STATUS_SUCCESS && pf[i].memory <= kCudnnWorkspace &&
              (pass || pf[i].determinism == CUDNN_DETERMINISTIC))
            p.bwd_filter = pf[i].algo, okf = true, p.deterministic &= pass == 0;
      }
      if (!okd || !okf)
        return std::string("cudnn: no backward ") + (okd ? "filter" : "data") +
               " algorithm for the grouped bf16 conv";
      p.have_bwd = true;
    }
    out = &p;
    return {};
  }

  mutable std::mutex mu_;
  mutable cudnnHandle_t handle_ = nullptr;
  mutable std::map<PlanKey, Plan> plans_;
};

} // namespace

std::unique_ptr<Backend> make_cudnn_backend() {
  return std::make_unique<CudnnConv>();
}
bool have_cudnn() {
  return true;
}

} // namespace qr::gdn::conv

#else // no cuDNN in this build

namespace qr::gdn::conv {
std::unique_ptr<Backend> make_cudnn_backend() {
  return nullptr;
}
bool have_cudnn() {
  return false;
}
} // namespace qr::gdn::conv

#endif
