// Fused GDN, the whole backward after save_scan in ONE kernel on Hopper (sm_90a): bwd_scan
// (fused_bwd_scan_hopper.cu) and bwd_intra (fused_bwd_intra_ws.cu, fused_bwd_intra.cu's algebra)
// per (batch, value head), walking the chunks in reverse with dS in registers, so that dh and
// dv_new never go to HBM, and a group-sum kernel after it for dq and dk.
//
// STATUS: correct (H200, 2026-12-02 02:18 UTC, its first run: gdn-bench --check at seven shapes
// with varlen, gdn-gpu-tests, tile-mma-tests' register-A cases, memcheck / synccheck / initcheck /
// racecheck clean; H100, 2026-12-05, with the streamed group sum: --check at group sizes 2, 3, 4
// and 32, varlen), not yet faster: on the H100 the kernel takes 1.11 ms at 35B and the group sum
// 177 us (2.9 TB/s), a backward of 1.53 ms against 1.42 for save_scan + bwd_scan + bwd_intra_ws;
// at 397B its 64 CTAs leave half the GPU idle. G's masked epilogues branched per 8-column
// diagonal block were correct and slower (1.30 ms, 7% fewer instructions; 2026-12-05, reverted).
// So the backward dispatches to it on sm_90 only when QR_GDN_HOPPER_SCANS names `fused_bwd` (off
// by default; docs/gdn-bench-log.md has the figures and the profile).
//
// ALGEBRA. Per chunk (64 tokens) of value head h, walking down from the last chunk, with S0 the
// state entering the chunk (save_scan's h, bf16), nu its v_new (bf16), dS the gradient of the
// state leaving it (fp32 registers), D_ij = exp(G_i - G_j), Gm = exp(G), El = exp(Gl - G):
//   bwd_scan's chain:  dSL = bf16(dS);  dnu = El .* (K dSL) + T,  T = Ms^T do  (fp32, never
//                      rounded), Ms = scale lowerIncl(Q K^T .* D);  Z = A^T bf16(dnu);
//                      Y = -diag(beta Gm) Z;  dv = beta .* Z;  dS = exp(Gl) dS + Qs^T do + K^T Y,
//                      Qs = bf16(scale diag(Gm) Q).
//   bwd_intra's gradients of the chunk, per value head (its header; the same roundings: dSL, nu,
//   dnu, S0, Ms, dA, t2, Psym are the bf16 operands there too):
//     dq_h = scale Gm .* (do S0^T) + dQK k,      dQK = lowerIncl(scale do nu^T) .* D
//     dk_h = El .* (nu dSL^T) + dQK^T q + beta Gm .* (A^T dw) + Psym k,   dw = -dnu S0^T
//     dA = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)), t2 = dA A^T, dL = -A^T t2,
//     dP = strictLower(dL) .* beta_i D, Psym = dP + dP^T; dbeta, dG and dg as bwd_intra.
//   The changes of numerics, both FlashQLA's too: bwd_intra sums dQK and Psym over the group in
//   fp32 and rounds the sum to bf16 once, here each value head's dQK and Psym are rounded; and
//   dq_h, dk_h (before the l2 backward) are rounded to bf16 per value head into ws.dh's place
//   (this path writes no dh; fp32 rows would need 256 bytes per token and head more workspace
//   than dh and dnu hold), then group_sum_kernel sums them over the group in fp32 in head order,
//   applies the l2 normalisation's backward and rounds once. Whether `gdn-bench --check` holds
//   with that is the first thing to measure. Deterministic: every sum has one owner and an order.
//
// ROLES: 512 threads, four warpgroups, setmaxnreg (sum <= 512 per thread of a warpgroup):
//   S  state (wg 0, kStateRegs)     dS (128 x 128 fp32: four m64n64 accumulators, 128 regs);
//                                   per chunk: dSL into smem (DSB), dS *= exp(Gl), dS += Qs^T do
//                                   with Qs^T's operand from registers (ldmatrix.trans of q,
//                                   scaled and rounded as bwd_scan's Qs: no Qs tile), then per
//                                   64-column slice nb, once Y_nb is in, dS += K^T Y_nb; dh0.
//   V  value chain (wg 1, kValueRegs)  Mt = K Q^T -> Ms^T in registers (the A operand of T), T =
//                                   Ms^T do (register-A wgmma: no Ms tile); per slice nb: X = K
//                                   dSL_nb, dnu_nb = El .* X + T_nb -> smem, Z = A^T dnu_nb ->
//                                   Y_nb (smem, for S) and dv (global); then dw = -dnu S0^T
//                                   (into nu's tile, once G is done with nu), dq_h = scale Gm .*
//                                   (do S0^T) with its dG row dots, + dQK k once G has dQK.
//   G  gradients (wg 2, kGradRegs)  Q K^T (for dQK's dG terms), dQK = do nu^T -> dQK tile; dk_h =
//                                   El .* (nu dSL^T) (cl dots) + dQK^T q; dnu V^T and dw K^T ->
//                                   dA (dbeta column dots with A) in registers; t2 = dA A^T
//                                   (register-A wgmma) -> t2 tile; K K^T; dL = A^T t2 -> dP ->
//                                   Psym tile; dk_h += beta Gm .* (A^T dw) (cw dots) + Psym k;
//                                   the chunk's dg (reverse cumsum) and dbeta.
//   P  producer (wg 3, kProducerRegs)  cp.async of every input tile, each into its buffer as soon
//                                   as the last step's readers release it (Fill: mbarrier pairs).
// ptxas serializes every wgmma of the kernel if any role touches an accumulator, or branches on a
// wait, while one of its products is in flight: so the FREE waits are unconditional (above), S
// scales dS before issuing, and S waits for K^T Y_0 before it waits for Y_1.
// Products: every one m64n64k16 wgmma (hopper_wgmma.cuh's descriptors and 128-byte-swizzled
// tiles). Per chunk 192 k-steps: S 32 (Qs^T do 16, K^T Y 16), V 72 (Mt 8, T 8, X 16, Z 8, dw 16,
// do S0^T 16; dQK k 8 -> 80), G 88 (Q K^T 8, do nu^T 8, nu dSL^T 16, dQK^T q 8, dnu V^T 8, dw K^T
// 8, t2 4, K K^T 8, dL 4, A^T dw 8, Psym k 8). HGMMA instructions in SASS: S 32, V 80, G 88 per
// chunk.
//
// SHARED MEMORY (FusedBwdSmem, static_assert below <= 227 KB with the 1 KB alignment): the
// chain's k and A double-buffered by the step's parity (2 x 16 + 2 x 8 KB), so that chunk n - 1's
// chain never waits for chunk n's gradients to finish with k and A; q, do, v, nu (v_new, then dw),
// dnu, Y (16 KB each), S0 and dSL (two 64 x 128 row halves each, 32 KB each), one 64 x 64 tile for
// dQK, then t2, then Psym (8 KB), the G-owned factors, the partial sums (every entry one owner)
// and the mbarriers: 216 KB of tiles, 222 KB in all. Ms, Qs and dA need no tile (registers, see
// the roles).
//
// HAND-OFFS, all mbarriers completing once per step i (the walk's i-th chunk; ready barriers are
// waited with parity i & 1, the FREE ones for step i - 1 with parity (i - 1) & 1, which at i = 0
// a fresh mbarrier reports complete):
//   DSB (S, 128)      dSL of step i is in            -> V (X), G (nu dSL^T, <S0, dSL>)
//   DSB_FREE (256)    V's X and G's dSL reads done   -> S before writing dSL of step i + 1
//   Y[nb] (V, 128)    Y_nb is in                     -> S (K^T Y_nb); V writes Y of step i + 1
//                                                       after DSB of step i + 1, which S arrives
//                                                       on only after its K^T Y of step i
//   DNU (V, 128)      both dnu slices are in         -> G (dnu V^T)
//   DNU_FREE (G, 128) G's dnu V^T done               -> V before writing dnu of step i + 1
//   NU_READ (G, 128)  G's do nu^T, nu dSL^T done     -> V before writing dw into nu's tile
//   DW (V, 128)       dw is in                       -> G (dw K^T, A^T dw)
//   DQK (G, 128)      dQK is in                      -> V (dQK k)
//   DQK_FREE (V, 128) V's dQK k and dG row dots done -> G before t2 overwrites dQK (step i) and
//                                                       before dQK of step i + 1; G's tail reads
//                                                       V's row dots after it
//   Fills: ka[2] (k, A, G; readers S, V, G: 384), q (S, V, G: 384), do (S, V, G: 384), s0 (V, G:
//   256), nu (G: 128; V's dw writes are ordered by NU_READ / DW), v (G: 128). The producer claims
//   a buffer for step i once step i - 1 (ka: i - 2) released it, in the order ka, q, do, s0, nu, v.
//   In this order some waits are implied by others (the CPU model drops each wait in turn: these
//   alone break nothing): DNU_FREE and the do, s0, v claims by the q claim, DQK by NU_READ. They
//   stay, so that reordering a role's releases cannot break the protocol; each costs one try_wait.
// Within a warpgroup, named barriers (V: 1, G: 2) publish its own tiles to its own products. Every
// writer of a tile that wgmma reads fences (fence.proxy.async) before the barrier that publishes
// it; consumers fence after each Fill's full wait (cp.async lands through the generic proxy).
//
// SCHEDULE per chunk and where the chain overlaps the gradients: the critical chain is S's dSL
// store -> V's X (16 k-steps) -> dnu -> Z (8) -> Y -> S's K^T Y (16) -> the next dSL; T, Mt, Qs^T
// do, and every G product run beside it. The chain waits on the gradients only through single
// buffers: q (V's Mt of step i + 1 needs q, released by G after dQK^T q, mid-step) and do
// (released after V's do S0^T); k and A are double-buffered for that reason. G is the longest role
// (88 k-steps and four epilogues), so the kernel's per-chunk time is expected to be G's, with the
// chain hidden beside it, not the sum of the two kernels' 4.5 + 13.4 us of today.
//
// EXPECTED per chunk and value head at 35B (reasoned, not measured): tensor time 192 k-steps x 32
// cycles (m64n64k16 at 2048 MAC per cycle per SM) = 6,144 cycles = 3.5 us at 1.75 GHz; shared
// memory: the products' operands ~4 KB per k-step from smem except the register-A ones (T, Qs^T
// do, t2: 24 k-steps, 2 KB) = ~5,900 wavefronts, the epilogues' loads and stores ~2,000, the
// producer's 120 KB of copies ~960: ~8,900 wavefronts, 5.1 us at one per cycle. Shared memory, not
// the tensor cores, is the bound at m64n64 (m64n128 products would read each A operand once: the
// next step once it runs); with G's latency-bound epilogues, 6-8 us per chunk and head, against
// FlashQLA's 10.9 and our 4.5 + 13.4 (64 chunks: 0.38-0.51 ms at 35B for this kernel plus ~0.1 ms
// of group sum, against 1.12 ms of bwd_scan + bwd_intra_ws today). Measured on its first run:
// 16.6 us and 11,400 shared wavefronts per chunk and head (1.06 ms), and 164 us of group sum.
//
// VARLEN, SPLIT: varlen as bwd_scan (the chunk map; dS reloaded from the final-state gradient at a
// sequence's last chunk, dh0 saved at its first; rows past a chunk's length are zero-filled and
// never stored), but one CTA walks all of a head's slots, where bwd_scan spreads sequence groups
// over gridDim.z. The in-card split (B Hv <= 32) is not handled: the dispatch keeps the current
// path (seg_bwd + bwd_scan + bwd_intra_ws) there. A value-column split (two CTAs of 64 columns
// per head, dq / dk / dA partial per slice: every gradient is linear in the slices) is the way to
// fill 132 SMs at 397B (64 heads); not written.
#include "fused_hopper.cuh"

namespace qr::gdn::fused {
namespace {

using hopper::Frag;
using hopper::MBarrier;
using hopper::Tile;

using Tq = Tile<kC, kD>; // 64 x 128: q, k, do, v, nu / dw, dnu, Y, and the halves of S0 and dSL
using Ta = Tile<kC, kC>; // 64 x 64: A; dQK, t2, Psym

// Warpgroups by role, and their registers (setmaxnreg): the sum over the four is at most 512.
enum Role { kState = 0, kValue = 1, kGrad = 2, kProducer = 3 };
constexpr int kRoleThreads = 128, kFusedThreads = 4 * kRoleThreads;
constexpr int kStateRegs = 168, kValueRegs = 144, kGradRegs = 176, kProducerRegs = 24;
static_assert(kStateRegs + kValueRegs + kGradRegs + kProducerRegs <= 65536 / kRoleThreads);

// Named barriers of one warpgroup's 128 threads (0 is __syncthreads').
constexpr int kBarValue = 1, kBarGrad = 2;

// G's per-row factors of the chunk: G log2(e), exp(G), exp(Gl - G), beta.
struct Scalars {
  float G2[kC], gam[kC], el[kC], beta[kC];
};

// The chunk's partial sums, each entry with one writer: rows of a 64 x 64 product sit whole in
// one warp (set by it), columns span G's four warps (a slot each).
struct Sums {
  float dg_row[kC];     // G: dQK's row sums, + beta_i times dL's
  float dg_col[4][kC];  // G warp w: dQK's and dL's column sums
  float dgq[2][kC];     // V: dq's row dots with q, by the step's parity (G's tail reads them)
  float db_row[kC];     // G: dL's row sums
  float db_col[4][kC];  // G warp w: column sums of A .* (dnu V^T)
  float cl[kC], cw[kC]; // G: row dots of El .* (nu dSL^T) and of A^T dw with k
  float s0dsl[4];       // G warp w: its part of <S0, dSL>
};

struct alignas(1024) FusedBwdSmem {
  bf16 k[2][kC * kD], a[2][kC * kC]; // by the step's parity
  bf16 q[kC * kD], d_o[kC * kD], v[kC * kD];
  bf16 nu[kC * kD];                     // v_new, then dw
  bf16 s0[2][kC * kD], dsl[2][kC * kD]; // rows 64 c .. 64 c + 63 of S0 and of dSL in half c
  bf16 dnu[kC * kD], y[kC * kD];
  bf16 p[kC * kC]; // dQK, then t2, then Psym
  float G[2][kC];  // with k and A
  Scalars sc;
  Sums sums;
  Fill f_ka[2], f_q, f_do, f_s0, f_nu, f_v;
  MBarrier dsb, dsb_free, y_in[2], dnu_in, dnu_free, nu_read, dw_in, dqk_in, dqk_free;
};
static_assert(sizeof(FusedBwdSmem) + 1024 <= 227 * 1024);

#if QR_GDN_WGMMA
using hopper::fence_async;
using hopper::fence_regs;
using hopper::frag_row;
using hopper::mma64;
using hopper::mma64_rs;
using hopper::mma_wait;
using hopper::pack_bf16x2;
using hopper::RegA;
using hopper::to_reg_a;

// K-steps S0 .. S0 + KS - 1 (16 tokens each) of rows 64 m .. 64 m + 63 of Qs^T = (scale
// diag(exp G) Q)^T as the register A operand: the raw q's transpose (hopper::trans_operand), each
// element rounded to bf16 once after its scaling, as bwd_scan's in-place Qs.
template <int S0, int KS>
__device__ __forceinline__ void qs_t_operand(Tq q, int m, const float* G, float scale,
                                             RegA<KS>& a) {
  hopper::trans_operand<S0>(q, 64 * m, a);
  const int t2 = 2 * (threadIdx.x % 4); // this thread's first token of each 8-token group
#pragma unroll
  for (int s = 0; s < KS; ++s)
#pragma unroll
    for (int e = 0; e < 4; ++e) { // a[s][e]: tokens 16 (S0 + s) + 8 (e / 2) + t2, + 1
      const int t = 16 * (S0 + s) + 8 * (e / 2) + t2;
      const float2 x = bf16x2_to_float2(a[s][e]);
      a[s][e] = pack_bf16x2(x.x * (scale * exp_ftz(G[t])), x.y * (scale * exp_ftz(G[t + 1])));
    }
}

// The thread's two row sums (quad-summed) of x .* t over block c of a 64 x 128 tile, added to s.
__device__ __forceinline__ void add_row_dots(const Frag& x, Tq t, int c, float (&s)[2]) {
  const int r0 = frag_row(0), c0 = 64 * c + 2 * (threadIdx.x % 4);
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    float t0 = 0.f, t1 = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 y = load_bf16x2(&t(r0 + 8 * hi, c0 + 8 * j));
      t0 = fmaf(x.c[0][j][2 * hi], y.x, t0);
      t1 = fmaf(x.c[0][j][2 * hi + 1], y.y, t1);
    }
    s[hi] += quad_sum(t0 + t1);
  }
}

// The column sums over the warp's 16 rows of x, into slot[col] (set, by lanes 0-3).
__device__ __forceinline__ void set_col_sums(const Frag& x, float* slot) {
  const int lane = threadIdx.x % 32;
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const float s0 = column_sum(x.c[0][j][0] + x.c[0][j][2]);
    const float s1 = column_sum(x.c[0][j][1] + x.c[0][j][3]);
    if (lane < 4) {
      slot[8 * j + 2 * lane] = s0;
      slot[8 * j + 2 * lane + 1] = s1;
    }
  }
}

// The thread's rows of x times f[hi].
__device__ __forceinline__ void scale_rows(Frag& x, const float (&f)[2]) {
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      x.c[0][j][e] *= f[e / 2];
}

// An fp32 accumulator (columns c0 .. c0 + 63 of 128) as bf16 to rows r < valid of a [*, 128]
// scratch.
__device__ __forceinline__ void store_rows(Frag& x, bf16* dst, int c0, int valid) {
  hopper::each_pair64(x, [&](int, int r, int c, float& x0, float& x1) {
    if (r < valid)
      *reinterpret_cast<__nv_bfloat162*>(dst + size_t(r) * kD + c0 + c) =
          __floats2bfloat162_rn(x0, x1);
  });
}
#endif

// One CTA per (batch, value head): grid B Hv, kFusedThreads threads. dq_part / dk_part: bf16
// [B, Hv, Tp, Dk] in vrow's rows (in ws.dh's place), before the group sum and the l2 backward.
__global__ void __launch_bounds__(kFusedThreads, 1)
    fused_bwd_hopper_kernel(Geo geo, FwdInputs in, Workspace ws, Ref<const bf16> d_o,
                            const float* dht, float* dh0, bf16* dq_part, bf16* dk_part,
                            Ref<bf16> dv_out, Ref<bf16> db_out, Ref<float> dg_out) {
#if QR_GDN_WGMMA
  extern __shared__ char smem_raw[];
  FusedBwdSmem& sm = hopper::aligned_smem<FusedBwdSmem>(smem_raw);
  const int bh = blockIdx.x, b = bh / geo.Hv, h = bh % geo.Hv;
  const int tid = threadIdx.x % kRoleThreads, role = threadIdx.x / kRoleThreads;
  if (!stamp_ok(geo, ws))
    return;
  const int top = geo.NT - 1, chunks = geo.NT; // step i: slot top - i
  if (threadIdx.x == 0) {
    // a Fill's empty count: the threads of the roles that read it
    auto fill = [](Fill& f, int readers) {
      f.full.init(kRoleThreads);
      f.empty.init(readers * kRoleThreads);
    };
    fill(sm.f_ka[0], 3);
    fill(sm.f_ka[1], 3);
    fill(sm.f_q, 3);
    fill(sm.f_do, 3);
    fill(sm.f_s0, 2);
    fill(sm.f_nu, 1);
    fill(sm.f_v, 1);
    sm.dsb.init(kRoleThreads);
    sm.y_in[0].init(kRoleThreads);
    sm.y_in[1].init(kRoleThreads);
    sm.dnu_in.init(kRoleThreads);
    sm.dnu_free.init(kRoleThreads);
    sm.nu_read.init(kRoleThreads);
    sm.dw_in.init(kRoleThreads);
    sm.dqk_in.init(kRoleThreads);
    sm.dqk_free.init(kRoleThreads);
    sm.dsb_free.init(2 * kRoleThreads); // V and G
  }
  __syncthreads();

  const Ta p_t{sm.p};
  const Tq q_t{sm.q}, do_t{sm.d_o}, v_t{sm.v}, nu_t{sm.nu}, dnu_t{sm.dnu}, y_t{sm.y};
  const Tq s0_t[2] = {{sm.s0[0]}, {sm.s0[1]}}, dsl_t[2] = {{sm.dsl[0]}, {sm.dsl[1]}};
  auto k_of = [&](int i) { return Tq{sm.k[i & 1]}; };
  auto a_of = [&](int i) { return Ta{sm.a[i & 1]}; };
  // The FREE barriers' parity for step i - 1; at i = 0 that is parity 1, which a fresh mbarrier
  // reports complete at once (no conditional wait: a branch beside products in flight makes
  // ptxas serialize every wgmma of the kernel)
  auto prev = [](int i) { return (i - 1) & 1; };

  if (role == kProducer) {
    hopper::set_max_registers<kProducerRegs, false>();
    for (int i = 0; i < chunks; ++i) {
      const int n = top - i;
      const Chunk c = chunk_at(geo, ws, b, n);
      const size_t row0 = vrow(geo, bh, n), krow0 = krow(geo, bh, n);
      Fill& ka = sm.f_ka[i & 1];
      claim(ka, i >> 1);
      hopper::load_tile<kRoleThreads>(k_of(i), ws.kn + krow0 * kD, kD, kC, tid);
      hopper::load_tile<kRoleThreads>(a_of(i), ws.a + row0 * kC, kC, kC, tid);
      if (tid < kC / 4)
        cp_async16(sm.G[i & 1] + 4 * tid, ws.G + row0 + 4 * tid, true);
      commit_async(ka);
      claim(sm.f_q, i);
      hopper::load_tile<kRoleThreads>(q_t, ws.qn + krow0 * kD, kD, kC, tid);
      commit_async(sm.f_q);
      claim(sm.f_do, i);
      hopper::load_tile<kRoleThreads>(do_t, d_o.at(c.b, c.t0, h), d_o.st, c.len, tid);
      commit_async(sm.f_do);
      claim(sm.f_s0, i);
      const bf16* s0 = ws.h + (size_t(bh) * geo.NT + n) * kD * kD;
      hopper::load_tile<kRoleThreads>(s0_t[0], s0, kD, kC, tid);
      hopper::load_tile<kRoleThreads>(s0_t[1], s0 + kC * kD, kD, kC, tid);
      commit_async(sm.f_s0);
      claim(sm.f_nu, i);
      hopper::load_tile<kRoleThreads>(nu_t, ws.nu + row0 * kD, kD, kC, tid);
      commit_async(sm.f_nu);
      claim(sm.f_v, i);
      hopper::load_tile<kRoleThreads>(v_t, in.v.at(c.b, c.t0, h), in.v.st, c.len, tid);
      commit_async(sm.f_v);
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory"); // nothing in flight at the exit
    return;
  }

  if (role == kState) {
    hopper::set_max_registers<kStateRegs, true>();
    Frag dS[2][2]; // [slice nb][Dk block m]: dS rows 64 m .., columns 64 nb ..
    {
      const Chunk c0 = chunk_at(geo, ws, b, top);
      const float* at = c0.last ? state_of(dht, geo, c0, h, 0) : nullptr;
#pragma unroll
      for (int nb = 0; nb < 2; ++nb)
        hopper::load_slice(dS[nb], at ? at + 64 * nb : nullptr, kD);
    }
    for (int i = 0; i < chunks; ++i) {
      const Chunk cur = chunk_at(geo, ws, b, top - i);
      if (i > 0 && cur.last) { // varlen: this slot ends a sequence
        const float* at = state_of(dht, geo, cur, h, 0);
#pragma unroll
        for (int nb = 0; nb < 2; ++nb)
          hopper::load_slice(dS[nb], at ? at + 64 * nb : nullptr, kD);
      }
      landed(sm.f_ka[i & 1], i >> 1);
      const float* G = sm.G[i & 1];
      const float decay = exp_ftz(G[kC - 1]);
      sm.dsb_free.wait(prev(i));
#pragma unroll
      for (int nb = 0; nb < 2; ++nb)
#pragma unroll
        for (int m = 0; m < 2; ++m)
          hopper::each_pair64(dS[nb][m], [&](int, int r, int c, float& x0, float& x1) {
            hopper::store_pair(dsl_t[m], r, 64 * nb + c, x0, x1);
          });
      fence_async();
      sm.dsb.arrive();

      landed(sm.f_q, i);
      landed(sm.f_do, i);
      // dS = exp(Gl) dS + Qs^T do, one Dk block at a time (its operand's registers are reused);
      // no accumulator is touched while a product is in flight (ptxas would serialize them all)
#pragma unroll
      for (int nb = 0; nb < 2; ++nb)
#pragma unroll
        for (int m = 0; m < 2; ++m)
          dS[nb][m].each([&](int, int, float& x) { x *= decay; });
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        RegA<2> qs; // two k-steps at a time: S's registers hold dS
        qs_t_operand<0>(q_t, m, G, geo.scale, qs);
#pragma unroll
        for (int nb = 0; nb < 2; ++nb)
          mma64_rs<Lay::KN, 0>(dS[nb][m], qs, do_t.block(nb));
        mma_wait(dS[0][m], dS[1][m]);
        fence_regs(qs);
        qs_t_operand<2>(q_t, m, G, geo.scale, qs);
#pragma unroll
        for (int nb = 0; nb < 2; ++nb)
          mma64_rs<Lay::KN, 2>(dS[nb][m], qs, do_t.block(nb));
        mma_wait(dS[0][m], dS[1][m]);
        fence_regs(qs);
      }
      release(sm.f_q);
      release(sm.f_do);
      // dS += K^T Y, slice by slice as V hands them over; nothing is in flight while S waits for
      // a slice (a spin on an mbarrier beside a product in flight serializes every product)
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
        sm.y_in[nb].wait(i & 1);
#pragma unroll
        for (int m = 0; m < 2; ++m)
          mma64<Lay::KM, Lay::KN, kC>(dS[nb][m], k_of(i).block(m), y_t.block(nb));
        mma_wait(dS[nb][0], dS[nb][1]);
      }
      release(sm.f_ka[i & 1]);
      if (cur.first)
        if (float* at = state_of(dh0, geo, cur, h, 0))
#pragma unroll
          for (int nb = 0; nb < 2; ++nb)
            hopper::save_slice(dS[nb], at + 64 * nb, kD);
    }
    return;
  }

  if (role == kValue) {
    hopper::set_max_registers<kValueRegs, true>();
    for (int i = 0; i < chunks; ++i) {
      const int n = top - i;
      const Chunk cur = chunk_at(geo, ws, b, n);
      const Tq k_t = k_of(i);
      const Ta a_t = a_of(i);
      landed(sm.f_ka[i & 1], i >> 1);
      const float* G = sm.G[i & 1];
      landed(sm.f_q, i);
      RegA<4> ms; // Ms^T: Mt = K Q^T, row j (key token), column i (query token)
      {
        Frag mt;
        mt.zero();
        mma64<Lay::MK, Lay::NK, kD>(mt, k_t, q_t);
        mma_wait(mt);
        float gj[2];
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          gj[hi] = G[frag_row(hi)];
        hopper::each_pair64(mt, [&](int hi, int r, int c, float& x0, float& x1) {
          x0 = c >= r ? geo.scale * x0 * exp_ftz(G[c] - gj[hi]) : 0.f;
          x1 = c + 1 >= r ? geo.scale * x1 * exp_ftz(G[c + 1] - gj[hi]) : 0.f;
        });
        to_reg_a(mt, ms);
      }
      landed(sm.f_do, i);
      Frag T[2];
#pragma unroll
      for (int nb = 0; nb < 2; ++nb) {
        T[nb].zero();
        mma64_rs<Lay::KN>(T[nb], ms, do_t.block(nb));
      }
      float el[2], bt[2], bg[2]; // per fragment row: exp(Gl - G), beta, -beta exp(G)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int r = frag_row(hi);
        el[hi] = exp_ftz(G[kC - 1] - G[r]);
        bt[hi] = r < cur.len ? __bfloat162float(*in.beta.at(cur.b, cur.t0 + r, h)) : 0.f;
        bg[hi] = -bt[hi] * exp_ftz(G[r]);
      }
      sm.dsb.wait(i & 1);
      Frag X, Z;
      auto k_dsl = [&](int nb) { // X = K dSL_nb over both Dk halves
        X.zero();
#pragma unroll
        for (int c = 0; c < 2; ++c)
          mma64<Lay::MK, Lay::KN, 64>(X, k_t.block(c), dsl_t[c].block(nb));
      };
      auto dnu_slice = [&](int nb) { // dnu_nb = El .* X + T_nb into its tile, then Z = A^T dnu_nb
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            X.c[0][j][e] = el[e / 2] * X.c[0][j][e] + T[nb].c[0][j][e];
        hopper::each_pair64(X, [&](int, int r, int c, float& x0, float& x1) {
          hopper::store_pair(dnu_t, r, 64 * nb + c, x0, x1);
        });
        fence_async();
        hopper::bar_sync(kBarValue, kRoleThreads);
        Z.zero();
        mma64<Lay::KM, Lay::KN, kC>(Z, a_t, dnu_t.block(nb));
      };
      auto y_slice = [&](int nb) { // Y_nb for S, dv's columns 64 nb ..
        hopper::each_pair64(Z, [&](int hi, int r, int c, float& x0, float& x1) {
          hopper::store_pair(y_t, r, 64 * nb + c, bg[hi] * x0, bg[hi] * x1);
        });
        fence_async();
        sm.y_in[nb].arrive();
        hopper::each_pair64(Z, [&](int hi, int r, int c, float& x0, float& x1) {
          if (r < cur.len)
            *reinterpret_cast<__nv_bfloat162*>(dv_out.at(cur.b, cur.t0 + r, h) + 64 * nb + c) =
                __floats2bfloat162_rn(bt[hi] * x0, bt[hi] * x1);
        });
      };
      k_dsl(0);
      mma_wait(X, T[0], T[1]);
      fence_regs(ms);
      sm.dnu_free.wait(prev(i));
      dnu_slice(0);
      k_dsl(1);
      mma_wait<2>(Z);
      y_slice(0);
      mma_wait(X);
      sm.dsb_free.arrive();
      dnu_slice(1);
      mma_wait(Z);
      y_slice(1);
      sm.dnu_in.arrive();

      // dw = -dnu S0^T into nu's tile, once G is done with nu
      landed(sm.f_s0, i);
      Frag W[2];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        W[c].zero();
        mma64<Lay::MK, Lay::NK, kD>(W[c], dnu_t, s0_t[c]);
      }
      mma_wait(W[0], W[1]);
      sm.nu_read.wait(i & 1);
#pragma unroll
      for (int c = 0; c < 2; ++c)
        hopper::each_pair64(W[c], [&](int, int r, int col, float& x0, float& x1) {
          hopper::store_pair(nu_t, r, 64 * c + col, -x0, -x1);
        });
      fence_async();
      sm.dw_in.arrive();

      // dq_h = scale Gm .* (do S0^T) + dQK k, with dG's row dots of the first term with q
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        W[c].zero();
        mma64<Lay::MK, Lay::NK, kD>(W[c], do_t, s0_t[c]);
      }
      mma_wait(W[0], W[1]);
      release(sm.f_s0);
      float f[2], s[2] = {0.f, 0.f};
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
        f[hi] = geo.scale * exp_ftz(G[frag_row(hi)]);
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        add_row_dots(W[c], q_t, c, s);
        scale_rows(W[c], f);
      }
      if (tid % 4 == 0)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          sm.sums.dgq[i & 1][frag_row(hi)] = s[hi] * f[hi];
      release(sm.f_do);
      release(sm.f_q);
      sm.dqk_in.wait(i & 1);
#pragma unroll
      for (int c = 0; c < 2; ++c)
        mma64<Lay::MK, Lay::KN, kC>(W[c], p_t, k_t.block(c));
      mma_wait(W[0], W[1]);
      sm.dqk_free.arrive();
      release(sm.f_ka[i & 1]);
      bf16* dq = dq_part + vrow(geo, bh, n) * kD;
#pragma unroll
      for (int c = 0; c < 2; ++c)
        store_rows(W[c], dq, 64 * c, cur.len);
    }
    return;
  }

  // role == kGrad
  hopper::set_max_registers<kGradRegs, true>();
  const int warp = tid / 32, lane = tid % 32;
  auto sync = [] { hopper::bar_sync(kBarGrad, kRoleThreads); };
  Scalars& sc = sm.sc;
  Sums& su = sm.sums;
  for (int i = 0; i < chunks; ++i) {
    const int n = top - i;
    const Chunk cur = chunk_at(geo, ws, b, n);
    const int L = cur.len;
    const Tq k_t = k_of(i);
    const Ta a_t = a_of(i);
    landed(sm.f_ka[i & 1], i >> 1);
    if (tid < kC) { // the chunk's factors (the last step's tail is done with them)
      const float g = sm.G[i & 1][tid];
      sc.G2[tid] = g * kLog2e;
      sc.gam[tid] = __expf(g);
      sc.el[tid] = __expf(sm.G[i & 1][kC - 1] - g);
      sc.beta[tid] = tid < L ? __bfloat162float(*in.beta.at(cur.b, cur.t0 + tid, h)) : 0.f;
    }
    landed(sm.f_q, i);
    Frag qk, dk[2], a1, a2;
    qk.zero();
    mma64<Lay::MK, Lay::NK, kD>(qk, q_t, k_t);
    landed(sm.f_do, i);
    landed(sm.f_nu, i);
    a1.zero(); // do nu^T
    mma64<Lay::MK, Lay::NK, kD>(a1, do_t, nu_t);
    sm.dsb.wait(i & 1);
    landed(sm.f_s0, i);
    { // <S0, dSL> for dG_last, in 16-byte pieces (the tiles share one layout), beside the products
      float s0 = 0.f, s1 = 0.f;
#pragma unroll 4
      for (int it = 0; it < 2 * kC * kD / 8 / kRoleThreads; ++it) {
        const int at = 8 * (tid + it * kRoleThreads); // over both halves, one after the other
        const uint4 x4 = *reinterpret_cast<const uint4*>(sm.s0[0] + at);
        const uint4 d4 = *reinterpret_cast<const uint4*>(sm.dsl[0] + at);
        const uint32_t xw[4] = {x4.x, x4.y, x4.z, x4.w}, dw[4] = {d4.x, d4.y, d4.z, d4.w};
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const float2 u = bf16x2_to_float2(xw[e]), d = bf16x2_to_float2(dw[e]);
          s0 = fmaf(u.x, d.x, s0);
          s1 = fmaf(u.y, d.y, s1);
        }
      }
      const float sum = warp_sum(s0 + s1);
      if (lane == 0)
        su.s0dsl[warp] = sum;
    }
    release(sm.f_s0);
    sync(); // the factors are in
    mma_wait(qk, a1);
    release(sm.f_do);
    // dQK = lowerIncl(scale do nu^T) .* D into its tile (once V is done with the last one), dG's
    // terms d .* (Q K^T): row sums (set) and column sums (slot of this warp)
    sm.dqk_free.wait(prev(i));
    {
      float rs[2] = {0.f, 0.f};
      const int r0 = frag_row(0), c0 = 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int r = r0 + 8 * hi, c = c0 + 8 * j;
          float& x0 = a1.c[0][j][2 * hi];
          float& x1 = a1.c[0][j][2 * hi + 1];
          const float d0 = r >= c ? geo.scale * x0 * exp2_ftz(sc.G2[r] - sc.G2[c]) : 0.f;
          const float d1 = r >= c + 1 ? geo.scale * x1 * exp2_ftz(sc.G2[r] - sc.G2[c + 1]) : 0.f;
          hopper::store_pair(p_t, r, c, d0, d1);
          x0 = -d0 * qk.c[0][j][2 * hi];
          x1 = -d1 * qk.c[0][j][2 * hi + 1];
          rs[hi] -= x0 + x1;
        }
      set_col_sums(a1, su.dg_col[warp]);
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const float t = quad_sum(rs[hi]);
        if (lane % 4 == 0)
          su.dg_row[frag_row(hi)] = t;
      }
    }
    fence_async();
    sync();
    sm.dqk_in.arrive();
#pragma unroll
    for (int c = 0; c < 2; ++c) { // nu dSL^T (issued after dQK's epilogue: G's registers)
      dk[c].zero();
      mma64<Lay::MK, Lay::NK, kD>(dk[c], nu_t, dsl_t[c]);
    }
    mma_wait(dk[0], dk[1]);
    sm.nu_read.arrive();
    sm.dsb_free.arrive();
    { // dk_h = El .* (nu dSL^T), its row dots with k to cl
      float el[2], s[2] = {0.f, 0.f};
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
        el[hi] = sc.el[frag_row(hi)];
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        scale_rows(dk[c], el);
        add_row_dots(dk[c], k_t, c, s);
      }
      if (lane % 4 == 0)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          su.cl[frag_row(hi)] = s[hi];
    }
#pragma unroll
    for (int c = 0; c < 2; ++c) // dk_h += dQK^T q
      mma64<Lay::KM, Lay::KN, kC>(dk[c], p_t, q_t.block(c));
    sm.dnu_in.wait(i & 1);
    landed(sm.f_v, i);
    a1.zero(); // dnu V^T
    mma64<Lay::MK, Lay::NK, kD>(a1, dnu_t, v_t);
    sm.dw_in.wait(i & 1);
    a2.zero(); // dw K^T
    mma64<Lay::MK, Lay::NK, kD>(a2, nu_t, k_t);
    mma_wait(dk[0], dk[1], a1, a2);
    release(sm.f_q);
    release(sm.f_v);
    sm.dnu_free.arrive();
    RegA<4> da; // dA = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)); dbeta's column dots
    {
      const int r0 = frag_row(0), c0 = 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < 8; ++j) { // column sums of A .* (dnu V^T) over the warp's rows
        const float2 a0 = hopper::load_pair(a_t, r0, c0 + 8 * j);
        const float2 a8 = hopper::load_pair(a_t, r0 + 8, c0 + 8 * j);
        const float s0 = column_sum(a1.c[0][j][0] * a0.x + a1.c[0][j][2] * a8.x);
        const float s1 = column_sum(a1.c[0][j][1] * a0.y + a1.c[0][j][3] * a8.y);
        if (lane < 4) {
          su.db_col[warp][8 * j + c0] = s0;
          su.db_col[warp][8 * j + c0 + 1] = s1;
        }
      }
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + 8 * (e / 2), c = c0 + 8 * j + e % 2;
          a1.c[0][j][e] = r >= c ? sc.beta[c] * (a1.c[0][j][e] + sc.gam[c] * a2.c[0][j][e]) : 0.f;
        }
      to_reg_a(a1, da);
    }
    a2.zero(); // t2 = dA A^T
    mma64_rs<Lay::NK>(a2, da, a_t);
    mma_wait(a2);
    fence_regs(da);
    sm.dqk_free.wait(i & 1); // V is done with dQK
    sync();                  // and so is every G warp (dQK^T q)
    hopper::each_pair64(a2, [&](int, int r, int c, float& x0, float& x1) {
      hopper::store_pair(p_t, r, c, x0, x1);
    });
    fence_async();
    sync();
    a1.zero(); // K K^T, for dL's dG terms (symmetric: (j, i) is (i, j))
    mma64<Lay::MK, Lay::NK, kD>(a1, k_t, k_t);
    a2.zero(); // dL = -A^T t2, the sign below
    mma64<Lay::KM, Lay::KN, kC>(a2, a_t, p_t);
    mma_wait(a2, a1);
    sync(); // every warp's reads of t2 are done: Psym takes its place
    { // dP = strictLower(dL) .* beta_i D -> Psym (both triangles); dbeta rows, dG rows / columns
      float rs[2] = {0.f, 0.f};
      const int r0 = frag_row(0), c0 = 2 * (lane % 4);
#pragma unroll
      for (int j = 0; j < 8; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
          const int r = r0 + 8 * (e / 2), c = c0 + 8 * j + e % 2;
          const float d = r > c ? -a2.c[0][j][e] * exp2_ftz(sc.G2[r] - sc.G2[c]) : 0.f;
          const bf16 dp = __float2bfloat16(d * sc.beta[r]);
          if (r >= c) {
            p_t(r, c) = dp;
            p_t(c, r) = dp;
          }
          const float x = d * a1.c[0][j][e];
          rs[e / 2] += x;
          a2.c[0][j][e] = -x * sc.beta[r];
        }
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const float t = quad_sum(rs[hi]);
        const int r = frag_row(hi);
        if (lane % 4 == 0) {
          su.db_row[r] = t;
          su.dg_row[r] += sc.beta[r] * t;
        }
      }
      // dL's column terms into this warp's slot, after its dQK column sums
      const int lane4 = lane % 4;
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float s0 = column_sum(a2.c[0][j][0] + a2.c[0][j][2]);
        const float s1 = column_sum(a2.c[0][j][1] + a2.c[0][j][3]);
        if (lane < 4) {
          su.dg_col[warp][8 * j + 2 * lane4] += s0;
          su.dg_col[warp][8 * j + 2 * lane4 + 1] += s1;
        }
      }
    }
    fence_async();
    sync();
    { // dk_h += beta Gm .* (A^T dw), its row dots with k to cw
      float f[2], s[2] = {0.f, 0.f};
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int r = frag_row(hi);
        f[hi] = sc.beta[r] * sc.gam[r];
      }
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        a1.zero();
        mma64<Lay::KM, Lay::KN, kC>(a1, a_t, nu_t.block(c));
        mma_wait(a1);
        add_row_dots(a1, k_t, c, s);
#pragma unroll
        for (int j = 0; j < 8; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e)
            dk[c].c[0][j][e] = fmaf(a1.c[0][j][e], f[e / 2], dk[c].c[0][j][e]);
      }
      if (lane % 4 == 0)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          su.cw[frag_row(hi)] = s[hi];
    }
    release(sm.f_nu);
#pragma unroll
    for (int c = 0; c < 2; ++c) // dk_h += Psym k
      mma64<Lay::MK, Lay::KN, kC>(dk[c], p_t, k_t.block(c));
    mma_wait(dk[0], dk[1]);
    release(sm.f_ka[i & 1]);
    bf16* dk_rows = dk_part + vrow(geo, bh, n) * kD;
#pragma unroll
    for (int c = 0; c < 2; ++c)
      store_rows(dk[c], dk_rows, 64 * c, L);

    // the chunk's tail: dg (reverse cumsum of dG) by warp 0, dbeta by warp 1
    sync(); // every partial sum is in (V's dq row dots came before its DQK_FREE)
    if (warp == 0) {
      float d[2], cl_sum = 0.f;
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int r = 2 * lane + x;
        float col = 0.f;
#pragma unroll
        for (int w = 0; w < 4; ++w)
          col += su.dg_col[w][r];
        cl_sum += su.cl[r];
        d[x] = su.dg_row[r] + col + su.dgq[i & 1][r] - su.cl[r] + sc.beta[r] * sc.gam[r] * su.cw[r];
      }
      cl_sum = warp_sum(cl_sum);
      const float s0dsl = su.s0dsl[0] + su.s0dsl[1] + su.s0dsl[2] + su.s0dsl[3];
#pragma unroll
      for (int x = 0; x < 2; ++x)
        if (2 * lane + x == L - 1)
          d[x] += cl_sum + sc.gam[kC - 1] * s0dsl;
      float dg[2];
      reverse_cumsum_pairs(d, lane, dg);
#pragma unroll
      for (int x = 0; x < 2; ++x)
        if (2 * lane + x < L)
          *dg_out.at(cur.b, cur.t0 + 2 * lane + x, h) = dg[x];
    } else if (warp == 1) {
#pragma unroll
      for (int x = 0; x < 2; ++x) {
        const int r = 2 * lane + x;
        float col = 0.f;
#pragma unroll
        for (int w = 0; w < 4; ++w)
          col += su.db_col[w][r];
        if (r < L)
          *db_out.at(cur.b, cur.t0 + r, h) =
              __float2bfloat16(su.db_row[r] + col + sc.gam[r] * su.cw[r]);
      }
    }
    sync(); // the tail is done with the sums and the factors
  }
#endif
}

// dq, dk of key head hk at token t: the sum over the group's value heads (in head order, fp32)
// of the fused kernel's per-head rows, through the l2 normalisation's backward, dx = rstd (dxn -
// xn (xn . dxn)), rounded to bf16 once. Sixteen threads per (b, key head, slot row), eight columns
// (16 bytes) a thread, every load of the row (both parts of each head, xn, rstd) issued before the
// first sum: a pure stream, so that it runs at HBM speed. kGroup is the group size, or 0 for one
// read from geo at run time (a loop). Rows past their chunk's length (and unused varlen slots) are
// skipped.
constexpr int kSumLanes = kD / 8; // threads per row

template <int kGroup>
__global__ void __launch_bounds__(256)
    group_sum_kernel(Geo geo, Workspace ws, const bf16* dq_part, const bf16* dk_part,
                     Ref<bf16> dq_out, Ref<bf16> dk_out) {
  const int part = threadIdx.x % kSumLanes;
  const size_t row = (size_t(blockIdx.x) * blockDim.x + threadIdx.x) / kSumLanes;
  if (row >= size_t(geo.B) * geo.Hk * geo.NT * kC)
    return;
  const int r = int(row % kC), n = int(row / kC % geo.NT), bk = int(row / kC / geo.NT);
  const int b = bk / geo.Hk, hk = bk % geo.Hk;
  const Chunk c = chunk_at(geo, ws, b, n);
  if (r >= c.len) // the half warp of a row leaves together: the shuffles below span one row
    return;
  const size_t krow0 = (size_t(bk) * geo.NT + n) * kC + r;
  const size_t head0 = vrow(geo, b * geo.Hv + hk * geo.group, n) + r; // the group's first head
  const size_t head_step = size_t(geo.NT) * kC * kD;                  // one value head's rows
  const size_t at = head0 * kD + 8 * part;
  auto add8 = [](const uint4 x, float(&s)[8]) {
    const uint32_t w[4] = {x.x, x.y, x.z, x.w};
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const float2 f = bf16x2_to_float2(w[e]);
      s[2 * e] += f.x;
      s[2 * e + 1] += f.y;
    }
  };
  float sq[8] = {}, sk[8] = {};
  if constexpr (kGroup > 0) {
    uint4 xq[kGroup], xk[kGroup];
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      xq[g] = __ldcs(reinterpret_cast<const uint4*>(dq_part + at + g * head_step));
      xk[g] = __ldcs(reinterpret_cast<const uint4*>(dk_part + at + g * head_step));
    }
#pragma unroll
    for (int g = 0; g < kGroup; ++g) {
      add8(xq[g], sq);
      add8(xk[g], sk);
    }
  } else {
    for (int g = 0; g < geo.group; ++g) {
      add8(__ldcs(reinterpret_cast<const uint4*>(dq_part + at + g * head_step)), sq);
      add8(__ldcs(reinterpret_cast<const uint4*>(dk_part + at + g * head_step)), sk);
    }
  }
  const uint32_t half = 0xffffu << (threadIdx.x % 32 & 16); // this row's 16 lanes
  auto finish = [&](const float(&s)[8], const bf16* xn, const float* rstd, Ref<bf16> out) {
    float y[8] = {}, rs = 1.f, dot = 0.f;
    if (geo.l2) {
      add8(*reinterpret_cast<const uint4*>(xn + krow0 * kD + 8 * part), y);
      rs = rstd[krow0];
#pragma unroll
      for (int e = 0; e < 8; ++e)
        dot = fmaf(y[e], s[e], dot);
#pragma unroll
      for (int o = kSumLanes / 2; o > 0; o >>= 1)
        dot += __shfl_xor_sync(half, dot, o);
    }
    __nv_bfloat162 w[4];
#pragma unroll
    for (int e = 0; e < 4; ++e)
      w[e] = __floats2bfloat162_rn(rs * (s[2 * e] - y[2 * e] * dot),
                                   rs * (s[2 * e + 1] - y[2 * e + 1] * dot));
    *reinterpret_cast<uint4*>(out.at(c.b, c.t0 + r, hk) + 8 * part) =
        *reinterpret_cast<const uint4*>(w);
  };
  finish(sq, ws.qn, ws.rq, dq_out);
  finish(sk, ws.kn, ws.rk, dk_out);
}

} // namespace

std::string launch_fused_bwd_hopper(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                                    Ref<const bf16> d_o, const BwdArgs& out, cudaStream_t st) {
  const int smem = sizeof(FusedBwdSmem) + 1024; // + the 1024-byte alignment
  QR_CUDA_TRY(cudaFuncSetAttribute(fused_bwd_hopper_kernel,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  // the per-head dq, dk rows in dh's place, which this path never writes: [B Hv Tp Dk] each,
  // dh's [B Hv NT Dk Dv] holding both
  const size_t part = size_t(geo.B) * geo.Hv * geo.NT * kC * kD;
  bf16* const dq_part = ws.dh;
  bf16* const dk_part = ws.dh + part;
  fused_bwd_hopper_kernel<<<geo.B * geo.Hv, kFusedThreads, smem, st>>>(
      geo, in, ws, d_o, out.d_final_state, out.d_initial_state, dq_part, dk_part, ref<bf16>(out.dv),
      ref<bf16>(out.dbeta), ref<float>(out.dg));
  QR_CUDA_TRY(cudaGetLastError());
  const size_t rows = size_t(geo.B) * geo.Hk * geo.NT * kC;
  constexpr int kBlock = 256;
  const int blocks = int((rows * kSumLanes + kBlock - 1) / kBlock);
  auto sum = geo.group == 1   ? group_sum_kernel<1>
             : geo.group == 2 ? group_sum_kernel<2>
             : geo.group == 4 ? group_sum_kernel<4>
             : geo.group == 8 ? group_sum_kernel<8>
                              : group_sum_kernel<0>;
  sum<<<blocks, kBlock, 0, st>>>(geo, ws, dq_part, dk_part, ref<bf16>(out.dq), ref<bf16>(out.dk));
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
