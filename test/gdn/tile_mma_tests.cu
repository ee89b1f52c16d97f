// GPU test of hopper_wgmma.cuh: every shape of tile product that bwd_intra's gradients need (each
// operand major, 16- and 32-wide warp tiles, 64- and 128-deep products, partial k ranges, tiles
// of 64 and 128 rows), on random bf16 tiles, against a double-precision host product of
// the same bf16 values. Built for sm_90a it checks the wgmma path (swizzled layout, descriptors,
// transposes), for other targets the mma.sync one. Exits 77 without a CUDA device (CTest: skipped).
#include "hopper_wgmma.cuh"

#include <cmath>
#include <cstdio>
#include <cuda_runtime.h>
#include <random>
#include <vector>

using namespace qr::gdn;
using namespace qr::gdn::tiles;

namespace {

constexpr int kThreads = 512; // four warpgroups, as in fused_bwd_intra.cu

// out (64 x 4 WN, fp32) = A B over k-steps [KLO, KHI), each warp its tile (16 (warp % 4),
// WN (warp / 4)); a and b are row-major in global memory (RA x CA and RB x CB). The range is a
// compile-time one, as in the kernels, so that wgmma needs no compiler-inserted waits.
template <Lay LA, Lay LB, int K, int WN, int RA, int CA, int RB, int CB, int KLO, int KHI>
__global__ void __launch_bounds__(kThreads, 1)
    product_kernel(const bf16* a, const bf16* b, float* out) {
  extern __shared__ __align__(1024) char smem_raw[];
  const Tile<RA, CA> A{reinterpret_cast<bf16*>(smem_raw)};
  const Tile<RB, CB> B{A.p + Tile<RA, CA>::kElems};
  load_tile<kThreads>(A, a, CA, RA);
  load_tile<kThreads>(B, b, CB, RB);
  cp_async_commit();
  cp_async_wait<0>();
  sync_tiles();
  const int warp = threadIdx.x / 32, m0 = 16 * (warp % 4), n0 = WN * (warp / 4);
  Acc<16, WN> acc;
  acc.zero();
  tile_mma<LA, LB, K>(acc, A, B, m0, n0, KLO, KHI);
  mma_wait(acc);
  acc.each([&](int r, int c, float& x) { out[(m0 + r) * 4 * WN + n0 + c] = x; });
}

__global__ void path_kernel(int* wgmma) {
  *wgmma = kWgmma;
}

int g_failures = 0;

template <Lay LA, Lay LB, int K, int WN, int RA, int CA, int RB, int CB, int KLO = 0, int KHI = K>
void check(const char* what, std::mt19937& rng) {
  constexpr int k_lo = KLO, k_hi = KHI;
  constexpr int N = 4 * WN;
  std::uniform_real_distribution<float> dist(-1.f, 1.f);
  std::vector<bf16> ha(RA * CA), hb(RB * CB);
  for (auto& x : ha)
    x = __float2bfloat16(dist(rng));
  for (auto& x : hb)
    x = __float2bfloat16(dist(rng));
  // element (m, k) of the product's A and (k, n) of its B in the row-major host tiles
  auto a_at = [&](int m, int k) {
    return double(__bfloat162float(LA == Lay::MK ? ha[m * CA + k] : ha[k * CA + m]));
  };
  auto b_at = [&](int k, int n) {
    return double(__bfloat162float(LB == Lay::NK ? hb[n * CB + k] : hb[k * CB + n]));
  };
  bf16 *da = nullptr, *db = nullptr;
  float* dout = nullptr;
  cudaMalloc(&da, ha.size() * sizeof(bf16));
  cudaMalloc(&db, hb.size() * sizeof(bf16));
  cudaMalloc(&dout, 64 * N * sizeof(float));
  cudaMemcpy(da, ha.data(), ha.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  cudaMemcpy(db, hb.data(), hb.size() * sizeof(bf16), cudaMemcpyHostToDevice);
  auto kernel = product_kernel<LA, LB, K, WN, RA, CA, RB, CB, KLO, KHI>;
  const int smem = (Tile<RA, CA>::kElems + Tile<RB, CB>::kElems) * sizeof(bf16);
  cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  kernel<<<1, kThreads, smem>>>(da, db, dout);
  std::vector<float> got(64 * N);
  const cudaError_t e =
      cudaMemcpy(got.data(), dout, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
  double worst = e == cudaSuccess ? 0.0 : INFINITY;
  for (int m = 0; m < 64 && e == cudaSuccess; ++m)
    for (int n = 0; n < N; ++n) {
      double want = 0.0;
      for (int k = k_lo; k < k_hi; ++k)
        want += a_at(m, k) * b_at(k, n);
      worst = std::fmax(worst, std::fabs(got[m * N + n] - want));
    }
  const bool ok = worst <= 1e-3; // fp32 sums of at most 128 products of magnitude <= 1
  g_failures += !ok;
  std::printf("%-34s k [%3d, %3d)  max_abs_err %.2e  %s%s%s\n", what, k_lo, k_hi, worst,
              ok ? "ok" : "FAIL", e == cudaSuccess ? "" : " ", cudaGetErrorString(e));
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
  std::printf("tile products on the %s path\n", wgmma == 1   ? "wgmma"
                                                : wgmma == 0 ? "mma.sync"
                                                             : "?");
  std::mt19937 rng(13);
  // the products of fused_bwd_intra.cu, by operand majors and tile shapes
  check<Lay::MK, Lay::NK, 128, 16, 64, 128, 64, 128>("Q K^T      MK x NK  64x64 ", rng);
  check<Lay::MK, Lay::NK, 128, 32, 64, 128, 128, 128>("do S0^T    MK x NK  64x128", rng);
  check<Lay::KM, Lay::KN, 64, 32, 64, 64, 64, 128>("A^T dnu    KM x KN  64x128", rng);
  check<Lay::KM, Lay::KN, 64, 32, 64, 64, 64, 128, 16, 48>("A^T dnu    KM x KN  64x128", rng);
  check<Lay::MK, Lay::NK, 64, 16, 64, 64, 64, 64>("dA A^T     MK x NK  64x64 ", rng);
  check<Lay::MK, Lay::NK, 64, 16, 64, 64, 64, 64, 0, 32>("dA A^T     MK x NK  64x64 ", rng);
  check<Lay::KM, Lay::KN, 64, 16, 64, 64, 64, 64>("A^T t2     KM x KN  64x64 ", rng);
  check<Lay::MK, Lay::KN, 64, 32, 64, 64, 64, 128>("dQKs k     MK x KN  64x128", rng);
  check<Lay::MK, Lay::KN, 64, 32, 64, 64, 64, 128, 48, 64>("dQKs k     MK x KN  64x128", rng);
  std::printf("%s\n", g_failures ? "FAILED" : "PASSED");
  return g_failures ? 1 : 0;
}
