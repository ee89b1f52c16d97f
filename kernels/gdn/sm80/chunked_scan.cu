// Chunked GDN, stage 2: the sequential scans over chunks, one CTA per (64 value columns, value
// head), the 128 x 64 fp32 state slice in registers (a 4 x 2 grid of 32 x 32 warp tiles).
// Pipelining: when the grid fits on the SMs in one wave, two smem stages prefetch the next chunk
// with cp.async while the current one computes (one CTA per SM); when it does not, one stage and
// at most 128 registers let two CTAs share an SM and hide each other's loads, in one wave.
//
// Forward, per chunk with entering state S and Gl = G of the last real token:
//   nu = u - w S                                   (v_new)
//   o  = scale (diag(exp(G)) q S + M nu),  M = lowerIncl(q k^T .* exp(G_i - G_j))
//   S  = exp(Gl) S + k^T diag(exp(Gl - G)) nu
// Reverse, per chunk with dS the gradient of the leaving state:
//   dnu = scale M^T do + diag(exp(Gl - G)) k dS
//   dS  = exp(Gl) dS + scale q^T diag(exp(G)) do - w^T dnu
#include "chunked.cuh"

namespace qr::gdn::chunked {
namespace {

struct FwdStage {
  bf16 w[kC * kLdD], k[kC * kLdD], q[kC * kLdD];
  bf16 u[kC * kLdC];
  float G[kC];
};
template <int kStages>
struct FwdScanSmem {
  FwdStage st[kStages];
  bf16 s[kD * kLdC];   // entering state (bf16 operand copy)
  bf16 nu[kC * kLdC];  // v_new
  bf16 nus[kC * kLdC]; // v_new .* exp(Gl - G)
  bf16 m[kC * kLdC];   // masked, decayed q k^T
};

struct BwdStage {
  bf16 q[kC * kLdD], k[kC * kLdD], w[kC * kLdD];
  bf16 d_o[kC * kLdC];
  float G[kC];
};
template <int kStages>
struct BwdScanSmem {
  BwdStage st[kStages];
  bf16 ds[kD * kLdC];   // leaving-state gradient (bf16 operand copy)
  bf16 m[kC * kLdC];    // masked, decayed q k^T
  bf16 dos[kC * kLdC];  // scale exp(G) .* do
  bf16 dnun[kC * kLdC]; // -dnu
};

__device__ __forceinline__ void load_G(float* dst, const float* src) {
  if (threadIdx.x < kC / 4)
    cp_async16(dst + 4 * threadIdx.x, src + 4 * threadIdx.x, true);
}

template <bool kSave, int kStages>
__global__ void __launch_bounds__(kThreads, 3 - kStages)
    fwd_scan_kernel(Geo geo, FwdInputs in, Workspace ws, Ref<bf16> o, float* ht) {
  extern __shared__ __align__(16) char smem_raw[];
  FwdScanSmem<kStages>& sm = *reinterpret_cast<FwdScanSmem<kStages>*>(smem_raw);
  const int v0 = blockIdx.x * kBV, bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int hk = h / geo.group, warp = threadIdx.x / 32;
  const int m0 = 32 * (warp % 4), n0 = 32 * (warp / 4); // state warp tile
  const int mm = 16 * (warp % 4), nn = 32 * (warp / 4); // 64 x 64 warp tile

  auto issue = [&](int n) {
    FwdStage& s = sm.st[n % kStages];
    const size_t row0 = (size_t(bh) * geo.NT + n) * kC;
    const int t0 = n * kC, L = geo.valid(n);
    load_tile_async<kC, kD, kThreads>(s.w, kLdD, ws.w + row0 * kD, kD, kC);
    load_tile_async<kC, kBV, kThreads>(s.u, kLdC, ws.u + row0 * kD + v0, kD, kC);
    load_tile_async<kC, kD, kThreads>(s.k, kLdD, in.k.at(b, t0, hk), in.k.st, L);
    if (!kSave)
      load_tile_async<kC, kD, kThreads>(s.q, kLdD, in.q.at(b, t0, hk), in.q.st, L);
    load_G(s.G, ws.G + row0);
  };

  Acc<32, 32> S;
  S.zero();
  const size_t state0 = size_t(bh) * kD * kD;
  if (in.h0)
    S.each([&](int r, int c, float& x) { x = in.h0[state0 + (m0 + r) * kD + v0 + n0 + c]; });

  issue(0);
  cp_async_commit();
  for (int n = 0; n < geo.NT; ++n) {
    if constexpr (kStages == 2) {
      if (n + 1 < geo.NT)
        issue(n + 1);
      cp_async_commit();
    }
    cp_async_wait<kStages - 1>();
    __syncthreads();
    FwdStage& s = sm.st[n % kStages];
    const int t0 = n * kC, L = geo.valid(n);
    const size_t row0 = (size_t(bh) * geo.NT + n) * kC;
    if (geo.l2) {
      normalize_rows(s.k, kLdD, L, nullptr);
      if (!kSave)
        normalize_rows(s.q, kLdD, L, nullptr);
    }
    store_acc_bf16(S, sm.s + m0 * kLdC + n0, kLdC);
    if (kSave)
      store_acc_bf16(S, ws.h + ((size_t(bh) * geo.NT + n) * kD + m0) * kD + v0 + n0, kD);
    __syncthreads();

    const float Gl = s.G[kC - 1];
    {
      Acc<16, 32> a;
      a.zero();
      warp_mma<Lay::MK, Lay::KN, kD>(a, s.w, kLdD, sm.s, kLdC, mm, nn);
      a.each([&](int r, int c, float& x) {
        const int i = mm + r, j = nn + c;
        x = __bfloat162float(s.u[i * kLdC + j]) - x;
        sm.nu[i * kLdC + j] = __float2bfloat16(x);
        sm.nus[i * kLdC + j] = __float2bfloat16(x * __expf(Gl - s.G[i]));
      });
      if (kSave)
        store_acc_bf16(a, ws.nu + (row0 + mm) * kD + v0 + nn, kD);
    }
    if (!kSave) {
      Acc<16, 32> a;
      a.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(a, s.q, kLdD, s.k, kLdD, mm, nn);
      a.each([&](int r, int c, float& x) {
        const int i = mm + r, j = nn + c;
        sm.m[i * kLdC + j] = __float2bfloat16(i >= j ? x * __expf(s.G[i] - s.G[j]) : 0.f);
      });
    }
    __syncthreads();

    if (!kSave) {
      Acc<16, 32> a;
      a.zero();
      warp_mma<Lay::MK, Lay::KN, kD>(a, s.q, kLdD, sm.s, kLdC, mm, nn);
      a.each([&](int r, int, float& x) { x *= __expf(s.G[mm + r]); });
      warp_mma<Lay::MK, Lay::KN, kC>(a, sm.m, kLdC, sm.nu, kLdC, mm, nn);
      a.each([&](int, int, float& x) { x *= geo.scale; });
      store_acc_bf16(a, o.at(b, t0 + mm, h) + v0 + nn, o.st, L - mm);
    }
    const float decay = __expf(Gl);
    S.each([&](int, int, float& x) { x *= decay; });
    warp_mma<Lay::KM, Lay::KN, kC>(S, s.k, kLdD, sm.nus, kLdC, m0, n0);
    __syncthreads();
    if (kStages == 1 && n + 1 < geo.NT) { // the only stage is free again
      issue(n + 1);
      cp_async_commit();
    }
  }
  if (ht)
    S.each([&](int r, int c, float& x) { ht[state0 + (m0 + r) * kD + v0 + n0 + c] = x; });
}

template <int kStages>
__global__ void __launch_bounds__(kThreads, 3 - kStages)
    bwd_scan_kernel(Geo geo, FwdInputs in, Workspace ws, Ref<const bf16> d_o, const float* dht,
                    float* dh0) {
  extern __shared__ __align__(16) char smem_raw[];
  BwdScanSmem<kStages>& sm = *reinterpret_cast<BwdScanSmem<kStages>*>(smem_raw);
  const int v0 = blockIdx.x * kBV, bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int hk = h / geo.group, tid = threadIdx.x, warp = tid / 32;
  const int m0 = 32 * (warp % 4), n0 = 32 * (warp / 4);
  const int mm = 16 * (warp % 4), nn = 32 * (warp / 4);

  auto issue = [&](int n) {
    BwdStage& s = sm.st[n % kStages];
    const size_t row0 = (size_t(bh) * geo.NT + n) * kC;
    const int t0 = n * kC, L = geo.valid(n);
    load_tile_async<kC, kD, kThreads>(s.w, kLdD, ws.w + row0 * kD, kD, kC);
    load_tile_async<kC, kD, kThreads>(s.k, kLdD, in.k.at(b, t0, hk), in.k.st, L);
    load_tile_async<kC, kD, kThreads>(s.q, kLdD, in.q.at(b, t0, hk), in.q.st, L);
    load_tile_async<kC, kBV, kThreads>(s.d_o, kLdC, d_o.at(b, t0, h) + v0, d_o.st, L);
    load_G(s.G, ws.G + row0);
  };

  Acc<32, 32> dS;
  dS.zero();
  const size_t state0 = size_t(bh) * kD * kD;
  if (dht)
    dS.each([&](int r, int c, float& x) { x = dht[state0 + (m0 + r) * kD + v0 + n0 + c]; });

  issue(geo.NT - 1);
  cp_async_commit();
  for (int n = geo.NT - 1; n >= 0; --n) {
    if constexpr (kStages == 2) {
      if (n > 0)
        issue(n - 1);
      cp_async_commit();
    }
    cp_async_wait<kStages - 1>();
    __syncthreads();
    BwdStage& s = sm.st[n % kStages];
    const size_t row0 = (size_t(bh) * geo.NT + n) * kC;
    if (geo.l2) {
      normalize_rows(s.k, kLdD, geo.valid(n), nullptr);
      normalize_rows(s.q, kLdD, geo.valid(n), nullptr);
    }
    store_acc_bf16(dS, sm.ds + m0 * kLdC + n0, kLdC);
    store_acc_bf16(dS, ws.dh + ((size_t(bh) * geo.NT + n) * kD + m0) * kD + v0 + n0, kD);
    for (int e = tid; e < kC * kBV; e += kThreads) {
      const int i = e / kBV, j = e % kBV;
      sm.dos[i * kLdC + j] =
          __float2bfloat16(geo.scale * __expf(s.G[i]) * __bfloat162float(s.d_o[i * kLdC + j]));
    }
    __syncthreads();
    {
      Acc<16, 32> a;
      a.zero();
      warp_mma<Lay::MK, Lay::NK, kD>(a, s.q, kLdD, s.k, kLdD, mm, nn);
      a.each([&](int r, int c, float& x) {
        const int i = mm + r, j = nn + c;
        sm.m[i * kLdC + j] = __float2bfloat16(i >= j ? x * __expf(s.G[i] - s.G[j]) : 0.f);
      });
    }
    __syncthreads();

    const float Gl = s.G[kC - 1];
    {
      Acc<16, 32> a1, a2;
      a1.zero();
      a2.zero();
      warp_mma<Lay::KM, Lay::KN, kC>(a1, sm.m, kLdC, s.d_o, kLdC, mm, nn);
      warp_mma<Lay::MK, Lay::KN, kD>(a2, s.k, kLdD, sm.ds, kLdC, mm, nn);
      a1.each([&](int, int, float& x) { x *= geo.scale; });
      a2.each([&](int r, int, float& x) { x *= __expf(Gl - s.G[mm + r]); });
      a1.add(a2);
      a1.each([&](int r, int c, float& x) {
        sm.dnun[(mm + r) * kLdC + nn + c] = __float2bfloat16(-x);
      });
      store_acc_bf16(a1, ws.dnu + (row0 + mm) * kD + v0 + nn, kD);
    }
    __syncthreads();

    const float decay = __expf(Gl);
    dS.each([&](int, int, float& x) { x *= decay; });
    warp_mma<Lay::KM, Lay::KN, kC>(dS, s.q, kLdD, sm.dos, kLdC, m0, n0);
    warp_mma<Lay::KM, Lay::KN, kC>(dS, s.w, kLdD, sm.dnun, kLdC, m0, n0);
    __syncthreads();
    if (kStages == 1 && n > 0) { // the only stage is free again
      issue(n - 1);
      cp_async_commit();
    }
  }
  if (dh0)
    dS.each([&](int r, int c, float& x) { dh0[state0 + (m0 + r) * kD + v0 + n0 + c] = x; });
}

// One stage (two CTAs per SM) when the grid is larger than the SM count, else two stages.
std::string use_one_stage(const Geo& geo, bool& one) {
  int dev = 0, sms = 0;
  QR_CUDA_TRY(cudaGetDevice(&dev));
  QR_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  one = (kD / kBV) * geo.B * geo.Hv > sms;
  return {};
}

template <class Kernel, class... Args>
std::string launch_scan(Kernel kernel, int smem, const Geo& geo, cudaStream_t st, Args... args) {
  QR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kernel<<<dim3(kD / kBV, geo.B * geo.Hv), kThreads, smem, st>>>(geo, args...);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace

std::string launch_fwd_scan(const Geo& geo, const FwdInputs& in, const Workspace& ws, Ref<bf16> o,
                            float* ht, bool save, cudaStream_t st) {
  bool one = false;
  if (std::string e = use_one_stage(geo, one); !e.empty())
    return e;
  const int smem1 = sizeof(FwdScanSmem<1>), smem2 = sizeof(FwdScanSmem<2>);
  if (save)
    return one ? launch_scan(fwd_scan_kernel<true, 1>, smem1, geo, st, in, ws, o, ht)
               : launch_scan(fwd_scan_kernel<true, 2>, smem2, geo, st, in, ws, o, ht);
  return one ? launch_scan(fwd_scan_kernel<false, 1>, smem1, geo, st, in, ws, o, ht)
             : launch_scan(fwd_scan_kernel<false, 2>, smem2, geo, st, in, ws, o, ht);
}

std::string launch_bwd_scan(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                            Ref<const bf16> d_o, const float* dht, float* dh0, cudaStream_t st) {
  bool one = false;
  if (std::string e = use_one_stage(geo, one); !e.empty())
    return e;
  return one ? launch_scan(bwd_scan_kernel<1>, sizeof(BwdScanSmem<1>), geo, st, in, ws, d_o, dht,
                           dh0)
             : launch_scan(bwd_scan_kernel<2>, sizeof(BwdScanSmem<2>), geo, st, in, ws, d_o, dht,
                           dh0);
}

} // namespace qr::gdn::chunked
