// Fused GDN, stage 3 of the backward: every gradient of one 64-token chunk, one CTA per (chunk,
// key head) looping over the key head's value heads so dq and dk sum over the group in registers
// (a 2 x 4 grid of 32 x 32 warp tiles over the 64 x 128 tiles). The math is chunked_bwd_intra.cu's;
// the normalised q, k, their rstd and A = (I + L)^-1 come from fused_prep.cu's workspace instead
// of being recomputed. Each value head's tiles stream in during the previous head: S0, dSL and do
// once its state part is done, v, v_new and dv_new once its last product with them is.
//
// Per value head, with S0 / dSL the state entering / gradient of the state leaving the chunk (from
// the scans), nu / dnu = v_new and its gradient, D_ij = exp(G_i - G_j), Gm = exp(G), El = exp(Gl -
// G):
//   dq += scale Gm .* (do S0^T) + dQK k,        dQK = lowerIncl(scale do nu^T) .* D
//   dk += El .* (nu dSL^T) + dQK^T q + beta Gm .* (A^T dw) + (dP + dP^T) k
//   dw  = -dnu S0^T,  dv = beta .* (A^T dnu)
//   dA  = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)),  dL = strictLower(-A^T dA A^T)
//   dP  = dL .* beta_i D
// dbeta and dG collect the matching row / column sums; dg is the reverse in-chunk cumsum of dG.
// Finally dq, dk go through the l2 normalisation's backward: dx = rstd (dxn - xn (xn . dxn)).
#include "fused.cuh"

namespace qr::gdn::fused {
namespace {

using chunked::add_col_sums;
using chunked::add_row_sums;
using chunked::Parts;
using chunked::store_acc_bf16;
using chunked::sum_parts;

// 223.5 KB, one CTA per SM.
struct IntraSmem {
  bf16 q[kC * kLdD], k[kC * kLdD]; // normalised, shared by the group
  bf16 v[kC * kLdD], d_o[kC * kLdD];
  bf16 nu[kC * kLdD]; // v_new, then dw
  bf16 dnu[kC * kLdD];
  bf16 s0[kD * kLdD], dsl[kD * kLdD];
  bf16 t1[kC * kLdC];  // dQK, then dA, then dP
  bf16 ab[kC * kLdC];  // A
  float pd[kC * kLdF]; // K K^T .* D, strictly lower
  union {
    bf16 t2[kC * kLdC]; // dA A^T, per head
    struct {
      Parts dotq, dotk; // after the last head: the l2-backward row dots of dq and dk
    } l2;
  } r;
  float G[kC], gam[kC], el[kC], beta[kC], rq[kC], rk[kC];
  // per-warp partial sums: dG, dbeta, the two row dots with k (cl, cw), <S0, dSL>
  Parts dG, dB, cl, cw;
  float s0dsl[kThreads / 32];
};

__global__ void __launch_bounds__(kThreads, 1)
    bwd_intra_kernel(Geo geo, FwdInputs in, Workspace ws, Ref<const bf16> d_o, Ref<bf16> dq_out,
                     Ref<bf16> dk_out, Ref<bf16> dv_out, Ref<bf16> db_out, Ref<float> dg_out) {
  extern __shared__ __align__(16) char smem_raw[];
  IntraSmem& sm = *reinterpret_cast<IntraSmem*>(smem_raw);
  const int n = blockIdx.x, b = blockIdx.y / geo.Hk, hk = blockIdx.y % geo.Hk;
  const int t0 = n * kC, L = geo.valid(n), tid = threadIdx.x, warp = tid / 32;
  const int m0 = 32 * (warp % 2), n0 = 32 * (warp / 2); // 64 x 128 warp tile
  const int mm = 16 * (warp % 4), nn = 32 * (warp / 4); // 64 x 64 warp tile
  auto bfv = [](const bf16& x) { return __bfloat162float(x); };

  const size_t krow0 = (size_t(blockIdx.y) * geo.NT + n) * kC;
  load_tile_async<kC, kD, kThreads>(sm.q, kLdD, ws.qn + krow0 * kD, kD, kC);
  load_tile_async<kC, kD, kThreads>(sm.k, kLdD, ws.kn + krow0 * kD, kD, kC);
  cp_async_commit();
  if (tid < kC) {
    sm.rq[tid] = ws.rq[krow0 + tid];
    sm.rk[tid] = ws.rk[krow0 + tid];
  }
  // The tiles of value head rr of the group, issued during head rr - 1: those of the state part
  // (do, S0, dSL) and the others but A (v, v_new, dv_new).
  auto issue_state_part = [&](int rr) {
    const int h = hk * geo.group + rr, bh = b * geo.Hv + h;
    const size_t st0 = (size_t(bh) * geo.NT + n) * kD * kD;
    load_tile_async<kC, kD, kThreads>(sm.d_o, kLdD, d_o.at(b, t0, h), d_o.st, L);
    load_tile_async<kD, kD, kThreads>(sm.s0, kLdD, ws.h + st0, kD, kD);
    load_tile_async<kD, kD, kThreads>(sm.dsl, kLdD, ws.dh + st0, kD, kD);
  };
  auto issue_values = [&](int rr) {
    const int h = hk * geo.group + rr;
    const size_t row0 = vrow(geo, b * geo.Hv + h, n);
    load_tile_async<kC, kD, kThreads>(sm.v, kLdD, in.v.at(b, t0, h), in.v.st, L);
    load_tile_async<kC, kD, kThreads>(sm.nu, kLdD, ws.nu + row0 * kD, kD, kC);
    load_tile_async<kC, kD, kThreads>(sm.dnu, kLdD, ws.dnu + row0 * kD, kD, kC);
  };
  issue_state_part(0);
  issue_values(0);

  Acc<32, 32> dq, dk, X;
  dq.zero();
  dk.zero();
  for (int rr = 0; rr < geo.group; ++rr) {
    const int h = hk * geo.group + rr, bh = b * geo.Hv + h;
    const size_t row0 = vrow(geo, bh, n);
    __syncthreads(); // the previous head is done with A and the per-head sums
    load_tile_async<kC, kC, kThreads>(sm.ab, kLdC, ws.a + row0 * kC, kC, kC);
    cp_async_commit();
    if (tid < kC) {
      const float G = ws.G[row0 + tid], Gl = ws.G[row0 + kC - 1];
      sm.G[tid] = G;
      sm.gam[tid] = __expf(G);
      sm.el[tid] = __expf(Gl - G);
      sm.beta[tid] = tid < L ? bfv(*in.beta.at(b, t0 + tid, h)) : 0.f;
      for (int w = 0; w < kThreads / 32; ++w)
        sm.dG[w][tid] = sm.dB[w][tid] = sm.cl[w][tid] = sm.cw[w][tid] = 0.f;
    }
    cp_async_wait<0>();
    __syncthreads();

    // dq += scale Gm .* (do S0^T); dG += row dots with q
    X.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(X, sm.d_o, kLdD, sm.s0, kLdD, m0, n0);
    X.each([&](int r, int, float& x) { x *= geo.scale * sm.gam[m0 + r]; });
    add_row_sums(X, m0, n0, sm.dG,
                 [&](int i, int j, float x) { return x * bfv(sm.q[i * kLdD + j]); });
    dq.add(X);
    // dk += El .* (nu dSL^T); the row dots with k go to cl (dG_i -= cl_i, dG_last += sum cl)
    X.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(X, sm.nu, kLdD, sm.dsl, kLdD, m0, n0);
    X.each([&](int r, int, float& x) { x *= sm.el[m0 + r]; });
    add_row_sums(X, m0, n0, sm.cl,
                 [&](int i, int j, float x) { return x * bfv(sm.k[i * kLdD + j]); });
    dk.add(X);
    { // dQK and the dG terms of M = lowerIncl(q k^T .* D)
      Acc<16, 32> a1, a2;
      a1.zero();
      a2.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(a1, sm.d_o, kLdD, sm.nu, kLdD, mm, nn);
      warp_mma<Lay::MK, Lay::NK, kD>(a2, sm.q, kLdD, sm.k, kLdD, mm, nn);
      a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
        const int i = mm + r, j = nn + c;
        const float d = i >= j ? __expf(sm.G[i] - sm.G[j]) : 0.f, dm = geo.scale * x1;
        sm.t1[i * kLdC + j] = __float2bfloat16(dm * d);
        x1 = dm * x2 * d;
      });
      add_row_sums(a1, mm, nn, sm.dG, [](int, int, float x) { return x; });
      add_col_sums(a1, mm, nn, sm.dG, [](int, int, float x) { return -x; });
    }
    { // <S0, dSL> for dG_last
      float s = 0.f;
      for (int e = tid; e < kD * kD / 2; e += kThreads) {
        const int i = e / (kD / 2), j = 2 * (e % (kD / 2));
        const float2 a =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(sm.s0 + i * kLdD + j));
        const float2 d =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(sm.dsl + i * kLdD + j));
        s += a.x * d.x + a.y * d.y;
      }
      s = warp_sum(s);
      if ((tid & 31) == 0)
        sm.s0dsl[warp] = s;
    }
    __syncthreads();
    // dw = -dnu S0^T, kept in the nu buffer
    X.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(X, sm.dnu, kLdD, sm.s0, kLdD, m0, n0);
    X.each([](int, int, float& x) { x = -x; });
    store_acc_bf16(X, sm.nu + m0 * kLdD + n0, kLdD);
    // dq += dQK k, dk += dQK^T q
    warp_mma<Lay::MK, Lay::KN, kC>(dq, sm.t1, kLdC, sm.k, kLdD, m0, n0);
    warp_mma<Lay::KM, Lay::KN, kC>(dk, sm.t1, kLdC, sm.q, kLdD, m0, n0);
    __syncthreads(); // do, S0 and dSL are dead from here on: the next head's stream in
    if (rr + 1 < geo.group)
      issue_state_part(rr + 1);
    cp_async_commit();

    { // P .* D, strictly lower, for the dG terms of dL
      Acc<16, 32> p;
      p.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(p, sm.k, kLdD, sm.k, kLdD, mm, nn);
      p.each([&](int r, int c, float& x) {
        const int i = mm + r, j = nn + c;
        sm.pd[i * kLdF + j] = i > j ? x * __expf(sm.G[i] - sm.G[j]) : 0.f;
      });
    }
    __syncthreads();

    { // dA = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm))
      Acc<16, 32> a1, a2;
      a1.zero();
      a2.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(a1, sm.dnu, kLdD, sm.v, kLdD, mm, nn);
      warp_mma<Lay::MK, Lay::NK, kD>(a2, sm.nu, kLdD, sm.k, kLdD, mm, nn);
      a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
        const int i = mm + r, j = nn + c;
        const float da = i >= j ? sm.beta[j] * (x1 + sm.gam[j] * x2) : 0.f;
        sm.t1[i * kLdC + j] = __float2bfloat16(da);
      });
    }
    // dv = beta .* (A^T dnu); dbeta += row dots with v
    X.zero();
    warp_mma<Lay::KM, Lay::KN, kC>(X, sm.ab, kLdC, sm.dnu, kLdD, m0, n0);
    add_row_sums(X, m0, n0, sm.dB,
                 [&](int i, int j, float x) { return x * bfv(sm.v[i * kLdD + j]); });
    X.each([&](int r, int, float& x) { x *= sm.beta[m0 + r]; });
    store_acc_bf16(X, dv_out.at(b, t0 + m0, h) + n0, dv_out.st, L - m0);
    // dk += beta Gm .* (A^T dw); the row dots with k go to cw
    X.zero();
    warp_mma<Lay::KM, Lay::KN, kC>(X, sm.ab, kLdC, sm.nu, kLdD, m0, n0);
    add_row_sums(X, m0, n0, sm.cw,
                 [&](int i, int j, float x) { return x * bfv(sm.k[i * kLdD + j]); });
    X.each([&](int r, int, float& x) { x *= sm.beta[m0 + r] * sm.gam[m0 + r]; });
    dk.add(X);
    __syncthreads(); // v, v_new (dw) and dv_new are dead from here on: the next head's stream in
    if (rr + 1 < geo.group)
      issue_values(rr + 1);
    cp_async_commit();
    { // t2 = dA A^T
      Acc<16, 32> z;
      z.zero();
      warp_mma<Lay::MK, Lay::NK, kC>(z, sm.t1, kLdC, sm.ab, kLdC, mm, nn);
      store_acc_bf16(z, sm.r.t2 + mm * kLdC + nn, kLdC);
    }
    __syncthreads();
    { // dL = -A^T t2 (strictly lower) -> dbeta, dG, and dP = dL .* beta_i D into t1
      Acc<16, 32> dl;
      dl.zero();
      warp_mma<Lay::KM, Lay::KN, kC>(dl, sm.ab, kLdC, sm.r.t2, kLdC, mm, nn);
      dl.each([&](int r, int c, float& x) {
        const int i = mm + r, j = nn + c;
        const float d = -x;
        sm.t1[i * kLdC + j] =
            __float2bfloat16(i > j ? d * sm.beta[i] * __expf(sm.G[i] - sm.G[j]) : 0.f);
        x = i > j ? d * sm.pd[i * kLdF + j] : 0.f;
      });
      add_row_sums(dl, mm, nn, sm.dB, [](int, int, float x) { return x; });
      add_row_sums(dl, mm, nn, sm.dG, [&](int i, int, float x) { return x * sm.beta[i]; });
      add_col_sums(dl, mm, nn, sm.dG, [&](int i, int, float x) { return -x * sm.beta[i]; });
    }
    __syncthreads();
    // dk += (dP + dP^T) k
    warp_mma<Lay::MK, Lay::KN, kC>(dk, sm.t1, kLdC, sm.k, kLdD, m0, n0);
    warp_mma<Lay::KM, Lay::KN, kC>(dk, sm.t1, kLdC, sm.k, kLdD, m0, n0);

    if (warp == 0) { // assemble dG, reverse cumsum -> dg; write dg and dbeta
      const int lane = tid;
      float d[2], cl[2], cw[2], cl_sum = 0.f;
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int i = 2 * lane + e;
        cl[e] = sum_parts(sm.cl, i);
        cw[e] = sum_parts(sm.cw, i);
        cl_sum += cl[e];
        d[e] = sum_parts(sm.dG, i) - cl[e] + sm.beta[i] * sm.gam[i] * cw[e];
      }
      cl_sum = warp_sum(cl_sum);
      float s0dsl = 0.f;
#pragma unroll
      for (int w = 0; w < kThreads / 32; ++w)
        s0dsl += sm.s0dsl[w];
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (2 * lane + e == L - 1)
          d[e] += cl_sum + sm.gam[kC - 1] * s0dsl;
      float x = d[0] + d[1];
#pragma unroll
      for (int o = 1; o < 32; o <<= 1) {
        const float y = __shfl_down_sync(0xffffffffu, x, o);
        if (lane + o < 32)
          x += y;
      }
      const float dg[2] = {x, x - d[0]};
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int i = 2 * lane + e;
        if (i < L) {
          *dg_out.at(b, t0 + i, h) = dg[e];
          *db_out.at(b, t0 + i, h) = __float2bfloat16(sum_parts(sm.dB, i) + sm.gam[i] * cw[e]);
        }
      }
    }
  }

  if (geo.l2) {      // through the normalisation: dx = rstd (dxn - xn (xn . dxn))
    __syncthreads(); // the last head is done with t2
    if (tid < kC)
      for (int w = 0; w < kThreads / 32; ++w)
        sm.r.l2.dotq[w][tid] = sm.r.l2.dotk[w][tid] = 0.f;
    __syncthreads();
    add_row_sums(dq, m0, n0, sm.r.l2.dotq,
                 [&](int i, int j, float x) { return x * bfv(sm.q[i * kLdD + j]); });
    add_row_sums(dk, m0, n0, sm.r.l2.dotk,
                 [&](int i, int j, float x) { return x * bfv(sm.k[i * kLdD + j]); });
    __syncthreads();
    dq.each([&](int r, int c, float& x) {
      const int i = m0 + r;
      x = sm.rq[i] * (x - bfv(sm.q[i * kLdD + n0 + c]) * sum_parts(sm.r.l2.dotq, i));
    });
    dk.each([&](int r, int c, float& x) {
      const int i = m0 + r;
      x = sm.rk[i] * (x - bfv(sm.k[i * kLdD + n0 + c]) * sum_parts(sm.r.l2.dotk, i));
    });
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
  bwd_intra_kernel<<<dim3(geo.NT, geo.B * geo.Hk), kThreads, smem, st>>>(
      geo, in, ws, d_o, ref<bf16>(out.dq), ref<bf16>(out.dk), ref<bf16>(out.dv),
      ref<bf16>(out.dbeta), ref<float>(out.dg));
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
