// Hopper (sm_90a) pieces of the warp-specialised scans (fused_scan.cu): bf16 tiles in
// wgmma's 128-byte-swizzle layout, their m64n64k16 products on the warpgroup MMA (hand-written
// PTX), and the barriers that hand tiles between warp roles (named barriers, mbarriers).
//
// Tile<ROWS, COLS> (COLS = 64 or 128 bf16): the columns fall into COLS / 64 blocks, each ROWS
// rows of 128 bytes one after another; in row r, the 16-byte chunk c of a block (its columns
// 8c .. 8c + 7) is stored at chunk c ^ (r % 8). Eight rows form a 1024-byte swizzle atom, so
// tiles start 1024-byte aligned. The one layout serves both operand majors: read with K along
// the columns it is "K-major", read with M or N along the columns "MN-major" (transposed), so no
// product needs a transposed copy. Fragment stores of bf16 pairs (8 rows x 4 lanes of a warp)
// land in 32 distinct banks, and so do stmatrix / ldmatrix (stmatrix_acc): a 16-byte
// row piece stays whole under the swizzle, and the 8 rows of an 8 x 8 matrix take 8 chunks.
//
// Shared-memory matrix descriptor (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address
// >> 4, 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 swizzle (1: 128B).
// With 128B swizzle the stride byte offset is the step between 8-row groups (1024 bytes) for
// either major; the leading byte offset (the step between 64-column blocks along M / N of an
// MN-major operand) is never reached, because every product here spans one block along M and N
// (m64n64). A k-step of 16 starts 32 bytes further along the row (K-major) or 16 rows (2048
// bytes) further down (MN-major); the hardware applies the swizzle to the address it forms.
// (Verified on the H200, 2026-12-01, for m64n16 / m64n32 products at every block offset and both
// majors of A and B, in commit 5d32e20's tile-mma-tests; tile-mma-tests here checks the m64n64
// products the scans issue.)
//
// A product's accumulator is the warpgroup's 64 x 64 fp32 tile, warp w of the group holding rows
// 16 w .. 16 w + 15 as an Acc<16, 64> (common.cuh): wgmma's fragment is, warp by warp, exactly
// the m16n8 fragments of Acc. wgmma runs asynchronously: mma64() issues and commits one group;
// mma_wait<N>() waits until at most N groups are in flight and only then lets the accumulators
// be read. All four warps of a warpgroup make the same calls.
#pragma once

#include "common.cuh"

#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define QR_GDN_WGMMA 1
#else
#define QR_GDN_WGMMA 0
#endif

namespace qr::gdn::sm90 {

using Frag = Acc<16, 64>; // a warp's 16 rows of a warpgroup's 64 x 64 accumulator

template <int ROWS, int COLS>
struct Tile {
  static_assert(COLS == 64 || COLS == 128);
  static constexpr int kElems = ROWS * COLS;
  bf16* p;

  __host__ __device__ static constexpr int at(int r, int c) {
    return c / 64 * ROWS * 64 + r * 64 + ((c / 8 % 8 ^ r % 8) << 3) + c % 8;
  }
  __device__ __forceinline__ bf16& operator()(int r, int c) const { return p[at(r, c)]; }
  // Columns [64 b, 64 b + 64) as a tile of their own: the layout keeps each block whole.
  __device__ __forceinline__ Tile<ROWS, 64> block(int b) const { return {p + b * ROWS * 64}; }
};

// Copies a ROWS x COLS bf16 tile from global rows `src + r * stride` into t with cp.async, the
// THREADS threads of a role sharing it (`id` this thread's index among them); rows at or past
// valid_rows become zeros.
template <int THREADS, int ROWS, int COLS>
__device__ __forceinline__ void load_tile(Tile<ROWS, COLS> t, const bf16* src, int64_t stride,
                                          int valid_rows, int id) {
  constexpr int kVec = COLS / 8;
  static_assert(ROWS * kVec % THREADS == 0);
#pragma unroll 4
  for (int i = id; i < ROWS * kVec; i += THREADS) {
    const int r = i / kVec, c = i % kVec * 8;
    const bool ok = r < valid_rows;
    cp_async16(&t(r, c), src + (ok ? r : 0) * stride + c, ok);
  }
}

// Copies tile t to global rows `dst + r * stride` in 16-byte pieces (coalesced: eight threads
// take a row's 128 bytes), the THREADS threads of a role sharing it.
template <int THREADS, int ROWS>
__device__ __forceinline__ void store_tile(Tile<ROWS, 64> t, bf16* dst, int64_t stride, int id) {
  static_assert(ROWS * 8 % THREADS == 0);
#pragma unroll
  for (int i = id; i < ROWS * 8; i += THREADS) {
    const int r = i / 8, c = i % 8 * 8;
    *reinterpret_cast<uint4*>(dst + r * stride + c) = *reinterpret_cast<const uint4*>(&t(r, c));
  }
}

// Makes this thread's generic-proxy writes to shared memory (stores, landed cp.async copies)
// visible to wgmma, which reads through the async proxy; a barrier after it publishes them.
__device__ __forceinline__ void fence_async() {
#if QR_GDN_WGMMA
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// Named barriers (ids 1-15; 0 is __syncthreads'): sync waits for `count` threads, arrive counts
// this thread in without waiting (a producer handing a tile to a consumer that syncs).
__device__ __forceinline__ void bar_sync(int id, int count) {
  asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}
__device__ __forceinline__ void bar_arrive(int id, int count) {
  asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(count) : "memory");
}

// An mbarrier in shared memory: init by one thread before a __syncthreads; each phase completes
// when `count` threads have arrived; wait(parity) returns once the phase of that parity is done
// (the k-th completion, from 0, has parity k & 1).
struct MBarrier {
  uint64_t word;
  __device__ __forceinline__ void init(int count) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(&word)), "r"(count)
                 : "memory");
  }
  __device__ __forceinline__ void arrive() {
    asm volatile("{\n.reg .b64 state;\nmbarrier.arrive.shared::cta.b64 state, [%0];\n}\n" ::"r"(
                     smem_addr(&word))
                 : "memory");
  }
  __device__ __forceinline__ void wait(int parity) {
    asm volatile("{\n.reg .pred done;\nwait_again:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_again;\n}\n" ::"r"(smem_addr(&word)),
                 "r"(parity)
                 : "memory");
  }
};

#if QR_GDN_WGMMA
// Sets this warpgroup's registers per thread (setmaxnreg; all four warps call it): kInc takes
// more from the pool the others gave back, else gives some back.
template <int N, bool kInc>
__device__ __forceinline__ void set_max_registers() {
  static_assert(N % 8 == 0 && N >= 24 && N <= 256);
  if constexpr (kInc)
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(N));
  else
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(N));
}

namespace wgmma {

// A tile's descriptor: the low word its start address in 16-byte units, the high word a constant
// (1024-byte stride, 128-byte swizzle). The low word is broadcast from lane 0 (the address is
// the same in every lane; every caller is a converged warp about to issue wgmma): a shuffle's
// result is one the compiler knows to be warp-uniform, so each k-step's descriptor is formed in
// uniform registers instead of in vector ones moved over by R2UR.
constexpr uint64_t kDescHi = uint64_t(1024 >> 4) << 32 | uint64_t(1) << 62;
__device__ __forceinline__ uint32_t desc_lo(uint32_t smem_address) {
  return __shfl_sync(0xffffffffu, smem_address >> 4 & 0x3fff, 0);
}
__device__ __forceinline__ uint32_t desc_lo(const bf16* p) {
  return desc_lo(smem_addr(p));
}
// The descriptor `off` elements (a multiple of 8) past the tile of low word lo: one add, formed
// once per k-step from the tile's (the 14-bit field cannot carry: shared memory ends below 256 KB).
__device__ __forceinline__ uint64_t desc_at(uint32_t lo, int off) {
  return kDescHi | (lo + uint32_t(off) / 8);
}

// Keeps the compiler from moving reads or writes of an accumulator register across this point.
__device__ __forceinline__ void fence_operands(Frag& acc) {
  float* d = &acc.c[0][0][0];
#pragma unroll
  for (int i = 0; i < 32; ++i)
    asm volatile("" : "+f"(d[i])::"memory");
}

// d += A B, m64 x n64 x k16; kTransA / kTransB: the operand is MN-major; scale_d 0: d = A B,
// the accumulator's old value unread (a product that starts without zeroing it).
template <bool kTransA, bool kTransB>
__device__ __forceinline__ void mma(Frag& acc, uint64_t a, uint64_t b, int scale_d = 1) {
  float* d = &acc.c[0][0][0];
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %36, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,"
               "%23,%24,%25,%26,%27,%28,%29,%30,%31}, %32, %33, p, 1, 1, %34, %35;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
                 "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
                 "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
                 "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
                 "+f"(d[31])
               : "l"(a), "l"(b), "n"(int(kTransA)), "n"(int(kTransB)), "r"(scale_d)
               : "memory");
}

} // namespace wgmma

// acc += A B for the warpgroup, one committed group: A 64 x K, B K x 64 (LA, LB as in
// common.cuh: MK / NK read a tile K-major, KM / KN MN-major), whole tiles from their origin.
template <Lay LA, Lay LB, int K, int RA, int CA, int RB, int CB>
__device__ __forceinline__ void mma64(Frag& acc, Tile<RA, CA> A, Tile<RB, CB> B) {
  static_assert(K % 16 == 0);
  static_assert(LA == Lay::MK ? RA == 64 && CA >= K : RA == K && CA == 64);
  static_assert(LB == Lay::NK ? RB == 64 && CB >= K : RB == K && CB == 64);
  const uint32_t a0 = wgmma::desc_lo(A.p), b0 = wgmma::desc_lo(B.p);
  wgmma::fence_operands(acc);
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16)
    wgmma::mma<LA == Lay::KM, LB == Lay::KN>(
        acc, wgmma::desc_at(a0, LA == Lay::MK ? A.at(0, k0) : A.at(k0, 0)),
        wgmma::desc_at(b0, LB == Lay::NK ? B.at(0, k0) : B.at(k0, 0)));
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  wgmma::fence_operands(acc);
}

// Waits until at most N of the warpgroup's mma64 groups are in flight, then releases the
// accumulators of the finished ones to the code after it.
template <int N = 0, class... Accs>
__device__ __forceinline__ void mma_wait(Accs&... accs) {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
  (wgmma::fence_operands(accs), ...);
}

// Two floats as a bf16 pair in one register.
__device__ __forceinline__ uint32_t pack_bf16x2(float x0, float x1) {
  const __nv_bfloat162 z = __floats2bfloat162_rn(x0, x1);
  return *reinterpret_cast<const uint32_t*>(&z);
}
#endif

// f(hi, row, col, x0&, x1&) over a warp's fragment pairs, row and col in the warpgroup's 64 x 64
// tile (col even; x1 the element at col + 1); hi (0 or 1, a constant once unrolled) says which of
// the thread's two rows, 8 apart, so that per-row factors can sit in two registers.
template <class F>
__device__ __forceinline__ void each_pair64(Frag& acc, F&& f) {
  const int lane = threadIdx.x % 32;
  const int r0 = 16 * (threadIdx.x / 32 % 4) + lane / 4, c0 = 2 * (lane % 4);
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi)
      f(hi, r0 + 8 * hi, 8 * j + c0, acc.c[0][j][2 * hi], acc.c[0][j][2 * hi + 1]);
}
// The two rows of the warpgroup's 64-row tile that this thread's fragment holds.
__device__ __forceinline__ int frag_row(int hi) {
  return 16 * (threadIdx.x / 32 % 4) + threadIdx.x % 32 / 4 + 8 * hi;
}

// A 128 x 64 fp32 slice at `at` (row stride ld; nullable when loading: zero) into / out of a
// warpgroup's two accumulators (rows 0-63, 64-127): the scans' state slices.
__device__ __forceinline__ void load_slice(Frag (&S)[2], const float* at, int ld) {
#pragma unroll
  for (int m = 0; m < 2; ++m) {
    S[m].zero();
    if (at)
      each_pair64(S[m], [&](int, int r, int c, float& x0, float& x1) {
        const float2 v = *reinterpret_cast<const float2*>(at + (64 * m + r) * ld + c);
        x0 = v.x;
        x1 = v.y;
      });
  }
}
__device__ __forceinline__ void save_slice(Frag (&S)[2], float* at, int ld) {
#pragma unroll
  for (int m = 0; m < 2; ++m)
    each_pair64(S[m], [&](int, int r, int c, float& x0, float& x1) {
      *reinterpret_cast<float2*>(at + (64 * m + r) * ld + c) = make_float2(x0, x1);
    });
}

// The kernel's shared-memory struct at the first 1024-byte boundary of the dynamic shared memory
// (launch with 1024 bytes more than its size): the swizzled tiles need that alignment.
template <class T>
__device__ __forceinline__ T& aligned_smem(char* raw) {
  return *reinterpret_cast<T*>(raw + (1024 - smem_addr(raw) % 1024) % 1024);
}

// A bf16 pair into / from a tile at (r, c), c even.
template <int R, int C>
__device__ __forceinline__ void store_pair(Tile<R, C> t, int r, int c, float x0, float x1) {
  *reinterpret_cast<__nv_bfloat162*>(&t(r, c)) = __floats2bfloat162_rn(x0, x1);
}
template <int R, int C>
__device__ __forceinline__ float2 load_pair(Tile<R, C> t, int r, int c) {
  return bf16x2_to_float2(*reinterpret_cast<const uint32_t*>(&t(r, c)));
}

#if QR_GDN_WGMMA
__device__ __forceinline__ void stmatrix_x4(const uint32_t (&r)[4], bf16* p) {
  asm volatile(
      "stmatrix.sync.aligned.m8n8.x4.shared.b16 [%0], {%1,%2,%3,%4};\n" ::"r"(smem_addr(p)),
      "r"(r[0]), "r"(r[1]), "r"(r[2]), "r"(r[3])
      : "memory");
}

// A warp's 16 x N accumulator (rows r0 .. r0 + 15, columns c0 .. c0 + N - 1 of tile t) into t as
// bf16, by stmatrix: each x4 takes the n8 blocks j, j + 1 (register 2 q + hi: block j + q, row
// half hi; lane l gives the address of row l % 8 of matrix l / 8), a quarter of the instructions
// of storing bf16 pairs. f(hi, j, x0, x1) -> float2 maps each pair first (hi: the thread's row
// r0 + lane / 4 + 8 hi; j: its n8 block, columns c0 + 8 j + 2 (lane % 4) and one on); with kSrc
// f also gets the bf16 pair of src at the same place, read by ldmatrix.
template <bool kSrc, int N, int R, int C, int RS, int CS, class F>
__device__ __forceinline__ void stmatrix_acc(Tile<R, C> t, int r0, int c0, const Acc<16, N>& x,
                                             Tile<RS, CS> src, F&& f) {
  static_assert(N % 16 == 0);
  const int lane = threadIdx.x % 32, mat = lane / 8;
  const int row = r0 + 8 * (mat & 1) + lane % 8;
#pragma unroll
  for (int j = 0; j < N / 8; j += 2) {
    const int col = c0 + 8 * (j + (mat >> 1));
    uint32_t p[4];
    if constexpr (kSrc)
      ldmatrix_x4(p, &src(row, col));
#pragma unroll
    for (int q = 0; q < 2; ++q)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const float x0 = x.c[0][j + q][2 * hi], x1 = x.c[0][j + q][2 * hi + 1];
        float2 v;
        if constexpr (kSrc)
          v = f(hi, j + q, x0, x1, bf16x2_to_float2(p[2 * q + hi]));
        else
          v = f(hi, j + q, x0, x1);
        p[2 * q + hi] = pack_bf16x2(v.x, v.y);
      }
    stmatrix_x4(p, &t(row, col));
  }
}
// A warpgroup's 64 x 64 accumulator into rows row0 .. row0 + 63 of tile t (its first 64 columns)
// by stmatrix_acc, f(hi, r, c, x0, x1) -> float2 mapping each pair first, r and c as in
// each_pair64; with `src`, f also gets src's bf16 pair at (r, c).
template <int R, int C, class F>
__device__ __forceinline__ void store_frag(Tile<R, C> t, int row0, const Frag& x, F&& f) {
  const int r0 = 16 * (threadIdx.x / 32 % 4), lr = r0 + threadIdx.x % 32 / 4,
            lc = 2 * (threadIdx.x % 4);
  stmatrix_acc<false>(t, row0 + r0, 0, x, t, [&](int hi, int j, float x0, float x1) {
    return f(hi, lr + 8 * hi, 8 * j + lc, x0, x1);
  });
}
template <int R, int C, int RS, int CS, class F>
__device__ __forceinline__ void store_frag(Tile<R, C> t, int row0, const Frag& x, Tile<RS, CS> src,
                                           F&& f) {
  const int r0 = 16 * (threadIdx.x / 32 % 4), lr = r0 + threadIdx.x % 32 / 4,
            lc = 2 * (threadIdx.x % 4);
  stmatrix_acc<true>(t, row0 + r0, 0, x, src, [&](int hi, int j, float x0, float x1, float2 v) {
    return f(hi, lr + 8 * hi, 8 * j + lc, x0, x1, v);
  });
}
#endif

} // namespace qr::gdn::sm90
