// Fused GDN, the parallel stage: everything of one 64-token chunk that does not depend on the
// chunk state, one CTA per (chunk, value head), three CTAs per SM.
//
//   q, k <- l2norm(q), l2norm(k)    (the key head's first value head writes qn, kn; context: rq,
//   rk) G    = cumsum(g)                 (in chunk; pad rows repeat the last real G) Ms   = scale
//   lowerIncl(Q K^T .* D),  D_ij = exp(G_i - G_j) L    = strictLower(diag(beta) (K K^T .* D)) A =
//   (I + L)^-1                (fp32, chunked::invert_unit_lower; context: stored in bf16) u    = A
//   diag(beta) V,  w = A diag(beta exp(G)) K
// Layouts: fused.cuh (Workspace). Tiles are 64 x 128 bf16 with padded rows (kLdD) in shared
// memory; K K^T and Q K^T run on a 4 x 2 grid of 16 x 32 warp tiles, u and w on a 2 x 4 grid of
// 32 x 32.
#include "fused.cuh"

namespace qr::gdn::fused {
namespace {

using chunked::invert_unit_lower;
using chunked::normalize_rows;
using chunked::store_acc_bf16;
using chunked::warp_cumsum64;

// 74.5 KB, three CTAs per SM: Q is dead once Q K^T and qn are out, so its buffer holds the fp32
// inverse and then w; the solve's scratch and the bf16 copies of A never live at the same time.
struct PrepSmem {
  bf16 k[kC * kLdD];
  bf16 v[kC * kLdD];
  union {
    bf16 q[kC * kLdD];
    float ainv[kC * kLdF];
  } qa;
  union {
    struct {
      float lf[kC * kLdF]; // K K^T .* D, strictly lower
      float tmp[1024];
    } solve;
    struct {
      bf16 beta[kC * kLdC];  // A diag(beta)
      bf16 gamma[kC * kLdC]; // A diag(beta exp(G))
    } a;
  } r;
  float g[kC], G[kC], beta[kC], rq[kC], rk[kC];
};
static_assert(sizeof(bf16[kC * kLdD]) == sizeof(float[kC * kLdF]), "Q and A^-1 share a buffer");

// No minimum-blocks hint: with one, ptxas caps at 80 registers and spills; without, it takes 76-80
// and three CTAs still fit an SM's registers.
template <bool kContext> // also write A and the rstd of q, k (training forward, backward)
__global__ void __launch_bounds__(kThreads) prep_kernel(Geo geo, FwdInputs in, Workspace ws) {
  extern __shared__ __align__(16) char smem_raw[];
  PrepSmem& sm = *reinterpret_cast<PrepSmem*>(smem_raw);
  const int n = blockIdx.x, bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int hk = h / geo.group, t0 = n * kC, L = geo.valid(n);
  const int tid = threadIdx.x, warp = tid / 32;
  const size_t row0 = vrow(geo, bh, n), krow0 = krow(geo, bh, n);
  const bool leader = h % geo.group == 0; // writes the key head's normalised q, k

  load_tile_async<kC, kD, kThreads>(sm.k, kLdD, in.k.at(b, t0, hk), in.k.st, L);
  load_tile_async<kC, kD, kThreads>(sm.qa.q, kLdD, in.q.at(b, t0, hk), in.q.st, L);
  load_tile_async<kC, kD, kThreads>(sm.v, kLdD, in.v.at(b, t0, h), in.v.st, L);
  cp_async_commit();
  if (tid < kC) {
    const bool ok = tid < L;
    sm.g[tid] = ok ? *in.g.at(b, t0 + tid, h) : 0.f;
    sm.beta[tid] = ok ? __bfloat162float(*in.beta.at(b, t0 + tid, h)) : 0.f;
    sm.rq[tid] = sm.rk[tid] = 1.f;
  }
  cp_async_wait<0>();
  __syncthreads();
  if (warp == 0)
    warp_cumsum64(sm.g, sm.G);
  if (geo.l2) {
    normalize_rows(sm.k, kLdD, L, sm.rk);
    normalize_rows(sm.qa.q, kLdD, L, sm.rq);
  }
  __syncthreads();

  { // Q K^T -> Ms (bf16, straight to the workspace), then K K^T -> L (fp32, smem); one
    // accumulator at a time keeps three CTAs' registers free of spills
    const int m0 = 16 * (warp % 4), n0 = 32 * (warp / 4);
    Acc<16, 32> x;
    x.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(x, sm.qa.q, kLdD, sm.k, kLdD, m0, n0);
    x.each([&](int r, int c, float& y) {
      const int i = m0 + r, j = n0 + c;
      y = i >= j ? y * geo.scale * __expf(sm.G[i] - sm.G[j]) : 0.f;
    });
    store_acc_bf16(x, ws.ms + (row0 + m0) * kC + n0, kC);
    x.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(x, sm.k, kLdD, sm.k, kLdD, m0, n0);
    x.each([&](int r, int c, float& y) {
      const int i = m0 + r, j = n0 + c;
      sm.r.solve.lf[i * kLdF + j] = i > j ? y * __expf(sm.G[i] - sm.G[j]) : 0.f;
    });
  }
  if (leader) {
    store_tile<kC, kD>(ws.kn + krow0 * kD, kD, sm.k, kLdD);
    store_tile<kC, kD>(ws.qn + krow0 * kD, kD, sm.qa.q, kLdD);
    if (kContext && tid < kC) {
      ws.rq[krow0 + tid] = sm.rq[tid];
      ws.rk[krow0 + tid] = sm.rk[tid];
    }
  }
  __syncthreads(); // Q is dead: its buffer takes A^-1
  for (int i = tid; i < kC * kLdF; i += kThreads)
    sm.qa.ainv[i] = 0.f;
  invert_unit_lower(sm.r.solve.lf, sm.beta, sm.qa.ainv, sm.r.solve.tmp);
  bf16* a_out = kContext ? ws.a + row0 * kC : nullptr;
  for (int e = tid; e < kC * kC; e += kThreads) {
    const int i = e / kC, j = e % kC;
    const float a = sm.qa.ainv[i * kLdF + j], ab = a * sm.beta[j];
    sm.r.a.beta[i * kLdC + j] = __float2bfloat16(ab);
    sm.r.a.gamma[i * kLdC + j] = __float2bfloat16(ab * __expf(sm.G[j]));
    if constexpr (kContext)
      a_out[e] = __float2bfloat16(a);
  }
  __syncthreads();

  // u = A_beta V and w = A_gamma K on a 2 x 4 grid of 32 x 32 warp tiles, staged in V's and A^-1's
  // buffers so that they leave in coalesced 16-byte pieces.
  const int m0 = 32 * (warp % 2), n0 = 32 * (warp / 2);
  Acc<32, 32> acc;
  acc.zero();
  warp_mma<Lay::MK, Lay::KN, kC>(acc, sm.r.a.beta, kLdC, sm.v, kLdD, m0, n0);
  __syncthreads(); // every warp is done with V
  store_acc_bf16(acc, sm.v + m0 * kLdD + n0, kLdD);
  acc.zero();
  warp_mma<Lay::MK, Lay::KN, kC>(acc, sm.r.a.gamma, kLdC, sm.k, kLdD, m0, n0);
  store_acc_bf16(acc, sm.qa.q + m0 * kLdD + n0, kLdD);
  __syncthreads();
  store_tile<kC, kD>(ws.u + row0 * kD, kD, sm.v, kLdD);
  store_tile<kC, kD>(ws.w + row0 * kD, kD, sm.qa.q, kLdD);
  if (tid < kC)
    ws.G[row0 + tid] = sm.G[tid];
}

} // namespace

std::string launch_prep(const Geo& geo, const FwdInputs& in, const Workspace& ws, bool context,
                        cudaStream_t st) {
  const int smem = sizeof(PrepSmem);
  auto kernel = context ? prep_kernel<true> : prep_kernel<false>;
  QR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<dim3(geo.NT, geo.B * geo.Hv), kThreads, smem, st>>>(geo, in, ws);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
