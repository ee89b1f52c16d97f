// Device test problem for gdn-bench and the GPU tests (see harness.h).
#include "common.cuh"
#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <type_traits>

namespace qr::gdn {
namespace {

__device__ __forceinline__ uint64_t mix(uint64_t x) { // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
__device__ __forceinline__ float uniform(uint64_t seed, size_t i, int stream) {
  return ((mix(seed ^ mix(i * 4 + stream)) >> 40) + 0.5f) * (1.f / 16777216.f);
}
__device__ __forceinline__ float normal(uint64_t seed, size_t i) {
  const float u1 = uniform(seed, i, 0), u2 = uniform(seed, i, 1);
  return sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
}

enum class Dist { normal, log_sigmoid_normal, sigmoid_uniform };

template <class T>
__global__ void fill_kernel(T* out, size_t n, uint64_t seed, Dist d, float scale) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    float x = normal(seed, i);
    if (d == Dist::log_sigmoid_normal) // log(sigmoid(x)) = -log1p(exp(-x))
      x = -scale * (fmaxf(-x, 0.f) + log1pf(expf(-fabsf(x))));
    else if (d == Dist::sigmoid_uniform)
      x = 1.f / (1.f + expf(-uniform(seed, i, 2)));
    else
      x *= scale;
    if constexpr (std::is_same_v<T, float>)
      out[i] = x;
    else
      out[i] = __float2bfloat16(x);
  }
}

template <class T>
std::string fill(DeviceBuffer& b, size_t n, uint64_t seed, Dist d, float scale) {
  if (std::string e = b.alloc(n * sizeof(T)); !e.empty())
    return e;
  fill_kernel<T><<<1024, 256>>>(b.as<T>(), n, seed, d, scale);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

double to_double(uint16_t bits) {
  uint32_t u = uint32_t(bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

} // namespace

DeviceBuffer::~DeviceBuffer() {
  if (p_)
    cudaFree(p_);
}

std::string DeviceBuffer::alloc(size_t bytes) {
  if (p_)
    cudaFree(p_);
  p_ = nullptr;
  bytes_ = 0;
  if (bytes == 0)
    return {};
  QR_CUDA_TRY(cudaMalloc(&p_, bytes));
  bytes_ = bytes;
  return {};
}

std::string Problem::init(const Shape& s, const Options& o, const InputSpec& in) {
  shape = s;
  opt = o;
  const size_t tok = size_t(s.batch) * s.seq_len;
  const size_t nqk = tok * s.key_heads * s.head_dim_k, nv = tok * s.value_heads * s.head_dim_v;
  const size_t ng = tok * s.value_heads;
  const size_t ns = size_t(s.states()) * s.value_heads * s.head_dim_k * s.head_dim_v;
  const uint64_t sd = in.seed * 1000;
  cu_host.clear();
  if (s.varlen()) {
    cu_host.push_back(0);
    for (int len : in.seq_lens)
      cu_host.push_back(cu_host.back() + len);
    if (in.seq_lens.size() != size_t(s.sequences) || cu_host.back() != s.seq_len)
      return "varlen: " + std::to_string(s.sequences) + " sequence lengths summing to T needed";
  }
  if (std::string e = cu_seqlens.alloc(cu_host.size() * sizeof(int32_t)); !e.empty())
    return e;
  if (!cu_host.empty())
    QR_CUDA_TRY(cudaMemcpy(cu_seqlens.get(), cu_host.data(), cu_host.size() * sizeof(int32_t),
                           cudaMemcpyHostToDevice));
  for (std::string e :
       {fill<bf16>(q, nqk, sd + 1, Dist::normal, in.qk_scale),
        fill<bf16>(k, nqk, sd + 2, Dist::normal, in.qk_scale),
        fill<bf16>(v, nv, sd + 3, Dist::normal, 1.f),
        fill<float>(g, ng, sd + 4, Dist::log_sigmoid_normal, in.g_scale),
        fill<bf16>(beta, ng, sd + 5, Dist::sigmoid_uniform, 1.f),
        fill<bf16>(d_o, nv, sd + 6, Dist::normal, 1.f),
        in.initial_state ? fill<float>(h0, ns, sd + 7, Dist::normal, 0.5f) : h0.alloc(0),
        in.d_final_state ? fill<float>(dht, ns, sd + 8, Dist::normal, 0.5f) : dht.alloc(0),
        this->o.alloc(nv * 2), ht.alloc(ns * 4), dq.alloc(nqk * 2), dk.alloc(nqk * 2),
        dv.alloc(nv * 2), dg.alloc(ng * 4), dbeta.alloc(ng * 2), dh0.alloc(ns * 4)})
    if (!e.empty())
      return e;
  QR_CUDA_TRY(cudaDeviceSynchronize());
  return {};
}

FwdArgs Problem::fwd_args() const {
  const Shape& s = shape;
  FwdArgs a;
  a.shape = s;
  a.opt = opt;
  a.q = dense<const bf16_t>(q.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  a.k = dense<const bf16_t>(k.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  a.v = dense<const bf16_t>(v.as<bf16_t>(), s, s.value_heads, s.head_dim_v);
  a.beta = dense<const bf16_t>(beta.as<bf16_t>(), s, s.value_heads, 1);
  a.g = dense<const float>(g.as<float>(), s, s.value_heads, 1);
  a.initial_state = h0.as<float>();
  a.o = dense<bf16_t>(o.as<bf16_t>(), s, s.value_heads, s.head_dim_v);
  a.final_state = ht.as<float>();
  a.cu_seqlens = cu_seqlens.as<int32_t>();
  return a;
}

BwdArgs Problem::bwd_args() const {
  const FwdArgs f = fwd_args();
  const Shape& s = shape;
  BwdArgs a;
  a.shape = s;
  a.opt = opt;
  a.q = f.q;
  a.k = f.k;
  a.v = f.v;
  a.beta = f.beta;
  a.g = f.g;
  a.initial_state = f.initial_state;
  a.d_o = dense<const bf16_t>(d_o.as<bf16_t>(), s, s.value_heads, s.head_dim_v);
  a.d_final_state = dht.as<float>();
  a.dq = dense<bf16_t>(dq.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  a.dk = dense<bf16_t>(dk.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  a.dv = dense<bf16_t>(dv.as<bf16_t>(), s, s.value_heads, s.head_dim_v);
  a.dbeta = dense<bf16_t>(dbeta.as<bf16_t>(), s, s.value_heads, 1);
  a.dg = dense<float>(dg.as<float>(), s, s.value_heads, 1);
  a.d_initial_state = dh0.as<float>();
  a.cu_seqlens = f.cu_seqlens;
  return a;
}

std::string Problem::poison_outputs() {
  for (DeviceBuffer* b : {&o, &ht, &dq, &dk, &dv, &dg, &dbeta, &dh0})
    QR_CUDA_TRY(cudaMemset(b->get(), 0xff, b->bytes())); // NaN in bf16 and fp32
  return {};
}

std::string Problem::ensure_workspace(size_t bytes) {
  return bytes <= workspace.bytes() ? std::string() : workspace.alloc(bytes);
}

std::string Problem::ensure_saved(size_t bytes) {
  return bytes <= saved.bytes() ? std::string() : saved.alloc(bytes);
}

std::string Problem::poison_saved() {
  QR_CUDA_TRY(cudaMemset(saved.get(), 0xff, saved.bytes()));
  return {};
}

std::string run_pass(const Backend& be, Problem& p, Run r, Stream stream) {
  const size_t need = be.saved_bytes(p.shape);
  if (need > p.saved.bytes() && (r == Run::fwd_train || r == Run::bwd))
    return "the saved context needs " + std::to_string(need) + " bytes, " +
           std::to_string(p.saved.bytes()) + " allocated";
  void* ctx = need ? p.saved.get() : nullptr;
  if (r == Run::fwd || r == Run::fwd_train) {
    FwdArgs a = p.fwd_args();
    a.saved = r == Run::fwd_train ? ctx : nullptr;
    return be.run_fwd(a, p.workspace.get(), stream);
  }
  BwdArgs a = p.bwd_args();
  a.saved = r == Run::bwd ? ctx : nullptr;
  return be.run_bwd(a, p.workspace.get(), stream);
}

cpu::Inputs Problem::to_cpu() const {
  cpu::Inputs in;
  in.shape = shape;
  in.opt = opt;
  in.q = download(q, DType::bf16);
  in.k = download(k, DType::bf16);
  in.v = download(v, DType::bf16);
  in.g = download(g, DType::f32);
  in.beta = download(beta, DType::bf16);
  in.h0 = download(h0, DType::f32);
  in.cu_seqlens = cu_host;
  return in;
}

std::vector<double> download(const DeviceBuffer& b, DType t) {
  const size_t n = b.bytes() / (t == DType::bf16 ? 2 : 4);
  std::vector<double> out(n);
  if (n == 0)
    return out;
  if (t == DType::bf16) {
    std::vector<uint16_t> h(n);
    if (cudaMemcpy(h.data(), b.get(), n * 2, cudaMemcpyDeviceToHost) != cudaSuccess)
      return std::vector<double>(n, NAN);
    for (size_t i = 0; i < n; ++i)
      out[i] = to_double(h[i]);
  } else {
    std::vector<float> h(n);
    if (cudaMemcpy(h.data(), b.get(), n * 4, cudaMemcpyDeviceToHost) != cudaSuccess)
      return std::vector<double>(n, NAN);
    for (size_t i = 0; i < n; ++i)
      out[i] = h[i];
  }
  return out;
}

size_t count_non_finite(const std::vector<double>& a) {
  size_t n = 0;
  for (double x : a)
    n += !std::isfinite(x);
  return n;
}

Error compare(const std::vector<double>& a, const std::vector<double>& ref) {
  Error e;
  if (a.size() != ref.size()) {
    e.non_finite = std::max<size_t>(1, a.size());
    return e;
  }
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    if (!std::isfinite(a[i])) {
      ++e.non_finite;
      continue;
    }
    const double d = a[i] - ref[i];
    e.max_abs = std::max(e.max_abs, std::abs(d));
    num += d * d;
    den += ref[i] * ref[i];
  }
  e.rel_l2 = den > 0 ? std::sqrt(num / den) : std::sqrt(num);
  return e;
}

std::vector<Output> forward_outputs() {
  return {{"o", &Problem::o, DType::bf16}, {"ht", &Problem::ht, DType::f32}};
}

std::vector<Output> backward_outputs() {
  return {{"dq", &Problem::dq, DType::bf16},       {"dk", &Problem::dk, DType::bf16},
          {"dv", &Problem::dv, DType::bf16},       {"dg", &Problem::dg, DType::f32},
          {"dbeta", &Problem::dbeta, DType::bf16}, {"dh0", &Problem::dh0, DType::f32}};
}

std::string device_info(DeviceInfo& info, std::string& name) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count == 0) {
    cudaGetLastError();
    return "no CUDA device";
  }
  cudaDeviceProp prop{};
  QR_CUDA_TRY(cudaGetDeviceProperties(&prop, 0));
  info = {prop.major, prop.minor, prop.multiProcessorCount};
  name = prop.name;
  return {};
}

RunTimer::~RunTimer() {
  if (start_)
    cudaEventDestroy(start_);
  if (stop_)
    cudaEventDestroy(stop_);
}

std::string RunTimer::init(Stream stream) {
  stream_ = stream;
  int l2 = 0;
  QR_CUDA_TRY(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, 0));
  if (std::string e = flush_.alloc(size_t(std::max(l2, 1 << 20)) * 2); !e.empty())
    return e;
  QR_CUDA_TRY(cudaEventCreate(&start_));
  QR_CUDA_TRY(cudaEventCreate(&stop_));
  return {};
}

std::string RunTimer::time(int warmup, int iters, bool flush_l2,
                           const std::function<std::string()>& enqueue, std::vector<float>& ms) {
  for (int it = 0; it < warmup + iters; ++it) {
    if (flush_l2)
      QR_CUDA_TRY(cudaMemsetAsync(flush_.get(), it & 0xff, flush_.bytes(), stream_));
    QR_CUDA_TRY(cudaEventRecord(start_, stream_));
    if (std::string e = enqueue(); !e.empty())
      return e;
    QR_CUDA_TRY(cudaEventRecord(stop_, stream_));
    QR_CUDA_TRY(cudaEventSynchronize(stop_));
    float t = 0;
    QR_CUDA_TRY(cudaEventElapsedTime(&t, start_, stop_));
    if (it >= warmup)
      ms.push_back(t);
  }
  return {};
}

} // namespace qr::gdn
