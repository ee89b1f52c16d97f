// Fused GDN, the parallel stage: FLA's context of one 64-token chunk, one CTA per (chunk, key
// head) looping over the group's value heads, three CTAs per SM (about 70 KB of shared memory and
// at most 85 registers each: 2-5% faster forward than two). Two modes (Prep): inference, and a
// training forward's that also writes the rest of the context (the self-contained backward runs it
// too).
//
// Once per key head, for all of its value heads (G per value head):
//   q, k <- l2norm(q), l2norm(k)    (written as qn, kn; context: rq, rk)
//   G    = cumsum(g)                 (in chunk; pad rows repeat the last real G)
//   K K^T                           (fp32 in registers, kept across the value heads)
// Per value head, two at a time (every warp forms both L; then each team of four warps inverts
// one, so that two chains of dependent steps share the SM instead of one):
//   L    = strictLower(diag(beta) (K K^T .* D)),  D_ij = exp(G_i - G_j)
//   A    = (I + L)^-1                (fp32, sm80::invert_unit_lower; stored in bf16)
// The scans form u, w and Ms per chunk from these (fused_scan.cu), as FLA's recompute_w_u forms
// u and w from its bf16 A.
// Varlen: the CTA finds its slot's sequence, first token and length by a binary search over
// cu_seqlens and writes them to the chunk map (fused_algorithm.cuh); an unused slot gets zero tiles
// (A = I). Every CTA flags g > 0 or NaN into the status, the first one also bad cu_seqlens, and in
// a training forward it stamps the context. The backward given a context runs no prep. Layouts:
// fused_workspace.cuh (Workspace). Tiles are 64 x 128 bf16 with padded rows (kLdD) in shared
// memory; K K^T runs on a 4 x 2 grid of 16 x 32 warp tiles.
#include "fused_launch.cuh"

namespace qr::gdn::fused {
namespace {

using sm80::invert_unit_lower;
using sm80::normalize_rows;
using sm80::warp_cumsum64;

// 68.5 KB and 512 bytes per value head (G, beta): q and k are dead once qn and kn are out, so their
// buffers hold the teams' fp32 inverses, and the solve's scratch lies above the diagonal of the
// team's L.
struct PrepSmem {
  union QkTile {
    bf16 x[kC * kLdD];
    float ainv[kC * kLdF];
  } q, k;                 // q, k; then team 0's and team 1's A^-1
  float lf[2][kC * kLdF]; // per team: K K^T .* D, strictly lower
  float rq[kC], rk[kC];
  // then G[group][kC], beta[group][kC]
};
static_assert(sizeof(bf16[kC * kLdD]) == sizeof(float[kC * kLdF]), "q and A^-1 share a buffer");
constexpr int kTeamWarps = 4, kTeamThreads = 32 * kTeamWarps;
static_assert(kThreads == 2 * kTeamThreads);

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

  load_tile_async<kC, kD, kThreads>(sm.k.x, kLdD, in.k.at(b, t0, hk), in.k.st, L);
  load_tile_async<kC, kD, kThreads>(sm.q.x, kLdD, in.q.at(b, t0, hk), in.q.st, L);
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
    normalize_rows(sm.k.x, kLdD, L, sm.rk);
    normalize_rows(sm.q.x, kLdD, L, sm.rq);
  }
  __syncthreads();

  // K K^T once per key head; each value head applies its own mask.
  const int pm0 = 16 * (warp % 4), pn0 = 32 * (warp / 4);
  Acc<16, 32> kk;
  kk.zero();
  warp_mma<Lay::MK, Lay::NK, kD>(kk, sm.k.x, kLdD, sm.k.x, kLdD, pm0, pn0);
  store_tile<kC, kD>(ws.kn + krow0 * kD, kD, sm.k.x, kLdD);
  store_tile<kC, kD>(ws.qn + krow0 * kD, kD, sm.q.x, kLdD);
  if (kContext && tid < kC) {
    ws.rq[krow0 + tid] = sm.rq[tid];
    ws.rk[krow0 + tid] = sm.rk[tid];
  }
  __syncthreads(); // q and k are dead: their buffers take the teams' inverses
  // zero once: the inverses' blocks above the diagonal blocks are never written
  for (int i = tid; i < kC * kLdF / 4; i += kThreads) {
    reinterpret_cast<float4*>(sm.q.ainv)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
    reinterpret_cast<float4*>(sm.k.ainv)[i] = make_float4(0.f, 0.f, 0.f, 0.f);
  }

  const int team = warp / kTeamWarps, ttid = tid % kTeamThreads;
  const sm80::Team<kTeamWarps> solver{kTeamWarps * team, 1 + team};
  float* const lf = sm.lf[team];
  float* const ainv = team ? sm.k.ainv : sm.q.ainv;
  for (int pair = 0; pair < geo.group; pair += 2) {
    // both heads' L, by every warp (each holds a tile of K K^T)
    for (int e = 0; e < 2 && pair + e < geo.group; ++e) {
      const float* G = Gs + (pair + e) * kC;
      kk.each_pair([&](int r, int c, float y0, float y1) {
        const int i = pm0 + r, j = pn0 + c;
        const float gi = G[i];
        const float2 gj = *reinterpret_cast<const float2*>(G + j);
        *reinterpret_cast<float2*>(sm.lf[e] + i * kLdF + j) = make_float2(
            i > j ? y0 * exp_ftz(gi - gj.x) : 0.f, i > j + 1 ? y1 * exp_ftz(gi - gj.y) : 0.f);
      });
    }
    __syncthreads();
    if (const int hv = pair + team; hv < geo.group) {
      const size_t row0 = vrow(geo, b * geo.Hv + h0 + hv, n);
      invert_unit_lower(lf, betas + hv * kC, ainv, lf + 32, kLdF, solver);
      // A in bf16, column pairs: team thread ttid has columns j, j + 1 of rows ttid / 32 + 4 r
      constexpr int kRowStep = kTeamThreads / (kC / 2);
      static_assert(kTeamThreads % (kC / 2) == 0 && kC % kRowStep == 0);
      const int j = 2 * (ttid % (kC / 2));
      bf16* const a_out = ws.a + row0 * kC;
#pragma unroll
      for (int r = 0; r < kC / kRowStep; ++r) {
        const int i = ttid / (kC / 2) + kRowStep * r;
        const float2 a = *reinterpret_cast<const float2*>(ainv + i * kLdF + j);
        *reinterpret_cast<__nv_bfloat162*>(a_out + i * kC + j) = __floats2bfloat162_rn(a.x, a.y);
      }
      if (ttid < kC)
        ws.G[row0 + ttid] = Gs[hv * kC + ttid];
    }
    if (pair + 2 < geo.group)
      __syncthreads(); // both teams are done with their L and inverse
  }
}

} // namespace

std::string launch_prep_sm80(const Geo& geo, const FwdInputs& in, const Workspace& ws, Prep mode,
                             cudaStream_t st) {
  const int smem = int(prep_smem(geo.group));
  auto kernel = mode == Prep::context ? prep_kernel<Prep::context> : prep_kernel<Prep::inference>;
  QR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<dim3(geo.NT, geo.B * geo.Hk), kThreads, smem, st>>>(geo, in, ws);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
