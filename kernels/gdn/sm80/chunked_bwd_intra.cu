// Chunked GDN, stage 3 of the backward: every gradient of one 64-token chunk, one CTA per (chunk,
// key head) looping over the key head's value heads so dq and dk sum over the group in registers
// (a 2 x 4 grid of 32 x 32 warp tiles over the 64 x 128 tiles).
//
// Per value head, with S0 / dSL the state entering / gradient of the state leaving the chunk (from
// the scans), nu / dnu = v_new and its gradient, D_ij = exp(G_i - G_j), Gm = exp(G), El = exp(Gl -
// G):
//   dq += scale Gm .* (do S0^T) + dQK k,        dQK = lowerIncl(scale do nu^T) .* D
//   dk += El .* (nu dSL^T) + dQK^T q + beta Gm .* (A^T dw) + (dP + dP^T) k
//   dw  = -dnu S0^T,  dv = beta .* (A^T dnu)
//   dA  = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)),  dL = strictLower(-A^T dA A^T)
//   dP  = dL .* beta_i D,  with A = (I + L)^-1 recomputed here (as in chunked_prep.cu)
// dbeta and dG collect the matching row / column sums; dg is the reverse in-chunk cumsum of dG.
// Finally dq, dk go through the l2 normalisation's backward: dx = rstd (dxn - xn (xn . dxn)).
#include "chunked.cuh"

namespace qr::gdn::chunked {
namespace {

struct IntraSmem {
  bf16 q[kC * kLdD], k[kC * kLdD]; // normalised, shared by the group
  bf16 v[kC * kLdD], d_o[kC * kLdD];
  bf16 nu[kC * kLdD]; // v_new, then dw
  bf16 dnu[kC * kLdD];
  bf16 t1[kC * kLdC]; // dQK, then dA, then dP
  union {
    struct {
      bf16 s0[kD * kLdD], dsl[kD * kLdD];
    } st;
    struct {
      float pd[kC * kLdF]; // K K^T .* D, strictly lower
      float ainv[kC * kLdF];
      float tmp[1024];
      bf16 ab[kC * kLdC]; // A in bf16
      bf16 t2[kC * kLdC]; // dA A^T
    } wy;
  } r;
  float G[kC], gam[kC], el[kC], beta[kC], rq[kC], rk[kC];
  // per-warp partial sums: dG, dbeta, the two row dots with k (cl, cw), <S0, dSL> (slot 0 of
  // each warp), and the l2-backward row dots of dq and dk
  Parts dG, dB, cl, cw, s0dsl, dotq, dotk;
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

  load_tile_async<kC, kD, kThreads>(sm.q, kLdD, in.q.at(b, t0, hk), in.q.st, L);
  load_tile_async<kC, kD, kThreads>(sm.k, kLdD, in.k.at(b, t0, hk), in.k.st, L);
  cp_async_commit();
  if (tid < kC)
    for (int w = 0; w < kThreads / 32; ++w)
      sm.dotq[w][tid] = sm.dotk[w][tid] = 0.f;
  cp_async_wait<0>();
  __syncthreads();
  if (geo.l2) {
    normalize_rows(sm.q, kLdD, L, sm.rq);
    normalize_rows(sm.k, kLdD, L, sm.rk);
  }

  Acc<32, 32> dq, dk, X;
  dq.zero();
  dk.zero();
  for (int rr = 0; rr < geo.group; ++rr) {
    const int h = hk * geo.group + rr, bh = b * geo.Hv + h;
    const size_t row0 = (size_t(bh) * geo.NT + n) * kC;
    const size_t st0 = (size_t(bh) * geo.NT + n) * kD * kD;
    __syncthreads(); // the previous head is done with every buffer
    load_tile_async<kC, kD, kThreads>(sm.v, kLdD, in.v.at(b, t0, h), in.v.st, L);
    load_tile_async<kC, kD, kThreads>(sm.d_o, kLdD, d_o.at(b, t0, h), d_o.st, L);
    load_tile_async<kC, kD, kThreads>(sm.nu, kLdD, ws.nu + row0 * kD, kD, kC);
    load_tile_async<kC, kD, kThreads>(sm.dnu, kLdD, ws.dnu + row0 * kD, kD, kC);
    load_tile_async<kD, kD, kThreads>(sm.r.st.s0, kLdD, ws.h + st0, kD, kD);
    load_tile_async<kD, kD, kThreads>(sm.r.st.dsl, kLdD, ws.dh + st0, kD, kD);
    cp_async_commit();
    if (tid < kC) {
      const float G = ws.G[row0 + tid], Gl = ws.G[row0 + kC - 1];
      sm.G[tid] = G;
      sm.gam[tid] = __expf(G);
      sm.el[tid] = __expf(Gl - G);
      sm.beta[tid] = tid < L ? bfv(*in.beta.at(b, t0 + tid, h)) : 0.f;
      for (int w = 0; w < kThreads / 32; ++w)
        sm.dG[w][tid] = sm.dB[w][tid] = sm.cl[w][tid] = sm.cw[w][tid] = sm.s0dsl[w][tid] = 0.f;
    }
    cp_async_wait<0>();
    __syncthreads();

    // dq += scale Gm .* (do S0^T); dG += row dots with q
    X.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(X, sm.d_o, kLdD, sm.r.st.s0, kLdD, m0, n0);
    X.each([&](int r, int, float& x) { x *= geo.scale * sm.gam[m0 + r]; });
    add_row_sums(X, m0, n0, sm.dG, warp,
                 [&](int i, int j, float x) { return x * bfv(sm.q[i * kLdD + j]); });
    dq.add(X);
    // dk += El .* (nu dSL^T); the row dots with k go to cl (dG_i -= cl_i, dG_last += sum cl)
    X.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(X, sm.nu, kLdD, sm.r.st.dsl, kLdD, m0, n0);
    X.each([&](int r, int, float& x) { x *= sm.el[m0 + r]; });
    add_row_sums(X, m0, n0, sm.cl, warp,
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
      add_row_sums(a1, mm, nn, sm.dG, warp, [](int, int, float x) { return x; });
      add_col_sums(a1, mm, nn, sm.dG, warp, [](int, int, float x) { return -x; });
    }
    { // <S0, dSL> for dG_last
      float s = 0.f;
      for (int e = tid; e < kD * kD / 2; e += kThreads) {
        const int i = e / (kD / 2), j = 2 * (e % (kD / 2));
        const float2 a =
            __bfloat1622float2(*reinterpret_cast<const __nv_bfloat162*>(sm.r.st.s0 + i * kLdD + j));
        const float2 d = __bfloat1622float2(
            *reinterpret_cast<const __nv_bfloat162*>(sm.r.st.dsl + i * kLdD + j));
        s += a.x * d.x + a.y * d.y;
      }
      s = warp_sum(s);
      if ((tid & 31) == 0)
        sm.s0dsl[warp][0] = s;
    }
    __syncthreads();
    // dw = -dnu S0^T, kept in the nu buffer
    X.zero();
    warp_mma<Lay::MK, Lay::NK, kD>(X, sm.dnu, kLdD, sm.r.st.s0, kLdD, m0, n0);
    X.each([](int, int, float& x) { x = -x; });
    store_acc_bf16(X, sm.nu + m0 * kLdD + n0, kLdD);
    // dq += dQK k, dk += dQK^T q
    warp_mma<Lay::MK, Lay::KN, kC>(dq, sm.t1, kLdC, sm.k, kLdD, m0, n0);
    warp_mma<Lay::KM, Lay::KN, kC>(dk, sm.t1, kLdC, sm.q, kLdD, m0, n0);
    __syncthreads(); // S0 / dSL are dead from here on: their space holds the WY work

    { // P .* D (strictly lower) and A = (I + diag(beta) P .* D)^-1
      Acc<16, 32> p;
      p.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(p, sm.k, kLdD, sm.k, kLdD, mm, nn);
      p.each([&](int r, int c, float& x) {
        const int i = mm + r, j = nn + c;
        sm.r.wy.pd[i * kLdF + j] = i > j ? x * __expf(sm.G[i] - sm.G[j]) : 0.f;
      });
      for (int e = tid; e < kC * kLdF; e += kThreads)
        sm.r.wy.ainv[e] = 0.f;
    }
    invert_unit_lower(sm.r.wy.pd, sm.beta, sm.r.wy.ainv, sm.r.wy.tmp);
    for (int e = tid; e < kC * kC; e += kThreads)
      sm.r.wy.ab[(e / kC) * kLdC + e % kC] =
          __float2bfloat16(sm.r.wy.ainv[(e / kC) * kLdF + e % kC]);
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
    warp_mma<Lay::KM, Lay::KN, kC>(X, sm.r.wy.ab, kLdC, sm.dnu, kLdD, m0, n0);
    add_row_sums(X, m0, n0, sm.dB, warp,
                 [&](int i, int j, float x) { return x * bfv(sm.v[i * kLdD + j]); });
    X.each([&](int r, int, float& x) { x *= sm.beta[m0 + r]; });
    store_acc_bf16(X, dv_out.at(b, t0 + m0, h) + n0, dv_out.st, L - m0);
    // dk += beta Gm .* (A^T dw); the row dots with k go to cw
    X.zero();
    warp_mma<Lay::KM, Lay::KN, kC>(X, sm.r.wy.ab, kLdC, sm.nu, kLdD, m0, n0);
    add_row_sums(X, m0, n0, sm.cw, warp,
                 [&](int i, int j, float x) { return x * bfv(sm.k[i * kLdD + j]); });
    X.each([&](int r, int, float& x) { x *= sm.beta[m0 + r] * sm.gam[m0 + r]; });
    dk.add(X);
    __syncthreads();
    { // t2 = dA A^T
      Acc<16, 32> z;
      z.zero();
      warp_mma<Lay::MK, Lay::NK, kC>(z, sm.t1, kLdC, sm.r.wy.ab, kLdC, mm, nn);
      store_acc_bf16(z, sm.r.wy.t2 + mm * kLdC + nn, kLdC);
    }
    __syncthreads();
    { // dL = -A^T t2 (strictly lower) -> dbeta, dG, and dP = dL .* beta_i D into t1
      Acc<16, 32> dl;
      dl.zero();
      warp_mma<Lay::KM, Lay::KN, kC>(dl, sm.r.wy.ab, kLdC, sm.r.wy.t2, kLdC, mm, nn);
      dl.each([&](int r, int c, float& x) {
        const int i = mm + r, j = nn + c;
        const float d = -x;
        sm.t1[i * kLdC + j] =
            __float2bfloat16(i > j ? d * sm.beta[i] * __expf(sm.G[i] - sm.G[j]) : 0.f);
        x = i > j ? d * sm.r.wy.pd[i * kLdF + j] : 0.f;
      });
      add_row_sums(dl, mm, nn, sm.dB, warp, [](int, int, float x) { return x; });
      add_row_sums(dl, mm, nn, sm.dG, warp, [&](int i, int, float x) { return x * sm.beta[i]; });
      add_col_sums(dl, mm, nn, sm.dG, warp, [&](int i, int, float x) { return -x * sm.beta[i]; });
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
#pragma unroll
      for (int e = 0; e < 2; ++e)
        if (2 * lane + e == L - 1)
          d[e] += cl_sum + sm.gam[kC - 1] * sum_parts(sm.s0dsl, 0);
      float dg[2];
      reverse_cumsum_pairs(d, lane, dg);
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

  if (geo.l2) { // through the normalisation: dx = rstd (dxn - xn (xn . dxn))
    add_row_sums(dq, m0, n0, sm.dotq, warp,
                 [&](int i, int j, float x) { return x * bfv(sm.q[i * kLdD + j]); });
    add_row_sums(dk, m0, n0, sm.dotk, warp,
                 [&](int i, int j, float x) { return x * bfv(sm.k[i * kLdD + j]); });
    __syncthreads();
    dq.each([&](int r, int c, float& x) {
      const int i = m0 + r;
      x = sm.rq[i] * (x - bfv(sm.q[i * kLdD + n0 + c]) * sum_parts(sm.dotq, i));
    });
    dk.each([&](int r, int c, float& x) {
      const int i = m0 + r;
      x = sm.rk[i] * (x - bfv(sm.k[i * kLdD + n0 + c]) * sum_parts(sm.dotk, i));
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

} // namespace qr::gdn::chunked
