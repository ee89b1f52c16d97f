// Fused GDN, stage 3 of the backward: every gradient of one 64-token chunk, one CTA per (chunk,
// key head) looping over the key head's value heads so dq and dk sum over the group in registers.
// 16 warps of at most 128 registers (twice the other kernels' warps, to hide the load and mma
// latencies): a 4 x 4 grid of 16 x 32 warp tiles over the 64 x 128 tiles and of 16 x 16 ones over
// the 64 x 64 tiles. The products run on wgmma on sm_90a, warpgroup g (warps 4g .. 4g + 3) taking
// the 64 x 32 (64 x 16) column band of its warps, and on mma.sync elsewhere (hopper_wgmma.cuh:
// the tiles' layouts, and why the epilogues are the same code on both). On wgmma the whole
// warpgroup takes part in the products masked to the lower triangle and in the full k range of
// those with the triangular A; mma.sync skips the warp tiles and k-steps that meet only zeros. The
// math is chunked_bwd_intra.cu's; the normalised q, k, their rstd and A = (I + L)^-1 come from
// fused_prep.cu's workspace instead of being recomputed. Each tile of the next value head streams
// in (cp.async) as soon as its buffer is dead, and each head waits for its tiles in the order it
// uses them; v reuses the dSL buffer, dw the v_new one, and A and dA swap buffers every head.
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
// q and k are the group's, so Q K^T and K K^T (for the dG terms) are formed once per CTA, and the
// products with them once after the loop: dq += dQKs k, dk += dQKs^T q + Psym k, with
// dQKs = sum_h dQK and Psym = sum_h (dP + dP^T) summed in fp32 shared memory (both triangular:
// one 64 x 64 tile holds dQKs on and below the diagonal and dP^T above it).
// Finally dq, dk go through the l2 normalisation's backward: dx = rstd (dxn - xn (xn . dxn)).
// Each CTA first checks the context's stamp; varlen slots come from the chunk map, and an unused
// slot returns at once.
#include "fused.cuh"
#include "hopper_wgmma.cuh"

namespace qr::gdn::fused {
namespace {

using chunked::add_col_sums;
using chunked::add_row_sums;
using chunked::Parts;
using chunked::store_acc_bf16;
using chunked::sum_parts;
using tiles::kWgmma;
using tiles::load_tile;
using tiles::mma_wait;
using tiles::store_acc;
using tiles::sync_tiles;
using tiles::tile_mma;
using TileD = tiles::Tile<kC, kD>; // 64 x 128: q, k, do, v_new, dv_new, v, dw
using TileS = tiles::Tile<kD, kD>; // 128 x 128: S0, dSL
using TileC = tiles::Tile<kC, kC>; // 64 x 64: A, dA, dA A^T, dQKs, Psym

constexpr int kWarps = 16, kIntraThreads = 32 * kWarps;
// The slots of a Parts: warp w's row sums go to slot w / 4 (its column band), its column sums to
// slot 4 + w % 4 (its row band), so no two warps update one slot's entry in the same pass.
constexpr int kSlots = 8;
static_assert(sizeof(Parts) == kSlots * kC * sizeof(float));

// part[slot][row] += sum over the warp tile's columns of value * t(row, col), with t a bf16 tile in
// shared memory read in the fragment's column pairs.
template <bool kSet = false, int WM, int WN, int R, int C>
__device__ __forceinline__ void add_row_dots(Acc<WM, WN>& acc, int m0, int n0, Parts& part,
                                             int slot, tiles::Tile<R, C> t) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < Acc<WM, WN>::MI; ++i)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int row = m0 + 16 * i + lane / 4 + 8 * hi;
      float s = 0.f;
#pragma unroll
      for (int j = 0; j < Acc<WM, WN>::NJ; ++j) {
        const float2 y = __bfloat1622float2(
            *reinterpret_cast<const __nv_bfloat162*>(&t(row, n0 + 8 * j + 2 * (lane % 4))));
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
template <bool kSet = false, int WM, int WN, int R, int C>
__device__ __forceinline__ void add_col_dots(Acc<WM, WN>& acc, int m0, int n0, Parts& part,
                                             int slot, tiles::Tile<R, C> t) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < Acc<WM, WN>::NJ; ++j) {
    const int col = n0 + 8 * j + 2 * (lane % 4);
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int i = 0; i < Acc<WM, WN>::MI; ++i)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const float2 y = __bfloat1622float2(
            *reinterpret_cast<const __nv_bfloat162*>(&t(m0 + 16 * i + lane / 4 + 8 * hi, col)));
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

// 224.5 KB, one CTA per SM. The tiles come first, each a multiple of 1024 bytes, so that each
// starts 1024-byte aligned as the swizzled layout needs.
struct IntraSmem {
  bf16 q[TileD::kElems], k[TileD::kElems]; // normalised, shared by the group
  bf16 d_o[TileD::kElems];
  bf16 nu[TileD::kElems]; // v_new, then dw
  bf16 dnu[TileD::kElems];
  bf16 s0[TileS::kElems], dsl[TileS::kElems]; // dsl: dSL, then v (a TileD)
  bf16 ab[2][TileC::kElems]; // A and dA, swapping roles every head; after the loop dQKs and Psym
  union {
    bf16 t2[TileC::kElems]; // dA A^T, per head
    struct {
      Parts dotq, dotk; // after the last head: the l2-backward row dots of dq and dk
    } l2;
  } r;
  float qkkk[kC * kLdF]; // raw Q K^T on and below the diagonal, K K^T above it
  float sums[kC * kLdF]; // sum over the heads: dQK on and below the diagonal, dP^T above it
  float G[2][kC], gam[2][kC], el[2][kC], beta[2][kC]; // per head, by its parity
  float rq[kC], rk[kC];
  // partial sums, per slot (see kSlots) or per warp: dG, dbeta, the two row dots with k (cl, cw),
  // <S0, dSL>. Each entry has one warp, fixed across heads, that updates it, and each head's first
  // update of it sets it, so no clearing is needed; the entries that no warp updates stay zero.
  Parts dG, dB, cl, cw;
  float s0dsl[kWarps];
};
static_assert(TileD::kElems * 2 % 1024 == 0 && TileS::kElems * 2 % 1024 == 0 &&
              TileC::kElems * 2 % 1024 == 0 && offsetof(IntraSmem, r) % 1024 == 0);

__global__ void __launch_bounds__(kIntraThreads, 1)
    bwd_intra_kernel(Geo geo, FwdInputs in, Workspace ws, Ref<const bf16> d_o, Ref<bf16> dq_out,
                     Ref<bf16> dk_out, Ref<bf16> dv_out, Ref<bf16> db_out, Ref<float> dg_out) {
  extern __shared__ __align__(1024) char smem_raw[];
  IntraSmem& sm = *reinterpret_cast<IntraSmem*>(smem_raw);
  const int n = blockIdx.x, b = blockIdx.y / geo.Hk, hk = blockIdx.y % geo.Hk;
  if (!stamp_ok(geo, ws))
    return;
  const Chunk ch = chunk_at(geo, ws, b, n);
  if (ch.len == 0) // an unused varlen slot: no tokens, no gradients
    return;
  const int t0 = ch.t0, L = ch.len, tid = threadIdx.x, warp = tid / 32;
  // warp tile: rows m0 .. m0 + 15, columns n0 .. n0 + 31 of a 64 x 128 tile, nn .. nn + 15 of a
  // 64 x 64 one; rs, cs: its Parts slots of row and column sums
  const int m0 = 16 * (warp % 4), n0 = 32 * (warp / 4), nn = 16 * (warp / 4);
  const int rs = warp / 4, cs = 4 + warp % 4;
  // the 64 x 64 tile is above the diagonal: zero in the masked products (dQK, dA, dL) and in A,
  // so those warps skip the sums they would feed, and on mma.sync the products too (wgmma takes
  // the whole warpgroup)
  const bool upper = nn > m0, masked_mma = kWgmma || !upper;
  auto bfv = [](const bf16& x) { return __bfloat162float(x); };
  const TileD q{sm.q}, k{sm.k}, dO{sm.d_o}, nu{sm.nu}, dnu{sm.dnu}, v{sm.dsl};
  const TileS s0{sm.s0}, dsl{sm.dsl};
  const TileC t2{sm.r.t2};

  const size_t krow0 = (size_t(blockIdx.y) * geo.NT + n) * kC;
  load_tile<kIntraThreads>(q, ws.qn + krow0 * kD, kD, kC);
  load_tile<kIntraThreads>(k, ws.kn + krow0 * kD, kD, kC);
  cp_async_commit();
  if (tid < kC) {
    sm.rq[tid] = ws.rq[krow0 + tid];
    sm.rk[tid] = ws.rk[krow0 + tid];
  }
  // The tiles of value head rr of the group; each is issued as soon as its buffer is dead.
  auto vrow_of = [&](int rr) { return vrow(geo, b * geo.Hv + hk * geo.group + rr, n); };
  auto st_of = [&](int rr) {
    return (size_t(b * geo.Hv + hk * geo.group + rr) * geo.NT + n) * kD * kD;
  };
  auto issue_do = [&](int rr) {
    load_tile<kIntraThreads>(dO, d_o.at(b, t0, hk * geo.group + rr), d_o.st, L);
  };
  auto issue_v = [&](int rr) {
    load_tile<kIntraThreads>(v, in.v.at(b, t0, hk * geo.group + rr), in.v.st, L);
  };
  auto issue_nu = [&](int rr) { load_tile<kIntraThreads>(nu, ws.nu + vrow_of(rr) * kD, kD, kC); };
  auto issue_dnu = [&](int rr) {
    load_tile<kIntraThreads>(dnu, ws.dnu + vrow_of(rr) * kD, kD, kC);
  };
  auto issue_s0 = [&](int rr) { load_tile<kIntraThreads>(s0, ws.h + st_of(rr), kD, kD); };
  auto issue_dsl = [&](int rr) { load_tile<kIntraThreads>(dsl, ws.dh + st_of(rr), kD, kD); };
  auto issue_a = [&](int rr) {
    load_tile<kIntraThreads>(TileC{sm.ab[rr & 1]}, ws.a + vrow_of(rr) * kC, kC, kC);
  };
  float nG = 0.f, nGl = 0.f, nbeta = 0.f; // the next head's G, Gl, beta of row tid, in flight
  auto load_scalars = [&](int rr) {
    if (tid < kC) {
      const size_t row0 = vrow_of(rr);
      nG = ws.G[row0 + tid];
      nGl = ws.G[row0 + kC - 1];
      nbeta = tid < L ? bfv(*in.beta.at(b, t0 + tid, hk * geo.group + rr)) : 0.f;
    }
  };
  // Commit groups, oldest first, as head rr waits for them: {do, S0}, {v_new, dSL}, {dv_new, A}.
  issue_do(0);
  issue_s0(0);
  cp_async_commit();
  issue_nu(0);
  issue_dsl(0);
  cp_async_commit();
  issue_dnu(0);
  issue_a(0);
  cp_async_commit();
  load_scalars(0);
  cp_async_wait<3>();
  sync_tiles();
  { // raw Q K^T and K K^T, once per key head; the sums start at zero
    Acc<16, 16> a1, a2;
    a1.zero();
    a2.zero();
    tile_mma<Lay::MK, Lay::NK, kD>(a1, q, k, m0, nn);
    tile_mma<Lay::MK, Lay::NK, kD>(a2, k, k, m0, nn);
    mma_wait(a1, a2);
    a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
      const int i = m0 + r, j = nn + c;
      sm.qkkk[i * kLdF + j] = i >= j ? x1 : x2;
      sm.sums[i * kLdF + j] = 0.f;
    });
  }
  if (tid < kC)
    for (int w = 0; w < kSlots; ++w)
      sm.dG[w][tid] = sm.dB[w][tid] = sm.cl[w][tid] = sm.cw[w][tid] = 0.f;

  Acc<16, 32> dq, dk, X;
  dq.zero();
  dk.zero();
  for (int rr = 0; rr < geo.group; ++rr) {
    const int h = hk * geo.group + rr;
    const bool next = rr + 1 < geo.group;
    const TileC A{sm.ab[rr & 1]}, dA{sm.ab[(rr + 1) & 1]};
    float *const G = sm.G[rr & 1], *const gam = sm.gam[rr & 1], *const el = sm.el[rr & 1],
                 *const beta = sm.beta[rr & 1];
    if (tid < kC) {
      G[tid] = nG;
      gam[tid] = __expf(nG);
      el[tid] = __expf(nGl - nG);
      beta[tid] = nbeta;
    }
    cp_async_wait<2>();
    sync_tiles(); // do and S0 have landed; the previous head's tail has read the sums

    // dq += scale Gm .* (do S0^T); dG += row dots with q
    X.zero();
    tile_mma<Lay::MK, Lay::NK, kD>(X, dO, s0, m0, n0);
    mma_wait(X);
    X.each([&](int r, int, float& x) { x *= geo.scale * gam[m0 + r]; });
    add_row_dots<true>(X, m0, n0, sm.dG, rs, q);
    dq.add(X);
    cp_async_wait<1>();
    sync_tiles(); // v_new and dSL have landed
    // dk += El .* (nu dSL^T); the row dots with k go to cl (dG_i -= cl_i, dG_last += sum cl).
    // Beside it a = do nu^T, for dQK.
    X.zero();
    tile_mma<Lay::MK, Lay::NK, kD>(X, nu, dsl, m0, n0);
    Acc<16, 16> a;
    if (masked_mma) {
      a.zero();
      tile_mma<Lay::MK, Lay::NK, kD>(a, dO, nu, m0, nn);
    }
    mma_wait<1>(X);
    X.each([&](int r, int, float& x) { x *= el[m0 + r]; });
    add_row_dots<true>(X, m0, n0, sm.cl, rs, k);
    dk.add(X);
    mma_wait(a);
    if (!upper) { // dQK into the sums, and the dG terms of M = lowerIncl(q k^T .* D)
      a.each_pair([&](int r, int c, float& x0, float& x1) {
        const int i = m0 + r, j = nn + c;
        const float gi = G[i];
        const float2 gj = *reinterpret_cast<const float2*>(G + j);
        const float2 qk = *reinterpret_cast<const float2*>(sm.qkkk + i * kLdF + j);
        float2& sum = *reinterpret_cast<float2*>(sm.sums + i * kLdF + j);
        const float d0 = i >= j ? geo.scale * x0 * __expf(gi - gj.x) : 0.f;
        const float d1 = i >= j + 1 ? geo.scale * x1 * __expf(gi - gj.y) : 0.f;
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
      float s = 0.f;
#pragma unroll
      for (int it = 0; it < kD * kD / 8 / kIntraThreads; ++it) {
        const int e = tid + it * kIntraThreads, i = e / (kD / 8), j = 8 * (e % (kD / 8));
        const uint4 a4 = *reinterpret_cast<const uint4*>(&s0(i, j));
        const uint4 d4 = *reinterpret_cast<const uint4*>(&dsl(i, j));
        const __nv_bfloat162* a2 = reinterpret_cast<const __nv_bfloat162*>(&a4);
        const __nv_bfloat162* d2 = reinterpret_cast<const __nv_bfloat162*>(&d4);
#pragma unroll
        for (int p = 0; p < 4; ++p) {
          const float2 a = __bfloat1622float2(a2[p]), d = __bfloat1622float2(d2[p]);
          s += a.x * d.x + a.y * d.y;
        }
      }
      s = warp_sum(s);
      if ((tid & 31) == 0)
        sm.s0dsl[warp] = s;
    }
    cp_async_wait<0>();
    sync_tiles(); // dv_new and A have landed; do, v_new and dSL are dead
    issue_v(rr);
    cp_async_commit();
    if (next)
      issue_do(rr + 1);
    cp_async_commit();
    // dw = -dnu S0^T, kept in the nu buffer
    X.zero();
    tile_mma<Lay::MK, Lay::NK, kD>(X, dnu, s0, m0, n0);
    mma_wait(X);
    X.each([](int, int, float& x) { x = -x; });
    store_acc(X, nu, m0, n0);
    // dv = beta .* (A^T dnu)
    X.zero();
    tile_mma<Lay::KM, Lay::KN, kC>(X, A, dnu, m0, n0, kWgmma ? 0 : m0);
    mma_wait(X);
    X.each([&](int r, int, float& x) { x *= beta[m0 + r]; });
    store_acc_bf16(X, dv_out.at(b, t0 + m0, h) + n0, dv_out.st, L - m0);
    cp_async_wait<1>();
    sync_tiles(); // v has landed, dw is complete, S0 is dead
    if (next)
      issue_s0(rr + 1);
    cp_async_commit();

    if (masked_mma) { // dA = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)) (on mma.sync its
      // tiles above the diagonal are never read; wgmma's dA A^T reads the zeros written there);
      // dbeta += column sums of A .* (dnu V^T), the row dots of A^T dnu with v
      Acc<16, 16> a1, a2;
      a1.zero();
      a2.zero();
      tile_mma<Lay::MK, Lay::NK, kD>(a1, dnu, v, m0, nn);
      tile_mma<Lay::MK, Lay::NK, kD>(a2, nu, k, m0, nn);
      mma_wait(a1, a2);
      if (!upper)
        add_col_dots<true>(a1, m0, nn, sm.dB, cs, A);
      a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
        const int i = m0 + r, j = nn + c;
        const float da = i >= j ? beta[j] * (x1 + gam[j] * x2) : 0.f;
        dA(i, j) = __float2bfloat16(da);
      });
    }
    // dk += beta Gm .* (A^T dw); the row dots with k go to cw
    X.zero();
    tile_mma<Lay::KM, Lay::KN, kC>(X, A, nu, m0, n0, kWgmma ? 0 : m0);
    mma_wait(X);
    add_row_dots<true>(X, m0, n0, sm.cw, rs, k);
    X.each([&](int r, int, float& x) { x *= beta[m0 + r] * gam[m0 + r]; });
    dk.add(X);
    sync_tiles(); // v and dw are dead, dA is complete
    if (next) {
      issue_nu(rr + 1);
      issue_dsl(rr + 1);
    }
    cp_async_commit();
    { // t2 = dA A^T, over k <= min(i, j) on mma.sync (wgmma: all of k, the rest meets dA's zeros)
      Acc<16, 16> z;
      z.zero();
      tile_mma<Lay::MK, Lay::NK, kC>(z, dA, A, m0, nn, 0, kWgmma ? kC : min(m0, nn) + 16);
      mma_wait(z);
      store_acc(z, t2, m0, nn);
    }
    sync_tiles(); // dv_new and dA are dead
    if (next) {
      issue_dnu(rr + 1);
      issue_a(rr + 1);
      load_scalars(rr + 1);
    }
    cp_async_commit();
    { // dL = -A^T t2 (strictly lower) -> dbeta, dG; dP = dL .* beta_i D -> sums
      Acc<16, 16> dl;
      if (masked_mma) {
        dl.zero();
        tile_mma<Lay::KM, Lay::KN, kC>(dl, A, t2, m0, nn, kWgmma ? 0 : m0);
      }
      mma_wait(dl);
      if (!upper) {
        dl.each_pair([&](int r, int c, float& x0, float& x1) {
          const int i = m0 + r, j = nn + c;
          const float gi = G[i], bi = beta[i];
          const float2 gj = *reinterpret_cast<const float2*>(G + j);
          const float d0 = i > j ? -x0 * __expf(gi - gj.x) : 0.f;
          const float d1 = i > j + 1 ? -x1 * __expf(gi - gj.y) : 0.f;
          if (i > j)
            sm.sums[j * kLdF + i] += d0 * bi;
          if (i > j + 1)
            sm.sums[(j + 1) * kLdF + i] += d1 * bi;
          x0 = d0 * sm.qkkk[j * kLdF + i];
          x1 = d1 * sm.qkkk[(j + 1) * kLdF + i];
        });
        add_row_sums<true>(dl, m0, nn, sm.dB, rs, [](int, int, float x) { return x; });
        add_row_sums(dl, m0, nn, sm.dG, rs, [&](int i, int, float x) { return x * beta[i]; });
        add_col_sums(dl, m0, nn, sm.dG, cs, [&](int i, int, float x) { return -x * beta[i]; });
      }
    }
    __syncthreads();

    if (warp == 0) { // assemble dG, reverse cumsum -> dg
      const int lane = tid;
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
      float x = d[0] + d[1];
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const float y = __shfl_down_sync(0xffffffffu, x, o);
        if (lane + o < 32)
          x += y;
      }
      const float dg[2] = {x, x - d[0]};
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (2 * lane + e < L)
          *dg_out.at(b, t0 + 2 * lane + e, h) = dg[e];
    } else if (warp == 1) { // dbeta
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int i = 2 * (tid - 32) + e;
        if (i < L)
          *db_out.at(b, t0 + i, h) =
              __float2bfloat16(sum_parts(sm.dB, i) + gam[i] * sum_parts(sm.cw, i));
      }
    }
  }

  // dq += dQKs k, dk += dQKs^T q + Psym k with dQKs = sum dQK and Psym = sum (dP + dP^T)
  const TileC dqks{sm.ab[0]}, psym{sm.ab[1]};
  for (int e = tid; e < kC * kC; e += kIntraThreads) {
    const int i = e / kC, j = e % kC;
    const float c = sm.sums[i * kLdF + j];
    dqks(i, j) = __float2bfloat16(i >= j ? c : 0.f);
    psym(i, j) = __float2bfloat16(i < j ? c : i > j ? sm.sums[j * kLdF + i] : 0.f);
  }
  if (tid < kC)
    for (int w = 0; w < kSlots; ++w)
      sm.r.l2.dotq[w][tid] = sm.r.l2.dotk[w][tid] = 0.f;
  sync_tiles();
  tile_mma<Lay::MK, Lay::KN, kC>(dq, dqks, k, m0, n0);
  tile_mma<Lay::KM, Lay::KN, kC>(dk, dqks, q, m0, n0);
  tile_mma<Lay::MK, Lay::KN, kC>(dk, psym, k, m0, n0);
  mma_wait(dq, dk);
  if (geo.l2) { // through the normalisation: dx = rstd (dxn - xn (xn . dxn))
    add_row_dots(dq, m0, n0, sm.r.l2.dotq, rs, q);
    add_row_dots(dk, m0, n0, sm.r.l2.dotk, rs, k);
    __syncthreads();
    auto l2_bwd = [&](Acc<16, 32>& dx, TileD xn, const Parts& dot, const float* rstd) {
      dx.each_pair([&](int r, int c, float& x0, float& x1) {
        const int i = m0 + r;
        const float2 y =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(&xn(i, n0 + c)));
        const float d = sum_parts(dot, i), rs = rstd[i];
        x0 = rs * (x0 - y.x * d);
        x1 = rs * (x1 - y.y * d);
      });
    };
    l2_bwd(dq, q, sm.r.l2.dotq, sm.rq);
    l2_bwd(dk, k, sm.r.l2.dotk, sm.rk);
  }
  store_acc_bf16(dq, dq_out.at(b, t0 + m0, hk) + n0, dq_out.st, L - m0);
  store_acc_bf16(dk, dk_out.at(b, t0 + m0, hk) + n0, dk_out.st, L - m0);
}

} // namespace

std::string launch_bwd_intra(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                             Ref<const bf16> d_o, const BwdArgs& out, cudaStream_t st) {
  const int smem = sizeof(IntraSmem);
  QR_CUDA_TRY(
      cudaFuncSetAttribute(bwd_intra_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  bwd_intra_kernel<<<dim3(geo.NT, geo.B * geo.Hk), kIntraThreads, smem, st>>>(
      geo, in, ws, d_o, ref<bf16>(out.dq), ref<bf16>(out.dk), ref<bf16>(out.dv),
      ref<bf16>(out.dbeta), ref<float>(out.dg));
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
