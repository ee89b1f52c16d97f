// Chunked GDN, stage 1: the in-chunk WY transform, one CTA per (64-token chunk, value head).
//
//   G = cumsum(g) within the chunk            (natural log; pad rows repeat the last real G)
//   L = strictLower(diag(beta) (K K^T  .*  exp(G_i - G_j)))
//   A = (I + L)^-1                            (fp32, block inverse in invert_unit_lower)
//   u = A diag(beta) V,  w = A diag(beta exp(G)) K
// K is the (optionally l2-normalised) key of the value head's key group. Outputs go to the
// chunk-major workspace (w, u bf16; G fp32) that the scans read.
#include "chunked.cuh"

namespace qr::gdn::chunked {
namespace {

// 74.5 KB, so three CTAs share an SM: the solve's scratch and the bf16 copies of A never live
// at the same time.
struct PrepSmem {
  bf16 k[kC * kLdD];
  bf16 v[kC * kLdD];
  float ainv[kC * kLdF];
  union {
    struct {
      float lf[kC * kLdF]; // K K^T exp(G_i - G_j), strictly lower
      float tmp[1024];
    } solve;
    struct {
      bf16 beta[kC * kLdC];  // A diag(beta)
      bf16 gamma[kC * kLdC]; // A diag(beta exp(G))
    } a;
  } r;
  float g[kC], G[kC], beta[kC];
};

__global__ void __launch_bounds__(kThreads)
    prep_kernel(Geo geo, Ref<const bf16> k, Ref<const bf16> v, Ref<const float> g,
                Ref<const bf16> beta, Workspace ws) {
  extern __shared__ __align__(16) char smem_raw[];
  PrepSmem& sm = *reinterpret_cast<PrepSmem*>(smem_raw);
  const int n = blockIdx.x, bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int hk = h / geo.group, t0 = n * kC, L = geo.valid(n);
  const int tid = threadIdx.x, warp = tid / 32;

  load_tile_async<kC, kD, kThreads>(sm.k, kLdD, k.at(b, t0, hk), k.st, L);
  load_tile_async<kC, kD, kThreads>(sm.v, kLdD, v.at(b, t0, h), v.st, L);
  cp_async_commit();
  if (tid < kC) {
    const bool ok = tid < L;
    sm.g[tid] = ok ? *g.at(b, t0 + tid, h) : 0.f;
    sm.beta[tid] = ok ? __bfloat162float(*beta.at(b, t0 + tid, h)) : 0.f;
  }
  for (int i = tid; i < kC * kLdF; i += kThreads)
    sm.ainv[i] = 0.f;
  cp_async_wait<0>();
  __syncthreads();
  if (warp == 0)
    warp_cumsum64(sm.g, sm.G);
  if (geo.l2)
    normalize_rows(sm.k, kLdD, L, nullptr);
  __syncthreads();

  { // K K^T on a 4 x 2 grid of 16 x 32 warp tiles
    const int m0 = 16 * (warp % 4), n0 = 32 * (warp / 4);
    Acc<16, 32> acc;
    acc.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(acc, sm.k, kLdD, sm.k, kLdD, m0, n0);
    acc.each([&](int r, int c, float& x) {
      const int i = m0 + r, j = n0 + c;
      sm.r.solve.lf[i * kLdF + j] = i > j ? x * __expf(sm.G[i] - sm.G[j]) : 0.f;
    });
  }
  invert_unit_lower(sm.r.solve.lf, sm.beta, sm.ainv, sm.r.solve.tmp);
  for (int e = tid; e < kC * kC; e += kThreads) {
    const int i = e / kC, j = e % kC;
    const float a = sm.ainv[i * kLdF + j] * sm.beta[j];
    sm.r.a.beta[i * kLdC + j] = __float2bfloat16(a);
    sm.r.a.gamma[i * kLdC + j] = __float2bfloat16(a * __expf(sm.G[j]));
  }
  __syncthreads();

  // u = A_beta V and w = A_gamma K on a 2 x 4 grid of 32 x 32 warp tiles.
  const size_t row0 = (size_t(bh) * geo.NT + n) * kC;
  const int m0 = 32 * (warp % 2), n0 = 32 * (warp / 2);
  Acc<32, 32> acc;
  acc.zero();
  warp_mma<Lay::MK, Lay::KN, kC>(acc, sm.r.a.beta, kLdC, sm.v, kLdD, m0, n0);
  store_acc_bf16(acc, ws.u + (row0 + m0) * kD + n0, kD);
  acc.zero();
  warp_mma<Lay::MK, Lay::KN, kC>(acc, sm.r.a.gamma, kLdC, sm.k, kLdD, m0, n0);
  store_acc_bf16(acc, ws.w + (row0 + m0) * kD + n0, kD);
  if (tid < kC)
    ws.G[row0 + tid] = sm.G[tid];
}

} // namespace

std::string launch_prep(const Geo& geo, const FwdInputs& in, const Workspace& ws, cudaStream_t st) {
  const int smem = sizeof(PrepSmem);
  QR_CUDA_TRY(cudaFuncSetAttribute(prep_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  prep_kernel<<<dim3(geo.NT, geo.B * geo.Hv), kThreads, smem, st>>>(geo, in.k, in.v, in.g, in.beta,
                                                                    ws);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::chunked
