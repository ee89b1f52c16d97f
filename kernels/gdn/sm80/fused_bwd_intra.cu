// Fused GDN, stage 3 of the backward: every gradient of one 64-token chunk per work item (chunk,
// key head), looping over the key head's value heads so dq and dk sum over the group in registers.
// Persistent: one CTA per SM (the shared memory) walks the work items blockIdx.x, blockIdx.x +
// gridDim.x, ..., so that the next item's loads overlap this one's start-up and tail (see below);
// each item is computed by one CTA in the same order of operations whichever CTA takes it, so the
// bits do not depend on the grid.
// 16 warps of at most 128 registers (twice the other kernels' warps, to hide the load and mma
// latencies): a 4 x 4 grid of 16 x 32 warp tiles over the 64 x 128 tiles and of 16 x 16 ones over
// the 64 x 64 tiles. The math is chunked_bwd_intra.cu's; the normalised q, k, their rstd and
// A = (I + L)^-1 come from fused_prep.cu's workspace instead of being recomputed. Each tile of the
// next value head streams in (cp.async) as soon as its buffer is dead, and each head waits for its
// tiles in the order it uses them; v reuses the dSL buffer, dw the v_new one, and A and dA swap
// buffers every head. After an item's last head the tiles of the next item's first head (do, S0,
// dSL, A) stream in the same way, during the item's tail, and so do its q and k, staged in the
// dead v_new and dv_new buffers (the tail still reads this item's q and k) and copied into place
// after the tail; only the next v_new and dv_new wait for that copy. Every buffer keeps a fixed
// place, so the shared-memory addresses stay compile-time offsets of one base (runtime buffer
// bases, tried first, cost 11% more instructions).
//
// Per value head, with S0 / dSL the state entering / gradient of the state leaving the chunk (from
// the scans), nu / dnu = v_new and its gradient, D_ij = exp(G_i - G_j), Gm = exp(G), El = exp(Gl -
// G):
//   dq += scale Gm .* (do S0^T) + dQK k,        dQK = lowerIncl(scale do nu^T) .* D
//   dk += El .* (nu dSL^T) + dQK^T q + beta Gm .* (A^T dw) + (dP + dP^T) k
//   dw  = -dnu S0^T,  dv = beta .* (A^T dnu)
//   dA  = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)),  dL = strictLower(-A^T dA A^T)
//   dP  = dL .* beta_i D
// dbeta and dG collect the matching row / column sums (the dbeta term of dv, rows of A^T dnu dotted
// with v, as the column sums of A .* (dnu V^T)); dg is the reverse in-chunk cumsum of dG.
// q and k are the group's, so Q K^T and K K^T (for the dG terms) are formed once per item, and the
// products with them once after the loop: dq += dQKs k, dk += dQKs^T q + Psym k, with
// dQKs = sum_h dQK and Psym = sum_h (dP + dP^T) summed in fp32 shared memory (both triangular:
// one 64 x 64 tile holds dQKs on and below the diagonal and dP^T above it).
// Finally dq, dk go through the l2 normalisation's backward: dx = rstd (dxn - xn (xn . dxn)).
// Each CTA first checks the context's stamp; varlen slots come from the chunk map, and an unused
// slot is skipped.
#include "fused_launch.cuh"

namespace qr::gdn::fused {
namespace {

using sm80::add_col_sums;
using sm80::add_row_sums;
using sm80::Parts;
using sm80::store_acc_bf16;
using sm80::sum_parts;

constexpr int kWarps = 16, kIntraThreads = 32 * kWarps;
// The slots of a Parts: a warp's row sums go to slot nb (its column band), its column sums to
// slot 4 + mb (its row band), so no two warps update one slot's entry in the same pass.
constexpr int kSlots = 8;
static_assert(sizeof(Parts) == kSlots * kC * sizeof(float));

// part[slot][row] += sum over the warp tile's columns of value * t(row, col), with t bf16 in shared
// memory (row stride ld) read in the fragment's column pairs.
template <bool kSet = false, int WM, int WN>
__device__ __forceinline__ void add_row_dots(Acc<WM, WN>& acc, int m0, int n0, Parts& part,
                                             int slot, const bf16* t, int ld) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < Acc<WM, WN>::MI; ++i)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int row = m0 + 16 * i + lane / 4 + 8 * hi;
      float s = 0.f;
#pragma unroll
      for (int j = 0; j < Acc<WM, WN>::NJ; ++j) {
        const float2 y = bf16x2_to_float2(
            *reinterpret_cast<const uint32_t*>(t + row * ld + n0 + 8 * j + 2 * (lane % 4)));
        s += acc.c[i][j][2 * hi] * y.x;
        s += acc.c[i][j][2 * hi + 1] * y.y;
      }
      s = quad_sum(s);
      __syncwarp();
      if (lane % 4 == 0)
        part[slot][row] = kSet ? s : part[slot][row] + s;
      __syncwarp();
    }
}

// part[slot][col] += sum over the warp tile's rows of value * t(row, col), t as in add_row_dots.
template <bool kSet = false, int WM, int WN>
__device__ __forceinline__ void add_col_dots(Acc<WM, WN>& acc, int m0, int n0, Parts& part,
                                             int slot, const bf16* t, int ld) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < Acc<WM, WN>::NJ; ++j) {
    const int col = n0 + 8 * j + 2 * (lane % 4);
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int i = 0; i < Acc<WM, WN>::MI; ++i)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const float2 y = bf16x2_to_float2(
            *reinterpret_cast<const uint32_t*>(t + (m0 + 16 * i + lane / 4 + 8 * hi) * ld + col));
        s0 += acc.c[i][j][2 * hi] * y.x;
        s1 += acc.c[i][j][2 * hi + 1] * y.y;
      }
    s0 = column_sum(s0);
    s1 = column_sum(s1);
    __syncwarp();
    if (lane < 4) {
      part[slot][col] = kSet ? s0 : part[slot][col] + s0;
      part[slot][col + 1] = kSet ? s1 : part[slot][col + 1] + s1;
    }
    __syncwarp();
  }
}

// acc += A B over the 16-wide k-steps in [k_lo, k_hi) (warp-uniform multiples of 16) of a K = kC
// product: the products with the triangular A and dA skip the steps that meet only their zeros.
template <Lay LA, Lay LB, int WM, int WN>
__device__ __forceinline__ void warp_mma_k(Acc<WM, WN>& acc, const bf16* A, int lda, const bf16* B,
                                           int ldb, int m0, int n0, int k_lo, int k_hi) {
#pragma unroll
  for (int k0 = 0; k0 < kC; k0 += 16)
    if (k0 >= k_lo && k0 < k_hi)
      warp_mma<LA, LB, 16>(acc, A + (LA == Lay::MK ? k0 : k0 * lda), lda,
                           B + (LB == Lay::NK ? k0 : k0 * ldb), ldb, m0, n0);
}

// 224.5 KB, one CTA per SM.
struct IntraSmem {
  bf16 q[kC * kLdD], k[kC * kLdD]; // normalised, shared by the group
  bf16 d_o[kC * kLdD];
  bf16 nu[kC * kLdD];                 // v_new, then dw; after the last head the next item's q
  bf16 dnu[kC * kLdD];                // after the last head the next item's k
  bf16 s0[kD * kLdD], dsl[kD * kLdD]; // dsl: dSL, then v in its first 64 rows
  bf16 ab[2][kC * kLdC]; // A and dA, swapping roles every head; after the last head dQKs in one
  bf16 t2[kC * kLdC];    // dA A^T, per head; after the last head Psym
  float qkkk[kC * kLdF]; // raw Q K^T on and below the diagonal, K K^T above it
  union {
    float sums[kC * kLdF]; // sum over the heads: dQK on and below the diagonal, dP^T above it
    struct {
      Parts dotq, dotk; // after the tail's products: the l2-backward row dots of dq and dk
    } l2;
  } s;
  float G2[2][kC], gam[2][kC], el[2][kC], beta[2][kC]; // per head, by its parity; G2 = G log2(e)
  float rq[kC], rk[kC];
  // partial sums, per slot (see kSlots) or per warp: dG, dbeta, the two row dots with k (cl, cw),
  // <S0, dSL>. Each entry has one warp, fixed across heads, that updates it, and each head's first
  // update of it sets it, so only the entries that no warp updates need clearing (per item).
  Parts dG, dB, cl, cw;
  float s0dsl[kWarps];
};

// A work item: chunk slot n of batch row b and key head hk, tokens [t0, t0 + len). it = its index
// n + NT (b Hk + hk); a CTA walks blockIdx.x, blockIdx.x + gridDim.x, ... skipping unused varlen
// slots; it = the item count when there is none left. b and hk are divided out once here: the
// load addresses of every head use them.
struct Item {
  int it, n, b, hk, t0, len;
};

__global__ void __launch_bounds__(kIntraThreads, 1)
    bwd_intra_kernel(Geo geo, FwdInputs in, Workspace ws, Ref<const bf16> d_o, Ref<bf16> dq_out,
                     Ref<bf16> dk_out, Ref<bf16> dv_out, Ref<bf16> db_out, Ref<float> dg_out) {
  extern __shared__ __align__(16) char smem_raw[];
  IntraSmem& sm = *reinterpret_cast<IntraSmem*>(smem_raw);
  if (!stamp_ok(geo, ws))
    return;
  const int items = geo.NT * geo.B * geo.Hk;
  auto item_from = [&](int it) {
    for (; it < items; it += gridDim.x) {
      const int n = it % geo.NT, bk = it / geo.NT, b = bk / geo.Hk;
      const Chunk ch = chunk_at(geo, ws, b, n);
      if (ch.len > 0) // else an unused varlen slot: no tokens, no gradients
        return Item{it, n, b, bk - b * geo.Hk, ch.t0, ch.len};
    }
    return Item{items, 0, 0, 0, 0, 0};
  };
  Item cur = item_from(blockIdx.x);
  if (cur.it >= items)
    return;
  const int tid = threadIdx.x, warp = tid / 32;
  // warp tile: row band mb, column band nb: rows m0 .. m0 + 15, columns n0 .. n0 + 31 of a
  // 64 x 128 tile, nn .. nn + 15 of a 64 x 64 one; rs, cs: its Parts slots of row and column sums.
  // Warp w issues from SM sub-partition w % 4, so each sub-partition gets one warp of every row
  // band (the A^T products shrink with the band) and 2 or 3 of the 10 tiles on or below the
  // diagonal of the 64 x 64 products (the masked products and their epilogues): the column band is
  // w % 4 shifted by the row band's Gray code (0, 1, 3, 2). Row band = w % 4 put all four tiles
  // of row band 3 on one sub-partition and one tile of row band 0 on another.
  const int mb = warp / 4, nb = (warp % 4 - (mb ^ mb >> 1)) & 3;
  const int m0 = 16 * mb, n0 = 32 * nb, nn = 16 * nb;
  const int rs = nb, cs = 4 + mb;
  // the 64 x 64 tile is above the diagonal: zero in the masked products (dQK, dA, dL) and in A,
  // so those warps skip them and the sums they would feed
  const bool upper = nn > m0;
  auto bfv = [](const bf16& x) { return __bfloat162float(x); };

  // The tiles of value head rr of an item's group, each issued as soon as its buffer is dead.
  auto krow_of = [&](Item w) { return (size_t(w.b * geo.Hk + w.hk) * geo.NT + w.n) * kC; };
  auto head_of = [&](Item w, int rr) { return w.hk * geo.group + rr; };
  auto vrow_of = [&](Item w, int rr) { return vrow(geo, w.b * geo.Hv + head_of(w, rr), w.n); };
  auto st_of = [&](Item w, int rr) {
    return (size_t(w.b * geo.Hv + head_of(w, rr)) * geo.NT + w.n) * kD * kD;
  };
  auto issue_q = [&](Item w, bf16* dst) {
    load_tile_async<kC, kD, kIntraThreads>(dst, kLdD, ws.qn + krow_of(w) * kD, kD);
  };
  auto issue_k = [&](Item w, bf16* dst) {
    load_tile_async<kC, kD, kIntraThreads>(dst, kLdD, ws.kn + krow_of(w) * kD, kD);
  };
  auto issue_rstd = [&](Item w) { // 16-byte pieces: 16 threads each
    if (tid < kC / 2) {
      const bool second = tid >= kC / 4;
      const int e = 4 * (tid % (kC / 4));
      cp_async16((second ? sm.rk : sm.rq) + e, (second ? ws.rk : ws.rq) + krow_of(w) + e, true);
    }
  };
  auto issue_do = [&](Item w, int rr) {
    load_tile_async<kC, kD, kIntraThreads>(sm.d_o, kLdD, d_o.at(w.b, w.t0, head_of(w, rr)), d_o.st,
                                           w.len);
  };
  auto issue_v = [&](Item w, int rr) {
    load_tile_async<kC, kD, kIntraThreads>(sm.dsl, kLdD, in.v.at(w.b, w.t0, head_of(w, rr)),
                                           in.v.st, w.len);
  };
  auto issue_nu = [&](Item w, int rr) {
    load_tile_async<kC, kD, kIntraThreads>(sm.nu, kLdD, ws.nu + vrow_of(w, rr) * kD, kD);
  };
  auto issue_dnu = [&](Item w, int rr) {
    load_tile_async<kC, kD, kIntraThreads>(sm.dnu, kLdD, ws.dnu + vrow_of(w, rr) * kD, kD);
  };
  auto issue_s0 = [&](Item w, int rr) {
    load_tile_async<kD, kD, kIntraThreads>(sm.s0, kLdD, ws.h + st_of(w, rr), kD);
  };
  auto issue_dsl = [&](Item w, int rr) {
    load_tile_async<kD, kD, kIntraThreads>(sm.dsl, kLdD, ws.dh + st_of(w, rr), kD);
  };
  auto issue_a = [&](Item w, int rr, bf16* dst) {
    load_tile_async<kC, kC, kIntraThreads>(dst, kLdC, ws.a + vrow_of(w, rr) * kC, kC);
  };
  float nG = 0.f, nGl = 0.f, nbeta = 0.f; // the next head's G, Gl, beta of row tid, in flight
  auto load_scalars = [&](Item w, int rr) {
    if (tid < kC) {
      const size_t row0 = vrow_of(w, rr);
      nG = ws.G[row0 + tid];
      nGl = ws.G[row0 + kC - 1];
      nbeta = tid < w.len ? bfv(*in.beta.at(w.b, w.t0 + tid, head_of(w, rr))) : 0.f;
    }
  };

  // Commit groups, oldest first, as the first item's start and first head wait for them: {q, k,
  // rstd}, {do, S0}, {v_new, dSL, dv_new, A}; a later head's: {do}, {S0}, {v_new, dSL},
  // {dv_new, A}; a later item's first head's: {do}, {S0}, {q, dSL}, {k, A} (all complete at the
  // end of the previous item), then {v_new, dv_new, rstd} from the item's start.
  int par = 0; // A's buffer
  issue_q(cur, sm.q);
  issue_k(cur, sm.k);
  issue_rstd(cur);
  cp_async_commit();
  issue_do(cur, 0);
  issue_s0(cur, 0);
  cp_async_commit();
  issue_nu(cur, 0);
  issue_dsl(cur, 0);
  issue_dnu(cur, 0);
  issue_a(cur, 0, sm.ab[par]);
  cp_async_commit();
  load_scalars(cur, 0);

  Acc<16, 32> dq, dk, X;
  for (bool first = true;; first = false) {
    const Item nxt = item_from(cur.it + gridDim.x);
    const bool more = nxt.it < items;
    const int b = cur.b, hk = cur.hk, t0 = cur.t0, L = cur.len;
    const bf16 *const q = sm.q, *const k = sm.k;
    cp_async_wait<2>();
    __syncthreads(); // q and k have landed (a later item: are copied into place)
    if (!first) {    // the staging buffers are read: this item's v_new, dv_new and rstd
      issue_nu(cur, 0);
      issue_dnu(cur, 0);
      issue_rstd(cur);
    }
    cp_async_commit();
    { // raw Q K^T and K K^T, once per item; the sums start at zero
      Acc<16, 16> a1, a2;
      a1.zero();
      a2.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(a1, q, kLdD, k, kLdD, m0, nn);
      warp_mma<Lay::MK, Lay::NK, kD>(a2, k, kLdD, k, kLdD, m0, nn);
      a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
        const int i = m0 + r, j = nn + c;
        sm.qkkk[i * kLdF + j] = i >= j ? x1 : x2;
        sm.s.sums[i * kLdF + j] = 0.f;
      });
    }
    if (tid < kC)
      for (int w = 0; w < kSlots; ++w)
        sm.dG[w][tid] = sm.dB[w][tid] = sm.cl[w][tid] = sm.cw[w][tid] = 0.f;

    dq.zero();
    dk.zero();
    for (int rr = 0; rr < geo.group; ++rr, par ^= 1) {
      const int h = hk * geo.group + rr;
      // what streams in as this head's buffers die: the next head's tiles, or after the last head
      // the next item's first head's (then_rr: that head), into the buffers the rotation gives
      const bool next = rr + 1 < geo.group, then = next || more;
      const Item then_item = next ? cur : nxt;
      const int then_rr = next ? rr + 1 : 0;
      const bf16* const A = sm.ab[par];
      bf16* const dA = sm.ab[par ^ 1];
      float *const G2 = sm.G2[par], *const gam = sm.gam[par], *const el = sm.el[par],
                   *const beta = sm.beta[par];
      if (tid < kC) {
        G2[tid] = nG * kLog2e;
        gam[tid] = __expf(nG);
        el[tid] = __expf(nGl - nG);
        beta[tid] = nbeta;
      }
      if (rr == 0) // a later item's do and S0 landed with its q and k
        cp_async_wait<1>();
      else
        cp_async_wait<2>();
      __syncthreads(); // do and S0 have landed; the previous head's tail has read the sums

      // dq += scale Gm .* (do S0^T); dG += row dots with q
      X.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(X, sm.d_o, kLdD, sm.s0, kLdD, m0, n0);
      X.each([&](int r, int, float& x) { x *= geo.scale * gam[m0 + r]; });
      add_row_dots<true>(X, m0, n0, sm.dG, rs, q, kLdD);
      dq.add(X);
      if (rr == 0)
        cp_async_wait<0>();
      else
        cp_async_wait<1>();
      __syncthreads(); // v_new and dSL have landed
      // dk += El .* (nu dSL^T); the row dots with k go to cl (dG_i -= cl_i, dG_last += sum cl)
      X.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(X, sm.nu, kLdD, sm.dsl, kLdD, m0, n0);
      X.each([&](int r, int, float& x) { x *= el[m0 + r]; });
      add_row_dots<true>(X, m0, n0, sm.cl, rs, k, kLdD);
      dk.add(X);
      if (!upper) { // dQK into the sums, and the dG terms of M = lowerIncl(q k^T .* D)
        Acc<16, 16> a;
        a.zero();
        warp_mma<Lay::MK, Lay::NK, kD>(a, sm.d_o, kLdD, sm.nu, kLdD, m0, nn);
        a.each_pair([&](int r, int c, float& x0, float& x1) {
          const int i = m0 + r, j = nn + c;
          const float gi = G2[i];
          const float2 gj = *reinterpret_cast<const float2*>(G2 + j);
          const float2 qk = *reinterpret_cast<const float2*>(sm.qkkk + i * kLdF + j);
          float2& sum = *reinterpret_cast<float2*>(sm.s.sums + i * kLdF + j);
          const float d0 = i >= j ? geo.scale * x0 * exp2_ftz(gi - gj.x) : 0.f;
          const float d1 = i >= j + 1 ? geo.scale * x1 * exp2_ftz(gi - gj.y) : 0.f;
          float2 t = sum;
          t.x += d0;
          t.y += d1;
          sum = t;
          x0 = d0 * qk.x;
          x1 = d1 * qk.y;
        });
        add_row_sums(a, m0, nn, sm.dG, rs, [](int, int, float x) { return x; });
        add_col_sums<true>(a, m0, nn, sm.dG, cs, [](int, int, float x) { return -x; });
      }
      { // <S0, dSL> for dG_last, in 16-byte pieces
        static_assert(kD * kD / 8 % kIntraThreads == 0);
        float s0 = 0.f, s1 = 0.f; // two chains: the even and the odd columns
#pragma unroll
        for (int it = 0; it < kD * kD / 8 / kIntraThreads; ++it) {
          const int e = tid + it * kIntraThreads, i = e / (kD / 8), j = 8 * (e % (kD / 8));
          const uint4 a4 = *reinterpret_cast<const uint4*>(sm.s0 + i * kLdD + j);
          const uint4 d4 = *reinterpret_cast<const uint4*>(sm.dsl + i * kLdD + j);
          const uint32_t aw[4] = {a4.x, a4.y, a4.z, a4.w}, dw[4] = {d4.x, d4.y, d4.z, d4.w};
#pragma unroll
          for (int p = 0; p < 4; ++p) {
            const float2 a = bf16x2_to_float2(aw[p]), d = bf16x2_to_float2(dw[p]);
            s0 = fmaf(a.x, d.x, s0);
            s1 = fmaf(a.y, d.y, s1);
          }
        }
        const float s = warp_sum(s0 + s1);
        if ((tid & 31) == 0)
          sm.s0dsl[warp] = s;
      }
      cp_async_wait<0>();
      __syncthreads(); // dv_new and A have landed; do, v_new and dSL are dead
      issue_v(cur, rr);
      cp_async_commit();
      if (then)
        issue_do(then_item, then_rr);
      cp_async_commit();
      // dw = -dnu S0^T, kept in the v_new buffer
      X.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(X, sm.dnu, kLdD, sm.s0, kLdD, m0, n0);
      X.each([](int, int, float& x) { x = -x; });
      store_acc_bf16(X, sm.nu + m0 * kLdD + n0, kLdD);
      // dv = beta .* (A^T dnu)
      X.zero();
      warp_mma_k<Lay::KM, Lay::KN>(X, A, kLdC, sm.dnu, kLdD, m0, n0, m0, kC);
      X.each([&](int r, int, float& x) { x *= beta[m0 + r]; });
      store_acc_bf16(X, dv_out.at(b, t0 + m0, h) + n0, dv_out.st, L - m0);
      cp_async_wait<1>();
      __syncthreads(); // v has landed, dw is complete, S0 is dead
      if (then)
        issue_s0(then_item, then_rr);
      cp_async_commit();

      if (!upper) { // dA = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)) (its tiles above
        // the diagonal are never read); dbeta += column sums of A .* (dnu V^T), the row dots of
        // A^T dnu with v
        Acc<16, 16> a1, a2;
        a1.zero();
        a2.zero();
        warp_mma<Lay::MK, Lay::NK, kD>(a1, sm.dnu, kLdD, sm.dsl, kLdD, m0, nn);
        warp_mma<Lay::MK, Lay::NK, kD>(a2, sm.nu, kLdD, k, kLdD, m0, nn);
        add_col_dots<true>(a1, m0, nn, sm.dB, cs, A, kLdC);
        a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
          const int i = m0 + r, j = nn + c;
          x1 = i >= j ? beta[j] * (x1 + gam[j] * x2) : 0.f;
        });
        store_acc_bf16(a1, dA + m0 * kLdC + nn, kLdC); // in bf16 pairs
      }
      // dk += beta Gm .* (A^T dw); the row dots with k go to cw
      X.zero();
      warp_mma_k<Lay::KM, Lay::KN>(X, A, kLdC, sm.nu, kLdD, m0, n0, m0, kC);
      add_row_dots<true>(X, m0, n0, sm.cw, rs, k, kLdD);
      X.each([&](int r, int, float& x) { x *= beta[m0 + r] * gam[m0 + r]; });
      dk.add(X);
      __syncthreads(); // v and dw are dead
      if (next)
        issue_nu(cur, rr + 1);
      else if (more) // the next item's q, staged in the dead v_new buffer
        issue_q(nxt, sm.nu);
      if (then)
        issue_dsl(then_item, then_rr);
      cp_async_commit();
      { // t2 = dA A^T, over k <= min(i, j)
        Acc<16, 16> z;
        z.zero();
        warp_mma_k<Lay::MK, Lay::NK>(z, dA, kLdC, A, kLdC, m0, nn, 0, min(m0, nn) + 16);
        store_acc_bf16(z, sm.t2 + m0 * kLdC + nn, kLdC);
      }
      __syncthreads(); // dv_new and dA are dead
      if (next)
        issue_dnu(cur, rr + 1);
      else if (more) // the next item's k, staged in the dead dv_new buffer
        issue_k(nxt, sm.dnu);
      if (then) {
        issue_a(then_item, then_rr, dA);
        load_scalars(then_item, then_rr);
      }
      cp_async_commit();
      if (!upper) { // dL = -A^T t2 (strictly lower) -> dbeta, dG; dP = dL .* beta_i D -> sums
        Acc<16, 16> dl;
        dl.zero();
        warp_mma_k<Lay::KM, Lay::KN>(dl, A, kLdC, sm.t2, kLdC, m0, nn, m0, kC);
        dl.each_pair([&](int r, int c, float& x0, float& x1) {
          const int i = m0 + r, j = nn + c;
          const float gi = G2[i], bi = beta[i];
          const float2 gj = *reinterpret_cast<const float2*>(G2 + j);
          const float d0 = i > j ? -x0 * exp2_ftz(gi - gj.x) : 0.f;
          const float d1 = i > j + 1 ? -x1 * exp2_ftz(gi - gj.y) : 0.f;
          // unconditional (d0, d1 are zero on and above the diagonal, whose entries here are this
          // warp's own dQK ones), so no branch per element
          sm.s.sums[j * kLdF + i] += d0 * bi;
          sm.s.sums[(j + 1) * kLdF + i] += d1 * bi;
          x0 = d0 * sm.qkkk[j * kLdF + i];
          x1 = d1 * sm.qkkk[(j + 1) * kLdF + i];
        });
        // the row sums into dbeta and, times beta_i, into dG: one reduction for both
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int row = m0 + (tid & 31) / 4 + 8 * hi;
          float s = 0.f;
#pragma unroll
          for (int j = 0; j < 2; ++j)
            s += dl.c[0][j][2 * hi] + dl.c[0][j][2 * hi + 1];
          s = quad_sum(s);
          if (tid % 4 == 0) {
            sm.dB[rs][row] = s;
            sm.dG[rs][row] += beta[row] * s;
          }
        }
        add_col_sums(dl, m0, nn, sm.dG, cs, [&](int i, int, float x) { return -x * beta[i]; });
      }
      __syncthreads();

      // the head's tail by warps 2 and 3: off the diagonal, on the sub-partitions with 2 diagonal
      // tiles
      if (warp == 2) { // assemble dG, reverse cumsum -> dg
        const int lane = tid & 31;
        float d[2], cl_sum = 0.f;
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int i = 2 * lane + e;
          const float cl = sum_parts(sm.cl, i);
          cl_sum += cl;
          d[e] = sum_parts(sm.dG, i) - cl + beta[i] * gam[i] * sum_parts(sm.cw, i);
        }
        cl_sum = warp_sum(cl_sum);
        float s0dsl = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w)
          s0dsl += sm.s0dsl[w];
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (2 * lane + e == L - 1)
            d[e] += cl_sum + gam[kC - 1] * s0dsl;
        float dg[2];
        reverse_cumsum_pairs(d, lane, dg);
#pragma unroll
        for (int e = 0; e < 2; ++e)
          if (2 * lane + e < L)
            *dg_out.at(b, t0 + 2 * lane + e, h) = dg[e];
      } else if (warp == 3) { // dbeta
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int i = 2 * (tid & 31) + e;
          if (i < L)
            *db_out.at(b, t0 + i, h) =
                __float2bfloat16(sum_parts(sm.dB, i) + gam[i] * sum_parts(sm.cw, i));
        }
      }
    }

    // The item's tail, while the next item's do, S0, q, dSL, k, A stream in. dq += dQKs k,
    // dk += dQKs^T q + Psym k with dQKs = sum dQK (into the last head's A buffer) and
    // Psym = sum (dP + dP^T) (into t2)
    bf16 *const dqks = sm.ab[par ^ 1], *const psym = sm.t2;
    { // thread: row i, columns j0 .. j0 + 7, in 16-byte pieces (a warp's 32 rows: no bank
      // conflicts)
      static_assert(kC * kC / 8 == kIntraThreads);
      const int i = tid % kC, j0 = 8 * (tid / kC);
      float c[8];
      *reinterpret_cast<float4*>(c) = *reinterpret_cast<const float4*>(sm.s.sums + i * kLdF + j0);
      *reinterpret_cast<float4*>(c + 4) =
          *reinterpret_cast<const float4*>(sm.s.sums + i * kLdF + j0 + 4);
      __nv_bfloat162 lo[4], up[4];
#pragma unroll
      for (int p = 0; p < 4; ++p) {
        float l[2], u[2];
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int j = j0 + 2 * p + e;
          l[e] = i >= j ? c[2 * p + e] : 0.f;
          u[e] = i < j ? c[2 * p + e] : i > j ? sm.s.sums[j * kLdF + i] : 0.f;
        }
        lo[p] = __floats2bfloat162_rn(l[0], l[1]);
        up[p] = __floats2bfloat162_rn(u[0], u[1]);
      }
      *reinterpret_cast<uint4*>(dqks + i * kLdC + j0) = *reinterpret_cast<const uint4*>(lo);
      *reinterpret_cast<uint4*>(psym + i * kLdC + j0) = *reinterpret_cast<const uint4*>(up);
    }
    __syncthreads(); // the sums are read (the l2 row dots take their place), dQKs and Psym written
    warp_mma<Lay::MK, Lay::KN, kC>(dq, dqks, kLdC, k, kLdD, m0, n0);
    warp_mma<Lay::KM, Lay::KN, kC>(dk, dqks, kLdC, q, kLdD, m0, n0);
    warp_mma<Lay::MK, Lay::KN, kC>(dk, psym, kLdC, k, kLdD, m0, n0);
    if (geo.l2) { // through the normalisation: dx = rstd (dxn - xn (xn . dxn))
      // each warp sets its own slot's rows; the column-sum slots no row dot reaches are cleared
      add_row_dots<true>(dq, m0, n0, sm.s.l2.dotq, rs, q, kLdD);
      add_row_dots<true>(dk, m0, n0, sm.s.l2.dotk, rs, k, kLdD);
      if (tid < kC)
        for (int w = kSlots / 2; w < kSlots; ++w)
          sm.s.l2.dotq[w][tid] = sm.s.l2.dotk[w][tid] = 0.f;
      __syncthreads();
      auto l2_bwd = [&](Acc<16, 32>& dx, const bf16* xn, const Parts& dot, const float* rstd) {
        dx.each_pair([&](int r, int c, float& x0, float& x1) {
          const int i = m0 + r;
          const float2 y =
              bf16x2_to_float2(*reinterpret_cast<const uint32_t*>(xn + i * kLdD + n0 + c));
          const float d = sum_parts(dot, i), rs = rstd[i];
          x0 = rs * (x0 - y.x * d);
          x1 = rs * (x1 - y.y * d);
        });
      };
      l2_bwd(dq, q, sm.s.l2.dotq, sm.rq);
      l2_bwd(dk, k, sm.s.l2.dotk, sm.rk);
    }
    cp_async_wait<0>();
    __syncthreads(); // q, k and the rstd are dead; the next item's q and k have landed
    if (more)        // into place (16-byte pieces); the next item's start waits for this
      for_each_piece<kC, kD, kIntraThreads>([&](int r, int c) {
        const int e = r * kLdD + c;
        *reinterpret_cast<uint4*>(sm.q + e) = *reinterpret_cast<const uint4*>(sm.nu + e);
        *reinterpret_cast<uint4*>(sm.k + e) = *reinterpret_cast<const uint4*>(sm.dnu + e);
      });
    store_acc_bf16(dq, dq_out.at(b, t0 + m0, hk) + n0, dq_out.st, L - m0);
    store_acc_bf16(dk, dk_out.at(b, t0 + m0, hk) + n0, dk_out.st, L - m0);
    if (!more)
      return;
    cur = nxt;
  }
}

} // namespace

std::string launch_bwd_intra_sm80(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                                  Ref<const bf16> d_o, const BwdArgs& out, cudaStream_t st) {
  const int smem = sizeof(IntraSmem);
  QR_CUDA_TRY(
      cudaFuncSetAttribute(bwd_intra_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int dev = 0, sms = 0;
  QR_CUDA_TRY(cudaGetDevice(&dev));
  QR_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int items = geo.NT * geo.B * geo.Hk; // persistent: one CTA per SM walks them
  bwd_intra_kernel<<<std::min(items, sms), kIntraThreads, smem, st>>>(
      geo, in, ws, d_o, ref<bf16>(out.dq), ref<bf16>(out.dk), ref<bf16>(out.dv),
      ref<bf16>(out.dbeta), ref<float>(out.dg));
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
