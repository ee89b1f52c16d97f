// GPU test of sm90/wgmma.cuh: every m64n64 tile product the Hopper scans issue (each
// operand major, 64- and 128-deep, whole tiles and 64-column blocks of 128-column tiles), on
// random bf16 tiles loaded by cp.async into the swizzled layout, against a double-precision host
// product of the same bf16 values; and a fragment round trip (store_pair / load_pair) through a
// tile. Needs sm_90a: exits 77 (CTest: skipped) without a CUDA device or on another
// architecture.
#include "sm90/wgmma.cuh"

#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <random>
#include <vector>

using namespace qr::gdn;
using namespace qr::gdn::sm90;

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
  // sm90/fused_scan.cu's products, by operand majors and tiles
  check<Lay::MK, Lay::KN, 128, 64, 128, 128, 64>("K S       MK x KN  k 128, B 128x64", rng);
  check<Lay::MK, Lay::KN, 128, 64, 128, 128, 128, 0, 1>("Q Sb_1    MK x KN  B block 1 of 128", rng);
  check<Lay::MK, Lay::KN, 64, 64, 64, 64, 64>("A X       MK x KN  k 64", rng, true);
  check<Lay::KM, Lay::KN, 64, 64, 128, 64, 64, 0>("K^T Es    KM x KN  A block 0 of 128", rng);
  check<Lay::KM, Lay::KN, 64, 64, 128, 64, 64, 1>("K^T Es    KM x KN  A block 1 of 128", rng);
  check<Lay::MK, Lay::NK, 128, 64, 128, 64, 128>("Q K^T     MK x NK  k 128", rng, true);
  check<Lay::MK, Lay::KN, 64, 64, 64, 64, 128, 0, 1>("Ms Vn_1   MK x KN  B block 1 of 128", rng);
  // sm90/fused_bwd_scan.cu's, where their operands differ from the forward's (K dSb is K S,
  // K^T Y is K^T Es, Q K^T as above)
  check<Lay::KM, Lay::KN, 64, 64, 128, 64, 128, 1, 1>("Qs^T do_1 KM x KN  A, B blocks 1 of 128",
                                                      rng);
  check<Lay::KM, Lay::KN, 64, 64, 64, 64, 128, 0, 1>("Ms^T do_1 KM x KN  B block 1 of 128", rng);
  std::printf("%s\n", g_failures ? "FAILED" : "PASSED");
  return g_failures ? 1 : 0;
}
