// Fused GDN, stage 3 of the backward on Hopper (sm_90a), warp-specialised:
// sm80/fused_bwd_intra.cu's bwd_intra_kernel (read its header: the algebra per value head, the
// group sums dQKs / Psym, the l2norm backward, the dbeta / dG sums, the persistent item walk, the
// stamp check, varlen and unused slots) with every product on wgmma from 128-byte-swizzled tiles
// (wgmma.cuh), the products' helpers, tile pieces, fragment positions and sum-slot plan being those
// of an earlier wgmma form of this kernel that kept the mma.sync protocol (verified on the H200,
// and slower: its 8 warps stalled at 7 CTA-wide barriers per head), and the loads taken off the
// consumers:
//
//   producer warpgroup 2   every tile by cp.async, in the order the consumers use them: at an
//   (40 registers)         item's first head its q, k and rstd, staged in the v_new and dv_new
//                          buffers so that they land during the last item's tail (the consumers
//                          copy them into place at the item's start); per value head its factors
//                          (G log2 e, exp G, exp(Gl - G), beta: stored, not copied), do, S0,
//                          v_new, dSL, dv_new, A, then v into dSL's buffer once dSL is read.
//                          Each buffer is a Fill, an mbarrier pair: `full` completed through
//                          cp.async.mbarrier.arrive by the 128 producer threads once their
//                          copies land, `empty` by the 256 consumer threads once they and their
//                          products are done reading; the producer waits for fill k - 1's
//                          release before issuing fill k. Rows past `len` (do, v) are
//                          zero-filled (cp.async src-size 0). Its thread 0 picks the items:
//                          every gridDim.x-th, or in the backward's pipeline (fused_pipeline.cuh,
//                          Pipeline) a ticket from its queue, once the scans have counted the
//                          item's chunk in; each reaches the consumers with its first head's
//                          factors, and an index of `items` ends their walk.
//   consumer warpgroups    the mma.sync kernel's chain per head, split by columns as in that
//   0, 1 (232 registers)   earlier form (warpgroup g: columns 64 g .. of a 64 x 128 product,
//                          32 g .. of a 64 x 64 one; warp w of it rows 16 w ..), dq and dk in
//                          registers over the group, products issued together and waited for
//                          one by one.
//
// Per head, the consumers' hand-offs are named barriers of their 256 threads only: kBarNu (every
// product reading v_new has been waited for: dw = -dnu S0^T may overwrite it), kBarDw (dw is
// written, fenced), kBarDA (dA), kBarT2 (t2 = dA A^T), and kBarSums, at which only the tail
// warps 2 and 3 wait (the others arrive and go on): the head's partial sums (dG, dbeta, the two
// row dots, <S0, dSL>) and factors are double-buffered by the head's parity, so the tail of head
// h (dg's reverse cumsum, dbeta) runs beside head h + 1; head h + 2 writes that parity again only
// after head h + 1's kBarNu, which the tail warps reach after their tail. Per item, kBarItem up to
// five times: the last head's sums are complete; dQKs / Psym are written (into the dA and t2
// buffers); the l2 row dots are written (in the sums' place); at the next item's start, those
// are read; and its q and k are copied into place. The fp32 group sums keep one writer per entry:
// dQK's epilogue updates only entries on and below the diagonal, dL's only entries above it (the
// mma.sync kernel's unconditional += 0 there would now race with the next head's dQK). Every
// barrier that publishes st.shared tiles to wgmma is preceded by the writers' fence.proxy.async;
// the consumers fence after each full wait (the copies land through the generic proxy).
// Deterministic: one CTA computes an item, in a fixed order, whichever CTA takes it.
//
// Shared memory: q, k, do, v_new / dw, dv_new (64 x 128), S0, dSL / v (128 x 128), A, dA, t2
// (64 x 64), the fp32 Q K^T / K K^T and group sums, two sets of per-head factors and partial
// sums, the mbarriers: under 227 KB with the 1 KB that aligns the base (static_assert). One CTA
// per SM, 384 threads, persistent. Built for sm_90a only (QR_GDN_WGMMA; the body is empty
// elsewhere); dispatch.h picks it on sm_90 devices (QR_GDN_HOPPER_SCANS: `bwd_intra`). Verified on
// an H200 (2026-12-02: gdn-bench --check, gdn-gpu-tests, compute-sanitizer; racecheck's kBarSums
// reports are the bar.arrive it does not model): 815-848 us at 35B against
// sm80/fused_bwd_intra.cu's 953 (docs/gdn-bench-log.md).
#include "fused_ring.cuh"

namespace qr::gdn::fused {
namespace {

using sm80::add_row_sums;
using sm80::Parts;
using sm80::store_acc_bf16;
using sm80::sum_parts;
using sm90::bar_arrive;
using sm90::bar_sync;
using sm90::fence_async;
using sm90::MBarrier;
using sm90::Tile;

// Consumer warpgroups 0 and 1 (warps 0-7: the mma.sync kernel's warp tiles' roles), the producer
// warpgroup 2.
constexpr int kWarps = 8, kConsumers = 32 * kWarps, kProducers = 128;
constexpr int kIntraThreads = kConsumers + kProducers;
constexpr int kSlots = 8; // Parts' slots: row sums in 0, 1 (the warpgroup), column sums in 4 + w
static_assert(sizeof(Parts) == kSlots * kC * sizeof(float));
// setmaxnreg: the producer gives back what the consumers take. The pool is what the launch gave
// the CTA (65536 / 384 per thread, to a multiple of 8: 168), not the SM's 512 per lane of a
// warpgroup: past it setmaxnreg.inc waits forever (40 + 2 x 232 = 3 x 168).
constexpr int kLaunchRegs = 65536 / kIntraThreads / 8 * 8;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
static_assert(kProducerRegs + 2 * kConsumerRegs <= kIntraThreads / 128 * kLaunchRegs);

// Named barriers of the 256 consumer threads (0 is __syncthreads', used once, at the start).
enum ConsumerBar : int {
  kBarNu = 1,   // every product reading v_new is done: dw may overwrite it
  kBarDw = 2,   // dw is written
  kBarDA = 3,   // dA is written
  kBarT2 = 4,   // t2 = dA A^T is written
  kBarSums = 5, // a head's partial sums are written (the tail warps sync, the others arrive)
  kBarItem = 6, // the item's tail: the group sums, dQKs / Psym, the l2 row dots
};
constexpr int kBarWalk = 7; // the producer's 128 threads: thread 0 has picked the next item

using Tq = Tile<kC, kD>; // 64 x 128: q, k, do, v_new, dv_new, v
using Ts = Tile<kD, kD>; // 128 x 128: S0, dSL
using Ta = Tile<kC, kC>; // 64 x 64: A, dA, t2, dQKs, Psym

struct Item {
  int it, n, b, hk, t0, len; // it: the item's index, `items` past the last one
};

// A value head's per-row factors (G2 = G log2(e), gam = exp(G), el = exp(Gl - G), beta), and its
// item: the consumers learn their next item from the fill of its first head (the producer picks
// the items); one with it = items ends their walk.
struct Scalars {
  float G2[kC], gam[kC], el[kC], beta[kC];
  Item item;
};

struct alignas(1024) WsIntraSmem {
  bf16 q[kC * kD], k[kC * kD]; // normalised, the item's (copied in by the consumers)
  bf16 d_o[kC * kD];
  bf16 nu[kC * kD];               // the item's q (staged), then per head v_new, then dw
  bf16 dnu[kC * kD];              // the item's k (staged), then per head dv_new
  bf16 s0[kD * kD], dsl[kD * kD]; // dsl: dSL, then v (a 64 x 128 tile at its start): 2 fills
  bf16 a[kC * kC];                // A
  bf16 da[kC * kC];               // dA, per head; after the last head dQKs
  bf16 t2[kC * kC];               // dA A^T, per head; after the last head Psym
  float qkkk[kC * kLdF];          // raw Q K^T on and below the diagonal, K K^T above it
  union {
    float sums[kC * kLdF]; // sum over the heads: dQK on and below the diagonal, dP^T above it
    struct {
      Parts dotq, dotk; // after the tail's products: the l2-backward row dots of dq and dk
    } l2;
  } s;
  Scalars sc[2]; // by the head's parity (2 fills of their own)
  Item walk[2];  // the producer's thread 0 hands each item to the other producer threads here
  float rq[2][kC], rk[2][kC]; // the items' rstd, by the item's parity
  // the head's partial sums, by its parity, so that a head's tail (warps 2, 3) reads them while
  // the next head writes the other set
  Parts dG[2], dB[2], cl[2], cw[2];
  float s0dsl[2][kWarps];
  Fill f_do, f_s0, f_nu, f_dsl, f_dnu, f_a, f_sc[2];
};
static_assert(sizeof(WsIntraSmem) + 1024 <= 227 * 1024);

// A tile's cp.async pieces for producer thread id (of 128), as sm90::load_tile places them
// (piece i = id + 128 k: row i / (COLS / 8), 16-byte chunk i % (COLS / 8)): the thread's first
// piece's row r0, element offsets in the tile (dst0) and in the row (c0); the k-th piece is
// kRowsPer k rows and 64 kRowsPer k elements further on (the swizzle term depends on r % 8 only,
// and kRowsPer is a multiple of 8). One set per tile shape, formed once.
template <int ROWS, int COLS>
struct Pieces {
  static constexpr int kVec = COLS / 8, kRowsPer = kProducers / kVec,
                       kCount = ROWS * kVec / kProducers;
  static_assert(kRowsPer % 8 == 0);
  int r0, dst0, c0;
  __device__ __forceinline__ explicit Pieces(int id)
      : r0(id / kVec), dst0(Tile<ROWS, COLS>::at(id / kVec, id % kVec * 8)), c0(id % kVec * 8) {}
  // rows at or past valid_rows become zeros (src-size 0: nothing is read)
  __device__ __forceinline__ void load(Tile<ROWS, COLS> t, const bf16* src, int64_t stride,
                                       int valid_rows) const {
    const uint32_t dst = smem_addr(t.p + dst0);
#pragma unroll 2 // two at a time: fully unrolled, the addresses spill at 40 registers
    for (int k = 0; k < kCount; ++k) {
      const int r = r0 + k * kRowsPer;
      const bool ok = r < valid_rows;
      asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(
                       dst + uint32_t(k * kRowsPer * 64 * sizeof(bf16))),
                   "l"(src + (ok ? r : 0) * stride + c0), "r"(ok ? 16 : 0));
    }
  }
};

#if QR_GDN_WGMMA
// wgmma m64n32k16, d = A B (scale_d 0) or d += A B (1), for the warpgroup's 32-column slice of
// a 64 x 64 product (the m64n64 one is wgmma.cuh's wgmma::mma).
template <bool kTransA, bool kTransB>
__device__ __forceinline__ void mma32(Acc<16, 32>& acc, uint64_t a, uint64_t b, int scale_d) {
  float* d = &acc.c[0][0][0];
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %20, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k16.f32.bf16.bf16 "
               "{%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, %18, "
               "%19;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                 "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
                 "+f"(d[13]), "+f"(d[14]), "+f"(d[15])
               : "l"(a), "l"(b), "n"(int(kTransA)), "n"(int(kTransB)), "r"(scale_d)
               : "memory");
}

template <int N>
__device__ __forceinline__ void fence_acc(Acc<16, N>& acc) {
  float* d = &acc.c[0][0][0];
#pragma unroll
  for (int i = 0; i < N / 2; ++i)
    asm volatile("" : "+f"(d[i])::"memory");
}

// A product's operand: the address of its k-step 0 in tile T, K-major (rows r0 .. of the tile,
// r0 a multiple of 8) or MN-major (columns c0 ..). Since a row's swizzle depends on r % 8 only,
// k-step k0 lies step(k0) elements further on in either case, a constant: so each k-step's
// descriptor is the first one plus an immediate.
template <class T, bool kKMajor>
struct Operand {
  const bf16* p;
  static constexpr int step(int k0) { return kKMajor ? T::at(0, k0) : T::at(k0, 0); }
};
template <int R, int C>
__device__ __forceinline__ Operand<Tile<R, C>, true> kmaj(Tile<R, C> t, int r0) {
  return {t.p + r0 * 64};
}
template <int R, int C>
__device__ __forceinline__ Operand<Tile<R, C>, false> mnmaj(Tile<R, C> t, int c0) {
  return {t.p + Tile<R, C>::at(0, c0)};
}

// wgmma::desc_lo from an address the compiler cannot see through, so that it forms each product's
// descriptors where the product is issued instead of keeping every one of them in registers
// across the item loop.
__device__ __forceinline__ uint32_t desc_lo_here(const bf16* p) {
  uint32_t a = smem_addr(p);
  asm volatile("mov.b32 %0, %0;\n" : "+r"(a));
  return sm90::wgmma::desc_lo(a);
}

// acc += A B for the warpgroup, one committed group of K / 16 k-steps: a and b give the operands
// (Operand: A K-major is MK, MN-major KM; B K-major NK, MN-major KN, as in common.cuh), N = 64 or
// 32 columns; kFresh: acc = A B (its old value unread).
template <int K, bool kFresh, int N, class TA, bool kKA, class TB, bool kKB>
__device__ __forceinline__ void product(Acc<16, N>& acc, Operand<TA, kKA> a, Operand<TB, kKB> b) {
  static_assert(N == 64 || N == 32);
  using OA = Operand<TA, kKA>;
  using OB = Operand<TB, kKB>;
  static_assert(OA::step(16) % 8 == 0 && OB::step(16) % 8 == 0); // whole 16-byte units
  const uint32_t da0 = desc_lo_here(a.p), db0 = desc_lo_here(b.p);
  fence_acc(acc);
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    const uint64_t da = sm90::wgmma::desc_at(da0, OA::step(k0)),
                   db = sm90::wgmma::desc_at(db0, OB::step(k0));
    const int scale_d = kFresh && k0 == 0 ? 0 : 1;
    if constexpr (N == 64)
      sm90::wgmma::mma<!kKA, !kKB>(acc, da, db, scale_d);
    else
      mma32<!kKA, !kKB>(acc, da, db, scale_d);
  }
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
  fence_acc(acc);
}

// A whole tile from its origin as an operand: K-major for MK and NK, else MN-major.
template <Lay L, int R, int C>
__device__ __forceinline__ auto whole(Tile<R, C> t) {
  if constexpr (L == Lay::MK || L == Lay::NK)
    return kmaj(t, 0);
  else
    return mnmaj(t, 0);
}

// sm90::mma64's product through product(): whole 64 x 64 blocks
template <Lay LA, Lay LB, bool kFresh, int RA, int CA, int RB, int CB>
__device__ __forceinline__ void product64(Acc<16, 64>& acc, Tile<RA, CA> A, Tile<RB, CB> B) {
  product<kC, kFresh>(acc, whole<LA>(A), whole<LB>(B));
}

// Waits until at most N of the warpgroup's products are in flight; then the given accumulators
// may be read.
template <int N = 0, class... Accs>
__device__ __forceinline__ void wait(Accs&... accs) {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
  (fence_acc(accs), ...);
}

// The thread's fragment positions (element offsets) in a 64 x 128 tile, q[j] at row frag_row(0)
// and column n0 + 8 j + 2 (lane % 4) of its warpgroup's 64 columns, and in a 64 x 64 one, a[j] at
// column nn + 8 j + 2 (lane % 4) of its 32; row frag_row(1) is 8 rows (512 elements) further on
// (the swizzle depends on the row's r % 8 only). Formed once, for every tile of the shape.
struct FragAt {
  static constexpr int kHi = 8 * 64;
  int q[8], a[4];
  __device__ __forceinline__ FragAt(int m0, int n0, int nn) {
    const int lane = threadIdx.x % 32, r = m0 + lane / 4, c = 2 * (lane % 4);
#pragma unroll
    for (int j = 0; j < 8; ++j)
      q[j] = Tq::at(r, n0 + 8 * j + c);
#pragma unroll
    for (int j = 0; j < 4; ++j)
      a[j] = Ta::at(r, nn + 8 * j + c);
  }
};

// The thread's elements of a 64 x 128 tile in the fragment order of its warpgroup's 64-column
// block (as bf16 pairs): pair (j, hi) at row frag_row(hi), column c0 + 8 j + 2 (lane % 4).
struct FragAt;
struct RowFrag {
  uint32_t p[8][2];
  __device__ __forceinline__ void load(Tq t, const FragAt& at);
  __device__ __forceinline__ float2 at(int j, int hi) const { return bf16x2_to_float2(p[j][hi]); }
};

__device__ __forceinline__ void RowFrag::load(Tq t, const FragAt& at) {
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi)
      p[j][hi] = *reinterpret_cast<const uint32_t*>(t.p + at.q[j] + FragAt::kHi * hi);
}

// Per fragment row (hi): the quad-summed dot of the thread's accumulator row with x's, times
// f[hi] when given.
__device__ __forceinline__ void row_dots(const Acc<16, 64>& acc, const RowFrag& x, float (&s)[2],
                                         const float* f = nullptr) {
#pragma unroll
  for (int hi = 0; hi < 2; ++hi) {
    float t0 = 0.f, t1 = 0.f; // two chains: the even and the odd columns
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      const float2 y = x.at(j, hi);
      t0 = fmaf(acc.c[0][j][2 * hi], y.x, t0);
      t1 = fmaf(acc.c[0][j][2 * hi + 1], y.y, t1);
    }
    s[hi] = quad_sum(t0 + t1) * (f ? f[hi] : 1.f);
  }
}

// dst += f[hi] x, row by row (hi: which of the thread's two rows).
__device__ __forceinline__ void add_scaled(Acc<16, 64>& dst, const Acc<16, 64>& x,
                                           const float (&f)[2]) {
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      dst.c[0][j][e] = fmaf(x.c[0][j][e], f[e / 2], dst.c[0][j][e]);
}
// part[slot][row] = (or +=) s[hi] times f[hi] for the thread's two rows, by the quad's first lane.
template <bool kSet>
__device__ __forceinline__ void put_rows(Parts& part, int slot, const float (&s)[2]) {
  if (threadIdx.x % 4 == 0)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int row = sm90::frag_row(hi);
      part[slot][row] = kSet ? s[hi] : part[slot][row] + s[hi];
    }
}

// The thread's accumulator rows times f[hi] (hi: which of its two rows).
template <int N>
__device__ __forceinline__ void scale_rows(Acc<16, N>& acc, const float (&f)[2]) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e)
      acc.c[0][j][e] *= f[e / 2];
}

// A warp's 16 x N accumulator tile into a tile at the fragment positions `at` (FragAt's q for a
// 64 x 128 tile, a for a 64 x 64 one) as bf16 pairs.
template <int N>
__device__ __forceinline__ void store_frag(Acc<16, N>& acc, bf16* t, const int (&at)[N / 8]) {
#pragma unroll
  for (int j = 0; j < N / 8; ++j)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi)
      store_bf16x2(t + at[j] + FragAt::kHi * hi, acc.c[0][j][2 * hi], acc.c[0][j][2 * hi + 1]);
}

// part[slot][n0 + c] = (kSet) or += the sum over the warp tile's 16 rows of its column c, from
// the thread's column partials v[2 j + e] (column 8 j + 2 (lane % 4) + e, its two rows summed): a
// reduce-scatter over the lane bits that index the rows (xor 16, 8, 4), 7 shuffles where a
// column_sum per partial takes 24, after which lane l holds column k = l / 4 % 8's sum and each
// lane stores one (a column has one writer: no __syncwarp between updates).
template <bool kSet>
__device__ __forceinline__ void put_col_sums(float (&v)[8], int n0, Parts& part, int slot) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int half = 4, bit = 16; half > 0; half /= 2, bit /= 2) {
    const bool up = lane & bit; // keeps the upper half, sends the lower
#pragma unroll
    for (int i = 0; i < half; ++i) {
      const float send = up ? v[i] : v[i + half], keep = up ? v[i + half] : v[i];
      v[i] = keep + __shfl_xor_sync(0xffffffffu, send, bit);
    }
  }
  const int k = lane / 4 % 8, col = n0 + 8 * (k / 2) + 2 * (lane % 4) + k % 2;
  part[slot][col] = kSet ? v[0] : part[slot][col] + v[0];
}

// The same for the column sums of a warp's 16 x 32 tile, each row's values times f[hi] (hi:
// which of the thread's two rows).
template <bool kSet>
__device__ __forceinline__ void put_col_sums(const Acc<16, 32>& acc, const float (&f)[2], int n0,
                                             Parts& part, int slot) {
  float v[8];
#pragma unroll
  for (int j = 0; j < 4; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e)
      v[2 * j + e] = acc.c[0][j][e] * f[0] + acc.c[0][j][2 + e] * f[1];
  put_col_sums<kSet>(v, n0, part, slot);
}

// part[slot][col] = sum over the warp tile's rows of value * t(row, col) (set, not added), the
// warp tile at columns n0 .. n0 + 31 and the fragment positions `at` (FragAt's a).
__device__ __forceinline__ void set_col_dots(Acc<16, 32>& acc, int n0, Parts& part, int slot, Ta t,
                                             const int (&at)[4]) {
  float v[8];
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    v[2 * j] = v[2 * j + 1] = 0.f;
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const float2 y = load_bf16x2(t.p + at[j] + FragAt::kHi * hi);
      v[2 * j] += acc.c[0][j][2 * hi] * y.x;
      v[2 * j + 1] += acc.c[0][j][2 * hi + 1] * y.y;
    }
  }
  put_col_sums<true>(v, n0, part, slot);
}
#endif

__global__ void __launch_bounds__(kIntraThreads, 1)
    bwd_intra_ws_kernel(Geo geo, FwdInputs in, Workspace ws, Ref<const bf16> d_o, Ref<bf16> dq_out,
                        Ref<bf16> dk_out, Ref<bf16> dv_out, Ref<bf16> db_out, Ref<float> dg_out,
                        Pipeline pipe) {
#if QR_GDN_WGMMA
  extern __shared__ char smem_raw[];
  WsIntraSmem& sm = sm90::aligned_smem<WsIntraSmem>(smem_raw);
  if (!stamp_ok(geo, ws))
    return;
  const int items = geo.NT * geo.B * geo.Hk;
  // item it is chunk it % NT of (batch, key head) it / NT; an unused varlen slot (no tokens, no
  // gradients) is no item
  auto item_at = [&](int it) {
    const int n = it % geo.NT, bk = it / geo.NT, b = bk / geo.Hk;
    const Chunk ch = chunk_at(geo, ws, b, n);
    return Item{ch.len > 0 ? it : -1, n, b, bk - b * geo.Hk, ch.t0, ch.len};
  };
  // The next item after `last` (none: the first), by the producer's thread 0. In the pipeline a
  // ticket from the queue, whose order is the backward scan's (the last chunk first, every
  // (batch, key head) of it), then a wait for the item's tiles; else every gridDim.x-th item.
  auto next_item = [&](const Item* last) {
    Item w{items, 0, 0, 0, 0, 0};
    if (pipe.ready) {
      const int bhk = geo.B * geo.Hk;
      for (int t; (t = atomicAdd(pipe.ready + size_t(geo.B) * geo.Hv * geo.NT, 1)) < items;)
        if ((w = item_at((geo.NT - 1 - t / bhk) + t % bhk * geo.NT)).it >= 0)
          break;
      if (w.it < 0)
        w.it = items;
      const int* at = pipe.ready + (size_t(w.b) * geo.Hv + w.hk * geo.group) * geo.NT + w.n;
      for (int rr = 0; w.it < items && rr < geo.group; ++rr)
        if (!wait_written(at + rr * geo.NT, pipe.expected, ws.status))
          break; // flagged: the run fails (its tiles are read as they are)
    } else {
      for (int it = last ? last->it + gridDim.x : blockIdx.x; it < items; it += gridDim.x)
        if ((w = item_at(it)).it >= 0)
          break;
      if (w.it < 0)
        w.it = items;
    }
    return w;
  };
  const int tid = threadIdx.x, warp = tid / 32, wg = warp / 4;
  if (tid == 0) {
    Fill* fills[] = {&sm.f_do,  &sm.f_s0, &sm.f_nu,    &sm.f_dsl,
                     &sm.f_dnu, &sm.f_a,  &sm.f_sc[0], &sm.f_sc[1]};
    for (Fill* f : fills) {
      f->full.init(kProducers);
      f->empty.init(kConsumers);
    }
  }
  // the partial sums' entries that no warp writes (see the slot plan) stay zero; each head's
  // first update of every other entry sets it
  for (int i = tid; i < int(sizeof(sm.dG) / sizeof(float)); i += kIntraThreads) {
    (&sm.dG[0][0][0])[i] = 0.f;
    (&sm.dB[0][0][0])[i] = 0.f;
    (&sm.cl[0][0][0])[i] = 0.f;
    (&sm.cw[0][0][0])[i] = 0.f;
  }
  __syncthreads();

  const Tq q_t{sm.q}, k_t{sm.k}, do_t{sm.d_o}, nu_t{sm.nu}, dnu_t{sm.dnu}, v_t{sm.dsl};
  const Ts s0_t{sm.s0}, dsl_t{sm.dsl};
  const Ta a_t{sm.a}, da_t{sm.da}, t2_t{sm.t2};
  auto head_of = [&](Item w, int rr) { return w.hk * geo.group + rr; };

  if (wg == 2) { // the producer: every tile of every head, in the order the consumers use them
    sm90::set_max_registers<kProducerRegs, false>();
    const int id = tid - kConsumers;
    const Pieces<kC, kD> pq(id);
    const Pieces<kD, kD> ps(id);
    const Pieces<kC, kC> pa(id);
    int eh = 0, ei = 0; // heads and items filled so far
    // thread 0 picks item ei and hands it to the others in walk[ei & 1], which it writes again
    // only after every thread has passed the next item's barrier
    auto pick = [&](const Item* last) {
      if (id == 0)
        sm.walk[ei & 1] = next_item(last);
      bar_sync(kBarWalk, kProducers);
      return sm.walk[ei & 1];
    };
    for (Item w = pick(nullptr); w.it < items; ++ei, w = pick(&w))
      for (int rr = 0; rr < geo.group; ++rr, ++eh) {
        // fill eh + ei of the v_new and dv_new buffers: at an item's first head its q and k
        // (and rstd), staged there once the last item's last head is done with them, so that
        // they land during the last item's tail; then fill eh + ei + 1, the head's v_new, dv_new
        if (rr == 0) {
          const size_t krow = (size_t(w.b * geo.Hk + w.hk) * geo.NT + w.n) * kC;
          claim(sm.f_nu, eh + ei);
          pq.load(nu_t, ws.qn + krow * kD, kD, kC);
          if (id < kC / 4) // 16-byte pieces
            cp_async16(sm.rq[ei & 1] + 4 * id, ws.rq + krow + 4 * id, true);
          commit_async(sm.f_nu);
          claim(sm.f_dnu, eh + ei);
          pq.load(dnu_t, ws.kn + krow * kD, kD, kC);
          if (id < kC / 4)
            cp_async16(sm.rk[ei & 1] + 4 * id, ws.rk + krow + 4 * id, true);
          commit_async(sm.f_dnu);
        }
        const int h = head_of(w, rr), bh = w.b * geo.Hv + h;
        const size_t vr = vrow(geo, bh, w.n), st = (size_t(bh) * geo.NT + w.n) * kD * kD;
        { // the head's per-row factors first (the consumers' first wait of a head), loaded
          // before the wait for their buffer, which hides the loads' latency
          float g = 0.f, gl = 0.f, bt = 0.f;
          if (id < kC) {
            g = ws.G[vr + id];
            gl = ws.G[vr + kC - 1];
            bt = id < w.len ? __bfloat162float(*in.beta.at(w.b, w.t0 + id, h)) : 0.f;
          }
          Fill& f = sm.f_sc[eh & 1];
          Scalars& s = sm.sc[eh & 1];
          claim(f, eh >> 1);
          if (id < kC) {
            s.G2[id] = g * kLog2e;
            s.gam[id] = __expf(g);
            s.el[id] = __expf(gl - g);
            s.beta[id] = bt;
          }
          if (id == 0)
            s.item = w;
          f.full.arrive();
        }
        claim(sm.f_do, eh);
        pq.load(do_t, d_o.at(w.b, w.t0, h), d_o.st, w.len);
        commit_async(sm.f_do);
        claim(sm.f_s0, eh);
        ps.load(s0_t, ws.h + st, kD, kD);
        commit_async(sm.f_s0);
        claim(sm.f_nu, eh + ei + 1);
        pq.load(nu_t, ws.nu + vr * kD, kD, kC);
        commit_async(sm.f_nu);
        claim(sm.f_dsl, 2 * eh);
        ps.load(dsl_t, ws.dh + st, kD, kD);
        commit_async(sm.f_dsl);
        claim(sm.f_dnu, eh + ei + 1);
        pq.load(dnu_t, ws.dnu + vr * kD, kD, kC);
        commit_async(sm.f_dnu);
        claim(sm.f_a, eh);
        pa.load(a_t, ws.a + vr * kC, kC, kC);
        commit_async(sm.f_a);
        claim(sm.f_dsl, 2 * eh + 1); // v, once dSL is read
        pq.load(v_t, in.v.at(w.b, w.t0, h), in.v.st, w.len);
        commit_async(sm.f_dsl);
      }
    { // the walk's end, in the next head's fill
      Fill& f = sm.f_sc[eh & 1];
      claim(f, eh >> 1);
      if (id == 0)
        sm.sc[eh & 1].item.it = items;
      f.full.arrive();
    }
    asm volatile("cp.async.wait_all;\n" ::: "memory"); // nothing in flight at the exit
    // in the pipeline, the grid ends after bwd_scan's (its dh0 stores follow its last count), so
    // that what the stream runs next sees them
    wait_primary();
    return;
  }

  sm90::set_max_registers<kConsumerRegs, true>();
  // warp tile: rows m0 .. m0 + 15 of the warpgroup's columns n0 .. n0 + 63 of a 64 x 128 product,
  // nn .. nn + 31 of a 64 x 64 one; rs, cs: its Parts slots of row and column sums
  const int m0 = 16 * (warp % 4), n0 = 64 * wg, nn = 32 * wg;
  const int rs = wg, cs = 4 + warp % 4;
  // the 64 x 64 tile is wholly above the diagonal: zero in the masked products (dQK, dA, dL)
  const bool upper = nn >= m0 + 16;
  const FragAt fat(m0, n0, nn);
  auto frag_of = [&](Tq t) { // the thread's elements of q or k, read just before their use
    RowFrag x;
    x.load(t, fat);
    return x;
  };
  auto sync = [](int id) { bar_sync(id, kConsumers); };
  auto publish = [](int id) { // a barrier after which wgmma may read what was written before it
    fence_async();
    bar_sync(id, kConsumers);
  };

  Acc<16, 64> dq, dk, X;
  int eh = 0, ei = 0; // heads and items consumed so far, as the producer counts them
  for (;; ++ei) {
    landed(sm.f_sc[eh & 1], eh >> 1); // the item's first head's factors, and the item
    const Item cur = sm.sc[eh & 1].item;
    if (cur.it >= items)
      break;
    const int b = cur.b, hk = cur.hk, t0 = cur.t0, L = cur.len;
    if (ei > 0)
      sync(kBarItem); // the last item's tail is done with q, k and the l2 row dots
    { // q and k into place from their staging (the same tile layout), which is then free
      landed(sm.f_nu, eh + ei);
      landed(sm.f_dnu, eh + ei);
      static_assert(kC * kD / 8 % kConsumers == 0);
#pragma unroll
      for (int i = tid; i < kC * kD / 8; i += kConsumers) {
        reinterpret_cast<uint4*>(sm.q)[i] = reinterpret_cast<const uint4*>(sm.nu)[i];
        reinterpret_cast<uint4*>(sm.k)[i] = reinterpret_cast<const uint4*>(sm.dnu)[i];
      }
      release(sm.f_nu);
      release(sm.f_dnu);
      publish(kBarItem);
    }
    { // raw Q K^T and K K^T, once per item; the sums start at zero
      Acc<16, 32> a1, a2;
      product<kD, true>(a1, kmaj(q_t, 0), kmaj(k_t, nn));
      product<kD, true>(a2, kmaj(k_t, 0), kmaj(k_t, nn));
      wait(a1, a2);
      a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
        const int i = m0 + r, j = nn + c;
        sm.qkkk[i * kLdF + j] = i >= j ? x1 : x2;
        sm.s.sums[i * kLdF + j] = 0.f;
      });
    }
    dq.zero();
    dk.zero();
    for (int rr = 0; rr < geo.group; ++rr, ++eh) {
      const int h = hk * geo.group + rr, p = eh & 1;
      const Scalars& scl = sm.sc[p];
      const float *const G2 = scl.G2, *const gam = scl.gam, *const el = scl.el,
                         *const beta = scl.beta;
      Parts &dG = sm.dG[p], &dB = sm.dB[p], &cl = sm.cl[p], &cw = sm.cw[p];
      landed(sm.f_sc[p], eh >> 1);
      landed(sm.f_do, eh);
      landed(sm.f_s0, eh);

      // dq += scale Gm .* (do S0^T); dG += row dots with q
      product<kD, true>(X, kmaj(do_t, 0), kmaj(s0_t, n0));
      float f[2], s[2]; // per fragment row: a factor; row dots
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
        f[hi] = geo.scale * gam[sm90::frag_row(hi)];
      wait(X);
      row_dots(X, frag_of(q_t), s, f);
      put_rows<true>(dG, rs, s);
      add_scaled(dq, X, f);
      landed(sm.f_nu, eh + ei + 1);
      landed(sm.f_dsl, 2 * eh);
      // dk += El .* (nu dSL^T), the row dots with k to cl; beside it dQK = do nu^T
      product<kD, true>(X, kmaj(nu_t, 0), kmaj(dsl_t, n0));
      Acc<16, 32> a;
      product<kD, true>(a, kmaj(do_t, 0), kmaj(nu_t, nn));
      { // <S0, dSL> for dG_last, in 16-byte pieces (the tiles share one layout), beside the
        // products
        static_assert(kD * kD / 8 % kConsumers == 0);
        float s0 = 0.f, s1 = 0.f; // two chains: the even and the odd columns
#pragma unroll
        for (int it = 0; it < kD * kD / 8 / kConsumers; ++it) {
          const int at = 8 * (tid + it * kConsumers);
          const uint4 a4 = *reinterpret_cast<const uint4*>(sm.s0 + at);
          const uint4 d4 = *reinterpret_cast<const uint4*>(sm.dsl + at);
          const uint32_t aw[4] = {a4.x, a4.y, a4.z, a4.w}, dw[4] = {d4.x, d4.y, d4.z, d4.w};
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            const float2 u = bf16x2_to_float2(aw[q]), d = bf16x2_to_float2(dw[q]);
            s0 = fmaf(u.x, d.x, s0);
            s1 = fmaf(u.y, d.y, s1);
          }
        }
        const float sum = warp_sum(s0 + s1);
        if ((tid & 31) == 0)
          sm.s0dsl[p][warp] = sum;
      }
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
        f[hi] = el[sm90::frag_row(hi)];
      wait<1>(X);
      release(sm.f_dsl); // dSL is read (nu dSL^T, <S0, dSL>)
      row_dots(X, frag_of(k_t), s, f);
      put_rows<true>(cl, rs, s);
      add_scaled(dk, X, f);
      wait(a);
      release(sm.f_do); // do is read (do S0^T, do nu^T)
      if (!upper) {     // dQK into the sums, and the dG terms of M = lowerIncl(q k^T .* D)
        // the gates first, in a pass without stores: G2 is read once per row and column (the
        // compiler cannot tell G2 from the sums, so a store between would reload it)
        const float scale = geo.scale;
        a.each_pair([&](int r, int c, float& x0, float& x1) {
          const int i = m0 + r, j = nn + c;
          const float gi = G2[i];
          const float2 gj = *reinterpret_cast<const float2*>(G2 + j);
          x0 = i >= j ? scale * x0 * exp2_ftz(gi - gj.x) : 0.f;
          x1 = i >= j + 1 ? scale * x1 * exp2_ftz(gi - gj.y) : 0.f;
        });
        a.each_pair([&](int r, int c, float& x0, float& x1) {
          const int i = m0 + r, j = nn + c;
          const float2 qk = *reinterpret_cast<const float2*>(sm.qkkk + i * kLdF + j);
          float* const sum = sm.s.sums + i * kLdF + j;
          // only on and below the diagonal: above it, in this warp's tile, another warp's dL
          // epilogue of the last head may still be adding dP^T
          if (i >= j + 1) {
            float2 t = *reinterpret_cast<float2*>(sum);
            t.x += x0;
            t.y += x1;
            *reinterpret_cast<float2*>(sum) = t;
          } else if (i == j) {
            sum[0] += x0;
          }
          x0 *= qk.x;
          x1 *= qk.y;
        });
        add_row_sums(a, m0, nn, dG, rs, [](int, int, float x) { return x; });
        put_col_sums<true>(a, {-1.f, -1.f}, nn, dG, cs);
      }
      landed(sm.f_dnu, eh + ei + 1);
      landed(sm.f_a, eh);
      // dw = -dnu S0^T, into the v_new buffer; beside it dv = beta .* (A^T dnu)
      product<kD, true>(X, kmaj(dnu_t, 0), kmaj(s0_t, n0));
      {
        Acc<16, 64> V;
        product64<Lay::KM, Lay::KN, true>(V, a_t, dnu_t.block(wg));
        wait<1>(X);
        release(sm.f_s0); // S0 is read (do S0^T, <S0, dSL>, dnu S0^T)
        X.each([](int, int, float& x) { x = -x; });
        sync(kBarNu); // both warpgroups' products with v_new are done
        store_frag(X, nu_t.p, fat.q);
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          f[hi] = beta[sm90::frag_row(hi)];
        wait(V);
        scale_rows(V, f);
        store_acc_bf16(V, dv_out.at(b, t0 + m0, h) + n0, dv_out.st, L - m0);
      }
      publish(kBarDw); // dw is complete
      landed(sm.f_dsl, 2 * eh + 1);

      // dA = lowerIncl(dnu V^T diag(beta) + dw K^T diag(beta Gm)), stored whole (zeros above
      // the diagonal); dbeta += column sums of A .* (dnu V^T); beside them dk += beta Gm .*
      // (A^T dw), the row dots with k to cw
      {
        Acc<16, 32> a1, a2;
        product<kD, true>(a1, kmaj(dnu_t, 0), kmaj(v_t, nn));
        product<kD, true>(a2, kmaj(nu_t, 0), kmaj(k_t, nn));
        product64<Lay::KM, Lay::KN, true>(X, a_t, nu_t.block(wg));
        wait<1>(a1, a2);
        release(sm.f_dsl); // v is read
        release(sm.f_dnu); // dv_new is read (dnu S0^T, A^T dnu, dnu V^T)
        if (!upper)
          set_col_dots(a1, nn, dB, cs, a_t, fat.a);
        a1.each_with(a2, [&](int r, int c, float& x1, float& x2) {
          const int i = m0 + r, j = nn + c;
          x1 = i >= j ? beta[j] * (x1 + gam[j] * x2) : 0.f;
        });
        store_frag(a1, da_t.p, fat.a);
      }
      wait(X);
      release(sm.f_nu); // dw is read (dw K^T, A^T dw)
      row_dots(X, frag_of(k_t), s);
      put_rows<true>(cw, rs, s);
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int r = sm90::frag_row(hi);
        f[hi] = beta[r] * gam[r];
      }
      add_scaled(dk, X, f);
      publish(kBarDA); // dA is complete
      {                // t2 = dA A^T
        Acc<16, 32> z;
        product<kC, true>(z, kmaj(da_t, 0), kmaj(a_t, nn));
        wait(z);
        store_frag(z, t2_t.p, fat.a);
      }
      publish(kBarT2); // t2 is complete
      {                // dL = -A^T t2 (strictly lower) -> dbeta, dG; dP = dL .* beta_i D -> sums
        Acc<16, 32> dl;
        product<kC, true>(dl, mnmaj(a_t, 0), mnmaj(t2_t, nn));
        wait(dl);
        release(sm.f_a); // A is read
        if (!upper) {
          // the gates first, in a pass without stores (as dQK's); beta by the fragment's row
          float brow[2];
#pragma unroll
          for (int hi = 0; hi < 2; ++hi)
            brow[hi] = beta[sm90::frag_row(hi)];
          dl.each_pair([&](int r, int c, float& x0, float& x1) {
            const int i = m0 + r, j = nn + c;
            const float gi = G2[i];
            const float2 gj = *reinterpret_cast<const float2*>(G2 + j);
            x0 = i > j ? -x0 * exp2_ftz(gi - gj.x) : 0.f;
            x1 = i > j + 1 ? -x1 * exp2_ftz(gi - gj.y) : 0.f;
          });
          dl.each_pair([&](int r, int c, float& x0, float& x1) {
            const int i = m0 + r, j = nn + c;
            const float bi = r >= 8 ? brow[1] : brow[0]; // r: the fragment's row hi = r / 8
            // only strictly above the diagonal, where the owner of (i, j) is the one writer of
            // (j, i): on and below it another warp may be adding the next head's dQK already
            if (i > j)
              sm.s.sums[j * kLdF + i] += x0 * bi;
            if (i > j + 1)
              sm.s.sums[(j + 1) * kLdF + i] += x1 * bi;
            x0 *= sm.qkkk[j * kLdF + i];
            x1 *= sm.qkkk[(j + 1) * kLdF + i];
          });
          // the row sums into dbeta and, times beta_i, into dG: one reduction for both
#pragma unroll
          for (int hi = 0; hi < 2; ++hi) {
            const int row = m0 + (tid & 31) / 4 + 8 * hi;
            float t = 0.f;
#pragma unroll
            for (int j = 0; j < 4; ++j)
              t += dl.c[0][j][2 * hi] + dl.c[0][j][2 * hi + 1];
            t = quad_sum(t);
            if (tid % 4 == 0) {
              dB[rs][row] = t;
              dG[rs][row] += beta[row] * t;
            }
          }
          put_col_sums<false>(dl, {-brow[0], -brow[1]}, nn, dG, cs);
        }
      }

      // the head's tail by warps 2 and 3, while the others go on to the next head (whose sums
      // are the other parity's)
      if (warp == 2 || warp == 3) {
        sync(kBarSums);
        if (warp == 2) { // assemble dG, reverse cumsum -> dg
          const int lane = tid & 31;
          float d[2], cl_sum = 0.f;
#pragma unroll
          for (int x = 0; x < 2; ++x) {
            const int i = 2 * lane + x;
            const float cli = sum_parts(cl, i);
            cl_sum += cli;
            d[x] = sum_parts(dG, i) - cli + beta[i] * gam[i] * sum_parts(cw, i);
          }
          cl_sum = warp_sum(cl_sum);
          float s0dsl = 0.f;
#pragma unroll
          for (int w = 0; w < kWarps; ++w)
            s0dsl += sm.s0dsl[p][w];
#pragma unroll
          for (int x = 0; x < 2; ++x)
            if (2 * lane + x == L - 1)
              d[x] += cl_sum + gam[kC - 1] * s0dsl;
          float dg[2];
          reverse_cumsum_pairs(d, lane, dg);
#pragma unroll
          for (int x = 0; x < 2; ++x)
            if (2 * lane + x < L)
              *dg_out.at(b, t0 + 2 * lane + x, h) = dg[x];
        } else { // dbeta
#pragma unroll
          for (int x = 0; x < 2; ++x) {
            const int i = 2 * (tid & 31) + x;
            if (i < L)
              *db_out.at(b, t0 + i, h) =
                  __float2bfloat16(sum_parts(dB, i) + gam[i] * sum_parts(cw, i));
          }
        }
      } else {
        bar_arrive(kBarSums, kConsumers);
      }
      release(sm.f_sc[p]); // the head's factors are read
    }

    // The item's tail. dq += dQKs k, dk += dQKs^T q + Psym k with dQKs = sum dQK (into the dA
    // buffer) and Psym = sum (dP + dP^T) (into t2), on wgmma into the registers' dq and dk
    sync(kBarItem); // the sums are complete
    const Ta dqks = da_t, psym = t2_t;
    static_assert(kC * kC / 8 == 2 * kConsumers);
#pragma unroll
    for (int piece = 0; piece < 2; ++piece) { // thread: row i, columns j0 .. j0 + 7
      const int at = tid + piece * kConsumers, i = at % kC, j0 = 8 * (at / kC);
      float cv[8];
      *reinterpret_cast<float4*>(cv) = *reinterpret_cast<const float4*>(sm.s.sums + i * kLdF + j0);
      *reinterpret_cast<float4*>(cv + 4) =
          *reinterpret_cast<const float4*>(sm.s.sums + i * kLdF + j0 + 4);
      __nv_bfloat162 lo[4], up[4];
#pragma unroll
      for (int q = 0; q < 4; ++q) {
        float l[2], u[2];
#pragma unroll
        for (int x = 0; x < 2; ++x) {
          const int j = j0 + 2 * q + x;
          l[x] = i >= j ? cv[2 * q + x] : 0.f;
          u[x] = i < j ? cv[2 * q + x] : i > j ? sm.s.sums[j * kLdF + i] : 0.f;
        }
        lo[q] = __floats2bfloat162_rn(l[0], l[1]);
        up[q] = __floats2bfloat162_rn(u[0], u[1]);
      }
      *reinterpret_cast<uint4*>(&dqks(i, j0)) = *reinterpret_cast<const uint4*>(lo);
      *reinterpret_cast<uint4*>(&psym(i, j0)) = *reinterpret_cast<const uint4*>(up);
    }
    publish(kBarItem); // the sums are read (the l2 row dots take their place), dQKs, Psym written
    product64<Lay::MK, Lay::KN, false>(dq, dqks, k_t.block(wg));
    product64<Lay::KM, Lay::KN, false>(dk, dqks, q_t.block(wg));
    product64<Lay::MK, Lay::KN, false>(dk, psym, k_t.block(wg));
    wait(dq, dk);
    if (geo.l2) { // through the normalisation: dx = rstd (dxn - xn (xn . dxn))
      // each warp sets its own slot's rows; the slots no row dot reaches are cleared
      float sq[2], sk[2];
      row_dots(dq, frag_of(q_t), sq);
      row_dots(dk, frag_of(k_t), sk);
      put_rows<true>(sm.s.l2.dotq, rs, sq);
      put_rows<true>(sm.s.l2.dotk, rs, sk);
      if (tid < kC)
        for (int w = 2; w < kSlots; ++w)
          sm.s.l2.dotq[w][tid] = sm.s.l2.dotk[w][tid] = 0.f;
      sync(kBarItem);
      auto l2_bwd = [&](Acc<16, 64>& dx, const RowFrag& xn, const Parts& dot, const float* rstd) {
#pragma unroll
        for (int hi = 0; hi < 2; ++hi) {
          const int i = sm90::frag_row(hi);
          const float d = sum_parts(dot, i), r = rstd[i];
#pragma unroll
          for (int j = 0; j < 8; ++j) {
            const float2 y = xn.at(j, hi);
            dx.c[0][j][2 * hi] = r * (dx.c[0][j][2 * hi] - y.x * d);
            dx.c[0][j][2 * hi + 1] = r * (dx.c[0][j][2 * hi + 1] - y.y * d);
          }
        }
      };
      l2_bwd(dq, frag_of(q_t), sm.s.l2.dotq, sm.rq[ei & 1]);
      l2_bwd(dk, frag_of(k_t), sm.s.l2.dotk, sm.rk[ei & 1]);
    }
    store_acc_bf16(dq, dq_out.at(b, t0 + m0, hk) + n0, dq_out.st, L - m0);
    store_acc_bf16(dk, dk_out.at(b, t0 + m0, hk) + n0, dk_out.st, L - m0);
  }
#endif
}

} // namespace

std::string launch_bwd_intra_sm90(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                                  Ref<const bf16> d_o, const BwdArgs& out, Pipeline pipe,
                                  cudaStream_t st) {
  const int smem = sizeof(WsIntraSmem) + 1024; // + the 1024-byte alignment
  QR_CUDA_TRY(
      cudaFuncSetAttribute(bwd_intra_ws_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  int dev = 0, sms = 0;
  QR_CUDA_TRY(cudaGetDevice(&dev));
  QR_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  const int items = geo.NT * geo.B * geo.Hk; // persistent: one CTA per SM walks them
  // in the pipeline, bwd_scan's dependent: its CTAs take the SMs the scans leave
  QR_CUDA_TRY(launch_maybe_dependent(
      pipe.ready != nullptr, bwd_intra_ws_kernel, dim3(std::min(items, sms)), dim3(kIntraThreads),
      smem, st, geo, in, ws, d_o, ref<bf16>(out.dq), ref<bf16>(out.dk), ref<bf16>(out.dv),
      ref<bf16>(out.dbeta), ref<float>(out.dg), pipe));
  return {};
}

} // namespace qr::gdn::fused
