// Shared-memory bf16 tiles and their warp-tile products, on Hopper's warpgroup MMA (wgmma, sm_90a,
// hand-written PTX) where the build targets sm_90a and on mma.sync (common.cuh's warp_mma)
// elsewhere (sm_100a / sm_103a).
//
// Tile layouts (Tile<ROWS, COLS>, COLS = 64 or 128 bf16). Either way a tile takes ROWS x (COLS + 8)
// bf16 of shared memory, so structs of tiles have one size on every architecture.
// - sm_90a: wgmma's canonical 128-byte-swizzle layout. The columns fall into COLS / 64 blocks, each
//   ROWS rows of 128 bytes one after another; in row r, the 16-byte chunk c of a block (its
//   columns 8c .. 8c + 7) is stored at chunk c ^ (r % 8). Eight rows form a 1024-byte swizzle
//   atom, so tiles must start 1024-byte aligned. The one layout serves both operand majors: read
//   with K along the columns it is "K-major" (no transpose), read with M or N along the columns it
//   is "MN-major" (transposed), and a product needs no copy of a tile into another layout.
// - elsewhere: plain rows of COLS + 8 bf16 (ldmatrix without bank conflicts).
//
// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address
// >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 49-51 base offset, 62-63
// swizzle (1: 128B). With 128B swizzle the stride byte offset is the step between 8-row groups
// (1024 bytes here) for either major; the leading byte offset (the step between 64-column blocks
// along M / N of an MN-major operand, unused for K-major) is never reached, because every product
// here spans at most one block along M / N (M = 64, N <= 32). A k-step of 16 starts 32 bytes
// further along the row (K-major) or 16 rows (2048 bytes) further down (MN-major); the hardware
// applies the swizzle to the address it forms, so the base offset stays 0.
// (Also verified on the H200, then dropped as slower for bwd_intra: the no-swizzle layout of 8 x 8
// core matrices, 128 contiguous bytes each, with the leading byte offset the step between core
// matrices adjacent along K and the stride byte offset the step along M / N, for both majors.)
//
// Warp tiles. A product's warp tile is rows m0 .. m0 + 15, columns n0 .. n0 + WN - 1 (WN = 16, 32)
// of a 64-row result, in an Acc<16, WN> (common.cuh). On sm_90a a warpgroup (4 consecutive warps,
// m0 = 16 (warp % 4)) issues one m64nWNk16 wgmma per k-step for its 64 x WN tile at columns n0:
// wgmma's fp32 accumulator fragment is, warp by warp, exactly the m16n8 fragments of Acc, so the
// epilogues are the same code on both paths. wgmma runs asynchronously: tile_mma() issues and
// commits one group; mma_wait<N>() waits until at most N groups are in flight and only then lets
// the accumulators be read. All four warps of a warpgroup must make the same calls.
#pragma once

#include "common.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define QR_GDN_WGMMA 1
#else
#define QR_GDN_WGMMA 0
#endif

namespace qr::gdn::tiles {

constexpr bool kWgmma = QR_GDN_WGMMA;

template <int ROWS, int COLS>
struct Tile {
  static_assert(COLS == 64 || COLS == 128);
  static constexpr int kLd = COLS + 8; // the padded row stride (mma.sync path)
  static constexpr int kElems = ROWS * kLd;
  bf16* p;

  __host__ __device__ static constexpr int at(int r, int c) {
    if constexpr (kWgmma)
      return c / 64 * ROWS * 64 + r * 64 + ((c / 8 % 8 ^ r % 8) << 3) + c % 8;
    else
      return r * kLd + c;
  }
  __device__ __forceinline__ bf16& operator()(int r, int c) const { return p[at(r, c)]; }
};

// Copies a ROWS x COLS bf16 tile from global rows `src + r * stride` into t with cp.async, THREADS
// threads sharing the work; rows at or past valid_rows become zeros.
template <int THREADS, int ROWS, int COLS>
__device__ __forceinline__ void load_tile(Tile<ROWS, COLS> t, const bf16* src, int64_t stride,
                                          int valid_rows) {
  constexpr int kVec = COLS / 8;
  for (int i = threadIdx.x; i < ROWS * kVec; i += THREADS) {
    const int r = i / kVec, c = i % kVec * 8;
    const bool ok = r < valid_rows;
    cp_async16(&t(r, c), ok ? src + r * stride + c : src, ok);
  }
}

#if QR_GDN_WGMMA
namespace wgmma {

__device__ __forceinline__ uint64_t desc(const bf16* p) {
  constexpr uint64_t kStride = 1024 >> 4, kSwizzle128 = 1;
  return uint64_t(smem_addr(p) >> 4 & 0x3fff) | kStride << 32 | kSwizzle128 << 62;
}

// Keeps the compiler from moving reads or writes of an accumulator register across this point.
template <int WN>
__device__ __forceinline__ void fence_operands(Acc<16, WN>& acc) {
  float* d = &acc.c[0][0][0];
#pragma unroll
  for (int i = 0; i < WN / 2; ++i)
    asm volatile("" : "+f"(d[i])::"memory");
}

// d += A B, m64 x WN x k16; kTransA / kTransB: the operand is MN-major.
template <int WN, bool kTransA, bool kTransB>
__device__ __forceinline__ void mma(Acc<16, WN>& acc, uint64_t a, uint64_t b) {
  float* d = &acc.c[0][0][0];
  if constexpr (WN == 16)
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %12, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, %10, %11;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7])
                 : "l"(a), "l"(b), "n"(int(kTransA)), "n"(int(kTransB)), "r"(1)
                 : "memory");
  else
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %20, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
                 "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, "
                 "%18, %19;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]),
                   "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]),
                   "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
                 : "l"(a), "l"(b), "n"(int(kTransA)), "n"(int(kTransB)), "r"(1)
                 : "memory");
}

} // namespace wgmma
#endif

// acc += A B for the warp tile (m0, n0) over the k-steps of 16 in [k_lo, k_hi) of a K-deep
// product (LA, LB as in common.cuh: MK / NK read a tile K-major, KM / KN MN-major). The range is
// the warp's own on mma.sync and must be its warpgroup's (the same in its four warps) on wgmma.
template <Lay LA, Lay LB, int K, int WN, int RA, int CA, int RB, int CB>
__device__ __forceinline__ void tile_mma(Acc<16, WN>& acc, Tile<RA, CA> A, Tile<RB, CB> B, int m0,
                                         int n0, int k_lo = 0, int k_hi = K) {
  static_assert(K % 16 == 0 && (WN == 16 || WN == 32));
#if QR_GDN_WGMMA
  wgmma::fence_operands(acc);
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16)
    if (k0 >= k_lo && k0 < k_hi)
      wgmma::mma<WN, LA == Lay::KM, LB == Lay::KN>(
          acc, wgmma::desc(A.p + (LA == Lay::MK ? A.at(0, k0) : A.at(k0, 0))),
          wgmma::desc(B.p + (LB == Lay::NK ? B.at(n0, k0) : B.at(k0, n0))));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  wgmma::fence_operands(acc);
#else
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16)
    if (k0 >= k_lo && k0 < k_hi)
      warp_mma<LA, LB, 16>(acc, A.p + (LA == Lay::MK ? k0 : k0 * A.kLd), A.kLd,
                           B.p + (LB == Lay::NK ? k0 : k0 * B.kLd), B.kLd, m0, n0);
#endif
}

// Waits until at most N of the warpgroup's tile_mma groups are in flight (wgmma; nothing to wait
// for on mma.sync), then releases the accumulators of the finished ones to the code after it.
template <int N = 0, class... Accs>
__device__ __forceinline__ void mma_wait(Accs&... accs) {
#if QR_GDN_WGMMA
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
  (wgmma::fence_operands(accs), ...);
#endif
}

// A CTA barrier after which the products may read what any thread wrote to shared memory before
// it, cp.async included: wgmma reads shared memory through the async proxy, so each writer first
// fences its generic-proxy writes.
__device__ __forceinline__ void sync_tiles() {
#if QR_GDN_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
  __syncthreads();
}

} // namespace qr::gdn::tiles
