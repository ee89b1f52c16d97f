// Fused GDN, the parallel stage: FLA's context of one 64-token chunk, one CTA per (chunk, key
// head) looping over the group's value heads, three CTAs per SM (56 KB of shared memory and at
// most 85 registers each: 2-5% faster forward than two). Two modes (Prep): inference, and a
// training forward's that also writes the rest of the context (the self-contained backward runs it
// too).
//
// Once per key head, for all of its value heads (G per value head):
//   q, k <- l2norm(q), l2norm(k)    (written as qn, kn; context: rq, rk)
//   G    = cumsum(g)                 (in chunk; pad rows repeat the last real G)
//   K K^T                           (fp32 in registers, kept across the value heads)
// Per value head:
//   L    = strictLower(diag(beta) (K K^T .* D)),  D_ij = exp(G_i - G_j)
//   A    = (I + L)^-1                (fp32, chunked::invert_unit_lower; stored in bf16)
// The scans form u, w and Ms per chunk from these (fused_scan.cu), as FLA's recompute_w_u forms
// u and w from its bf16 A.
// Varlen: the CTA finds its slot's sequence, first token and length by a binary search over
// cu_seqlens and writes them to the chunk map (fused.cuh); an unused slot gets zero tiles (A = I).
// Every CTA flags g > 0 or NaN into the status, the first one also bad cu_seqlens, and in a
// training forward it stamps the context. The backward given a context runs no prep.
// Layouts: fused.cuh (Workspace). Tiles are 64 x 128 bf16 with padded rows (kLdD) in shared memory;
// K K^T runs on a 4 x 2 grid of 16 x 32 warp tiles.
#include "fused.cuh"

namespace qr::gdn::fused {
namespace {

using chunked::invert_unit_lower;
using chunked::normalize_rows;
using chunked::warp_cumsum64;

// 56 KB and 512 bytes per value head (G, beta): Q is dead once qn is out, so its buffer holds each
// head's fp32 inverse.
struct PrepSmem {
  bf16 k[kC * kLdD];
  union {
    bf16 q[kC * kLdD];
    float ainv[kC * kLdF];
  } qa;
  float lf[kC * kLdF]; // K K^T .* D, strictly lower
  float tmp[1024];     // the solve's scratch
  float rq[kC], rk[kC];
  // then G[group][kC], beta[group][kC]
};
static_assert(sizeof(bf16[kC * kLdD]) == sizeof(float[kC * kLdF]), "Q and A^-1 share a buffer");

size_t prep_smem(int group) {
  return sizeof(PrepSmem) + 2 * sizeof(float[kC]) * group;
}

template <Prep kMode>
__global__ void __launch_bounds__(kThreads, 3) prep_kernel(Geo geo, FwdInputs in, Workspace ws) {
  constexpr bool kContext = kMode == Prep::context;
  extern __shared__ __align__(16) char smem_raw[];
  PrepSmem& sm = *reinterpret_cast<PrepSmem*>(smem_raw);
  const int n = blockIdx.x, b = blockIdx.y / geo.Hk, hk = blockIdx.y % geo.Hk;
  const int tid = threadIdx.x, warp = tid / 32;
  const Chunk ch = geo.N ? find_chunk(geo, n) : dense_chunk(geo, b, n);
  const int h0 = hk * geo.group, t0 = ch.t0, L = ch.len;
  const size_t krow0 = krow(geo, b * geo.Hv + h0, n);
  // once per slot: the chunk map; once per run: the offsets, the stamp
  if (blockIdx.y == 0) {
    if (geo.N && tid == 0)
      ws.chunks[n] = encode(ch);
    if (n == 0 && geo.N && !offsets_ok(geo.cu, geo.N, geo.T) && tid == 0)
      atomicOr(ws.status, kBadOffsets);
    if (kContext && n == 0 && tid == 0) {
      int w[kStampWords];
      make_stamp(geo, w);
      for (int i = 0; i < kStampWords; ++i)
        ws.stamp[i] = w[i];
    }
  }

  load_tile_async<kC, kD, kThreads>(sm.k, kLdD, in.k.at(b, t0, hk), in.k.st, L);
  load_tile_async<kC, kD, kThreads>(sm.qa.q, kLdD, in.q.at(b, t0, hk), in.q.st, L);
  cp_async_commit();
  float* const Gs = reinterpret_cast<float*>(smem_raw + sizeof(PrepSmem)); // G of head h0 + j
  float* const betas = Gs + geo.group * kC; // at Gs + j kC, beta at betas + j kC
  bool bad_gate = false;                    // g > 0 or NaN
  for (int e = tid; e < geo.group * kC; e += kThreads) {
    const int hv = e / kC, i = e % kC;
    const bool ok = i < L;
    const float g = ok ? *in.g.at(b, t0 + i, h0 + hv) : 0.f;
    bad_gate |= !(g <= 0.f);
    Gs[e] = g; // g until the cumsum
    betas[e] = ok ? __bfloat162float(*in.beta.at(b, t0 + i, h0 + hv)) : 0.f;
  }
  if (tid < kC)
    sm.rq[tid] = sm.rk[tid] = 1.f;
  cp_async_wait<0>();
  if (__syncthreads_or(bad_gate) && tid == 0)
    atomicOr(ws.status, kBadGate);
  for (int hv = warp; hv < geo.group; hv += kThreads / 32)
    warp_cumsum64(Gs + hv * kC, Gs + hv * kC); // in place: each lane reads its pair first
  if (geo.l2) {
    normalize_rows(sm.k, kLdD, L, sm.rk);
    normalize_rows(sm.qa.q, kLdD, L, sm.rq);
  }
  __syncthreads();

  // K K^T once per key head; each value head applies its own mask.
  const int pm0 = 16 * (warp % 4), pn0 = 32 * (warp / 4);
  Acc<16, 32> kk;
  kk.zero();
  warp_mma<Lay::MK, Lay::NK, kD>(kk, sm.k, kLdD, sm.k, kLdD, pm0, pn0);
  store_tile<kC, kD>(ws.kn + krow0 * kD, kD, sm.k, kLdD);
  store_tile<kC, kD>(ws.qn + krow0 * kD, kD, sm.qa.q, kLdD);
  if (kContext && tid < kC) {
    ws.rq[krow0 + tid] = sm.rq[tid];
    ws.rk[krow0 + tid] = sm.rk[tid];
  }
  __syncthreads(); // Q is dead: its buffer takes A^-1

  for (int hv = 0; hv < geo.group; ++hv) {
    const size_t row0 = vrow(geo, b * geo.Hv + h0 + hv, n);
    const float *G = Gs + hv * kC, *beta = betas + hv * kC;
    kk.each_pair([&](int r, int c, float y0, float y1) {
      const int i = pm0 + r, j = pn0 + c;
      const float gi = G[i];
      const float2 gj = *reinterpret_cast<const float2*>(G + j);
      *reinterpret_cast<float2*>(sm.lf + i * kLdF + j) = make_float2(
          i > j ? y0 * exp_ftz(gi - gj.x) : 0.f, i > j + 1 ? y1 * exp_ftz(gi - gj.y) : 0.f);
    });
    for (int i = tid; i < kC * kLdF / 4; i += kThreads)
      reinterpret_cast<float4*>(sm.qa.ainv)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    invert_unit_lower(sm.lf, beta, sm.qa.ainv, sm.tmp);
    { // A in bf16, column pairs: thread tid has columns j, j + 1 of rows tid / 32 + 8 r
      constexpr int kRowStep = kThreads / (kC / 2);
      static_assert(kThreads % (kC / 2) == 0 && kC % kRowStep == 0);
      const int j = 2 * (tid % (kC / 2));
      bf16* const a_out = ws.a + row0 * kC;
#pragma unroll
      for (int r = 0; r < kC / kRowStep; ++r) {
        const int i = tid / (kC / 2) + kRowStep * r;
        const float2 a = *reinterpret_cast<const float2*>(sm.qa.ainv + i * kLdF + j);
        *reinterpret_cast<__nv_bfloat162*>(a_out + i * kC + j) = __floats2bfloat162_rn(a.x, a.y);
      }
    }
    if (tid < kC)
      ws.G[row0 + tid] = G[tid];
    if (hv + 1 < geo.group)
      __syncthreads(); // every thread is done with this head's inverse
  }
}

} // namespace

std::string launch_prep(const Geo& geo, const FwdInputs& in, const Workspace& ws, Prep mode,
                        cudaStream_t st) {
  const int smem = int(prep_smem(geo.group));
  auto kernel = mode == Prep::context ? prep_kernel<Prep::context> : prep_kernel<Prep::inference>;
  QR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<dim3(geo.NT, geo.B * geo.Hk), kThreads, smem, st>>>(geo, in, ws);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
