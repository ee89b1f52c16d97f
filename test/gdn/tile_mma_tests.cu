// GPU test of hopper_wgmma.cuh: every m64n64 tile product the Hopper scans issue (each
// operand major, 64- and 128-deep, whole tiles and 64-column blocks of 128-column tiles), on
// random bf16 tiles loaded by cp.async into the swizzled layout, against a double-precision host
// product of the same bf16 values; and a fragment round trip (store_pair / load_pair) through a
// tile. Also the register-A products fused_bwd_hopper.cu issues: an accumulator turned into the A
// operand (to_reg_a), and a tile's transpose loaded by ldmatrix.trans (trans_operand) in two
// k-ranges. Needs sm_90a: exits 77 (CTest: skipped) without a CUDA device or on another
// architecture.
#include "hopper_wgmma.cuh"

#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <random>
#include <vector>

using namespace qr::gdn;
using namespace qr::gdn::hopper;

namespace {

constexpr int kThreads = 128; // one warpgroup

// out (64 x 64, fp32) = A B, A the block BA (64-column block) of an RA x CA tile, B likewise;
// a and b row-major in global memory. The tiles are copied in by cp.async, the product's output
// passes through a bf16 tile and back when `round_trip` (checking store_pair / load_pair).
template <Lay LA, Lay LB, int K, int RA, int CA, int RB, int CB, int BA, int BB>
__global__ void __launch_bounds__(kThreads, 1)
    product_kernel(const bf16* a, const bf16* b, float* out, bool round_trip) {
#if QR_GDN_WGMMA
  extern __shared__ char smem_raw[];
  bf16* base = reinterpret_cast<bf16*>(smem_raw + (1024 - smem_addr(smem_raw) % 1024) % 1024);
  const Tile<RA, CA> A{base};
  const Tile<RB, CB> B{base + Tile<RA, CA>::kElems};
  const Tile<64, 64> C{B.p + Tile<RB, CB>::kElems};
  load_tile<kThreads>(A, a, CA, RA, threadIdx.x);
  load_tile<kThreads>(B, b, CB, RB, threadIdx.x);
  cp_async_commit();
  cp_async_wait<0>();
  fence_async();
  __syncthreads();
  Frag acc;
  acc.zero();
  auto block_a = [&] {
    if constexpr (CA == 128 && LA == Lay::KM)
      return A.block(BA);
    else
      return A;
  };
  auto block_b = [&] {
    if constexpr (CB == 128 && LB == Lay::KN)
      return B.block(BB);
    else
      return B;
  };
  mma64<LA, LB, K>(acc, block_a(), block_b());
  mma_wait(acc);
  if (round_trip) {
    each_pair64(acc, [&](int, int r, int c, float& x0, float& x1) { store_pair(C, r, c, x0, x1); });
    __syncthreads();
    each_pair64(acc, [&](int, int r, int c, float& x0, float& x1) {
      const float2 v = load_pair(C, r, c);
      x0 = v.x;
      x1 = v.y;
    });
  }
  each_pair64(acc, [&](int, int r, int c, float& x0, float& x1) {
    out[r * 64 + c] = x0;
    out[r * 64 + c + 1] = x1;
  });
#endif
}

// Register-A products, 64 x 64 x 64: mode 0: p = A B (A MK, B KN), out = bf16(p) C with p as the
// register operand (to_reg_a) and C read LB; mode 1: out = A^T C, A^T's operand loaded from
// columns 64 .. 127 of a 64 x 128 tile by ldmatrix.trans (trans_operand) in two k-ranges (k-steps
// 0-1, then 2-3, one group each, as fused_bwd_hopper.cu's state warpgroup issues them).
template <Lay LB>
__global__ void __launch_bounds__(kThreads, 1)
    reg_a_kernel(int mode, const bf16* a, const bf16* b, const bf16* c, float* p_out, float* out) {
#if QR_GDN_WGMMA
  extern __shared__ char smem_raw[];
  bf16* base = reinterpret_cast<bf16*>(smem_raw + (1024 - smem_addr(smem_raw) % 1024) % 1024);
  const Tile<64, 128> A{base}; // mode 0: its first 64 columns
  const Tile<64, 64> B{A.p + Tile<64, 128>::kElems}, C{B.p + Tile<64, 64>::kElems};
  load_tile<kThreads>(A, a, 128, 64, threadIdx.x);
  load_tile<kThreads>(B, b, 64, 64, threadIdx.x);
  load_tile<kThreads>(C, c, 64, 64, threadIdx.x);
  cp_async_commit();
  cp_async_wait<0>();
  fence_async();
  __syncthreads();
  Frag acc;
  acc.zero();
  if (mode == 0) {
    Frag p;
    p.zero();
    mma64<Lay::MK, Lay::KN, 64>(p, A.block(0), B);
    mma_wait(p);
    each_pair64(p, [&](int, int r, int col, float& x0, float& x1) {
      p_out[r * 64 + col] = x0;
      p_out[r * 64 + col + 1] = x1;
    });
    RegA<4> ra;
    to_reg_a(p, ra);
    mma64_rs<LB>(acc, ra, C);
    mma_wait(acc);
    fence_regs(ra);
  } else {
    RegA<2> ra;
    trans_operand<0>(A, 64, ra);
    mma64_rs<LB, 0>(acc, ra, C);
    mma_wait(acc);
    fence_regs(ra);
    trans_operand<2>(A, 64, ra);
    mma64_rs<LB, 2>(acc, ra, C);
    mma_wait(acc);
    fence_regs(ra);
  }
  each_pair64(acc, [&](int, int r, int col, float& x0, float& x1) {
    out[r * 64 + col] = x0;
    out[r * 64 + col + 1] = x1;
  });
#endif
}

__global__ void path_kernel(int* wgmma) {
  *wgmma = QR_GDN_WGMMA;
}

int g_failures = 0;

template <Lay LA, Lay LB, int K, int RA, int CA, int RB, int CB, int BA = 0, int BB = 0>
void check(const char* what, std::mt19937& rng, bool round_trip = false) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<bf16> ha(RA * CA), hb(RB * CB);
  for (auto& x : ha)
    x = __float2bfloat16(dist(rng));
  for (auto& x : hb)
    x = __float2bfloat16(dist(rng));
  // element (m, k) of the product's A and (k, n) of its B in the row-major host tiles
  auto a_at = [&](int m, int k) {
    const int c0 = 64 * BA;
    return double(__bfloat162float(LA == Lay::MK ? ha[m * CA + k] : ha[k * CA + c0 + m]));
  };
  auto b_at = [&](int k, int n) {
    const int c0 = 64 * BB;
    return double(__bfloat162float(LB == Lay::NK ? hb[n * CB + k] : hb[k * CB + c0 + n]));
  };
  bf16 *da = nullptr, *db = nullptr;
  float* dout = nullptr;
  cudaMalloc(&da, ha.size() * sizeof(bf16));
  cudaMalloc(&db, hb.size() * sizeof(bf16));
  cudaMalloc(&dout, 64 * 64 * sizeof(float));
  cudaMemcpy(da, ha.data(), ha.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), hb.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  auto kernel = product_kernel<LA, LB, K, RA, CA, RB, CB, BA, BB>;
  const int smem =
      (Tile<RA, CA>::kElems + Tile<RB, CB>::kElems + Tile<64, 64>::kElems) * sizeof(bf16) + 1024;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  kernel<<<1, kThreads, smem>>>(da, db, dout, round_trip);
  std::vector<float> got(64 * 64);
  const cudaError_t e =
      cudaMemcpy(got.data(), dout, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  double worst = e == cudaSuccess ? 0.0 : INFINITY;
  for (int m = 0; m < 64 && e == cudaSuccess; ++m)
    for (int n = 0; n < 64; ++n) {
      double want = 0.0;
      for (int k = 0; k < K; ++k)
        want += a_at(m, k) * b_at(k, n);
      if (round_trip)
        want = double(__bfloat162float(__float2bfloat16(float(want))));
      worst = std::fmax(worst, std::fabs(got[m * 64 + n] - want));
    }
  // fp32 sums of at most 128 products of magnitude <= 1; after a bf16 round trip the two sides
  // may round to neighbours (one ulp: 2^-4 below 16)
  const bool ok = worst <= (round_trip ? 6.5e-2 : 1e-3);
  g_failures += !ok;
  std::printf("%-40s max_abs_err %.2e  %s%s%s\n", what, worst, ok ? "ok" : "FAIL",
              e == cudaSuccess ? "" : " ", e == cudaSuccess ? "" : cudaGetErrorString(e));
  cudaFree(da);
  cudaFree(db);
  cudaFree(dout);
}

// reg_a_kernel's products against double-precision host products of the same bf16 values (mode
// 0: of the device's own fp32 p, rounded to bf16 as to_reg_a rounds it).
template <Lay LB>
void check_reg_a(const char* what, int mode, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<bf16> ha(64 * 128), hb(64 * 64), hc(64 * 64);
  for (auto* v : {&ha, &hb, &hc})
    for (auto& x : *v)
      x = __float2bfloat16(dist(rng));
  auto f = [](bf16 x) { return double(__bfloat162float(x)); };
  bf16 *da = nullptr, *db = nullptr, *dc = nullptr;
  float *dp = nullptr, *dout = nullptr;
  cudaMalloc(&da, ha.size() * sizeof(bf16));
  cudaMalloc(&db, hb.size() * sizeof(bf16));
  cudaMalloc(&dc, hc.size() * sizeof(bf16));
  cudaMalloc(&dp, 64 * 64 * sizeof(float));
  cudaMalloc(&dout, 64 * 64 * sizeof(float));
  cudaMemcpy(da, ha.data(), ha.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), hb.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  cudaMemcpy(dc, hc.data(), hc.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  auto kernel = reg_a_kernel<LB>;
  const int smem = (Tile<64, 128>::kElems + 2 * Tile<64, 64>::kElems) * sizeof(bf16) + 1024;
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  kernel<<<1, kThreads, smem>>>(mode, da, db, dc, dp, dout);
  std::vector<float> got(64 * 64), p(64 * 64);
  cudaError_t e = cudaMemcpy(got.data(), dout, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  if (e == cudaSuccess)
    e = cudaMemcpy(p.data(), dp, p.size() * sizeof(float), cudaMemcpyDeviceToHost);
  // element (k, n) of the product's B, read LB from the row-major host tile
  auto c_at = [&](int k, int n) { return f(LB == Lay::NK ? hc[n * 64 + k] : hc[k * 64 + n]); };
  double worst = e == cudaSuccess ? 0.0 : INFINITY;
  for (int m = 0; m < 64 && e == cudaSuccess; ++m)
    for (int n = 0; n < 64; ++n) {
      double want = 0.0;
      for (int k = 0; k < 64; ++k) {
        const double x = mode == 0 ? f(__float2bfloat16(p[m * 64 + k])) : f(ha[k * 128 + 64 + m]);
        want += x * c_at(k, n);
      }
      worst = std::fmax(worst, std::fabs(got[m * 64 + n] - want));
    }
  // fp32 sums of 64 products, |p| <= 64 in mode 0 (its relative error bound), <= 1 in mode 1
  const bool ok = worst <= (mode == 0 ? 2e-2 : 1e-3);
  g_failures += !ok;
  std::printf("%-40s max_abs_err %.2e  %s%s%s\n", what, worst, ok ? "ok" : "FAIL",
              e == cudaSuccess ? "" : " ", e == cudaSuccess ? "" : cudaGetErrorString(e));
  for (void* ptr : {(void*)da, (void*)db, (void*)dc, (void*)dp, (void*)dout})
    cudaFree(ptr);
}

} // namespace

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: skipped\n");
    return 77;
  }
  int* path = nullptr;
  int wgmma = -1;
  cudaMalloc(&path, sizeof(int));
  path_kernel<<<1, 1>>>(path);
  cudaMemcpy(&wgmma, path, sizeof(int), cudaMemcpyDeviceToHost);
  cudaFree(path);
  if (wgmma != 1) {
    std::printf("not an sm_90a device: skipped\n");
    return 77;
  }
  std::mt19937 rng(13);
  // fused_scan_hopper.cu's products, by operand majors and tiles
  check<Lay::MK, Lay::KN, 128, 64, 128, 128, 64>("K S       MK x KN  k 128, B 128x64", rng);
  check<Lay::MK, Lay::KN, 128, 64, 128, 128, 128, 0, 1>("Q Sb_1    MK x KN  B block 1 of 128", rng);
  check<Lay::MK, Lay::KN, 64, 64, 64, 64, 64>("A X       MK x KN  k 64", rng, true);
  check<Lay::KM, Lay::KN, 64, 64, 128, 64, 64, 0>("K^T Es    KM x KN  A block 0 of 128", rng);
  check<Lay::KM, Lay::KN, 64, 64, 128, 64, 64, 1>("K^T Es    KM x KN  A block 1 of 128", rng);
  check<Lay::MK, Lay::NK, 128, 64, 128, 64, 128>("Q K^T     MK x NK  k 128", rng, true);
  check<Lay::MK, Lay::KN, 64, 64, 64, 64, 128, 0, 1>("Ms Vn_1   MK x KN  B block 1 of 128", rng);
  // fused_bwd_scan_hopper.cu's, where their operands differ from the forward's (K dSb is K S,
  // K^T Y is K^T Es, Q K^T as above)
  check<Lay::KM, Lay::KN, 64, 64, 128, 64, 128, 1, 1>("Qs^T do_1 KM x KN  A, B blocks 1 of 128",
                                                      rng);
  check<Lay::KM, Lay::KN, 64, 64, 64, 64, 128, 0, 1>("Ms^T do_1 KM x KN  B block 1 of 128", rng);
  // fused_bwd_hopper.cu's register-A products: T = Ms^T do and t2 = dA A^T from accumulators,
  // Qs^T do from q's transpose
  check_reg_a<Lay::KN>("acc -> A  RS x KN (T = Ms^T do)", 0, rng);
  check_reg_a<Lay::NK>("acc -> A  RS x NK (t2 = dA A^T)", 0, rng);
  check_reg_a<Lay::KN>("q^T -> A  RS x KN, k-steps 0-1, 2-3", 1, rng);
  std::printf("%s\n", g_failures ? "FAILED" : "PASSED");
  return g_failures ? 1 : 0;
}
