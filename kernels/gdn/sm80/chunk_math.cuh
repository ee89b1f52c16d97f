// The per-chunk pieces the mma.sync (sm_80) kernels of both families share: accumulator stores,
// row normalisation, the in-chunk cumsum, reproducible row / column sums of fragments,
// fp32-accurate products on tf32 tensor cores, and the unit-lower-triangular inverse of the WY
// transform.
#pragma once

#include "geometry.cuh"

namespace qr::gdn::sm80 {

using namespace geometry;

// Writes a warp's fp32 accumulator tile as bf16 pairs to dst (row stride ld elements); rows at or
// past valid_rows (relative to the tile origin) are skipped.
template <int WM, int WN>
__device__ __forceinline__ void store_acc_bf16(Acc<WM, WN>& acc, bf16* dst, int64_t ld,
                                               int valid_rows = WM) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < Acc<WM, WN>::MI; ++i)
#pragma unroll
    for (int j = 0; j < Acc<WM, WN>::NJ; ++j)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int r = 16 * i + lane / 4 + 8 * hi, c = 8 * j + 2 * (lane % 4);
        if (r < valid_rows)
          *reinterpret_cast<__nv_bfloat162*>(dst + r * ld + c) =
              __floats2bfloat162_rn(acc.c[i][j][2 * hi], acc.c[i][j][2 * hi + 1]);
      }
}

// Normalises the first `rows` rows (128 bf16 each) of a 64-row smem tile in place; warp w owns
// rows w, w + 8, ..., all loaded before the reductions so their latencies overlap. Stores
// 1 / sqrt(|x|^2 + eps) per row in rstd when given. All threads of the CTA take part.
__device__ __forceinline__ void normalize_rows(bf16* tile, int ld, int rows, float* rstd) {
  constexpr int kPerWarp = kC / (kThreads / 32);
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  float2 x[kPerWarp][2];
  float ss[kPerWarp];
#pragma unroll
  for (int i = 0; i < kPerWarp; ++i) {
    const __nv_bfloat162* p =
        reinterpret_cast<const __nv_bfloat162*>(tile + (warp + 8 * i) * ld + 4 * lane);
    x[i][0] = __bfloat1622float2(p[0]);
    x[i][1] = __bfloat1622float2(p[1]);
    ss[i] = x[i][0].x * x[i][0].x + x[i][0].y * x[i][0].y + x[i][1].x * x[i][1].x +
            x[i][1].y * x[i][1].y;
  }
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
#pragma unroll
    for (int i = 0; i < kPerWarp; ++i)
      ss[i] += __shfl_xor_sync(0xffffffffu, ss[i], o);
#pragma unroll
  for (int i = 0; i < kPerWarp; ++i) {
    const int r = warp + 8 * i;
    if (r >= rows)
      break;
    const float rs = rsqrtf(ss[i] + kL2Eps);
    __nv_bfloat162* p = reinterpret_cast<__nv_bfloat162*>(tile + r * ld + 4 * lane);
    p[0] = __floats2bfloat162_rn(x[i][0].x * rs, x[i][0].y * rs);
    p[1] = __floats2bfloat162_rn(x[i][1].x * rs, x[i][1].y * rs);
    if (rstd && lane == 0)
      rstd[r] = rs;
  }
}

// Inclusive prefix sum of 64 values by one warp (two per lane): G[i] = sum_{j <= i} g[j].
__device__ __forceinline__ void warp_cumsum64(const float* g, float* G) {
  const int lane = threadIdx.x & 31;
  const float a = g[2 * lane], b = a + g[2 * lane + 1];
  float x = b;
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_up_sync(0xffffffffu, x, o);
    if (lane >= o)
      x += y;
  }
  G[2 * lane] = x - b + a;
  G[2 * lane + 1] = x;
}

// Per-warp partial sums: part[warp][i]. Each warp adds only to its own slot without atomics, and
// sum_parts() adds the slots in a fixed order, so the results are bit-for-bit reproducible. Row
// and column sums reach a slot from different lanes, hence the __syncwarp() around each update.
using Parts = float[kThreads / 32][kC];

__device__ __forceinline__ float sum_parts(const Parts& part, int i) {
  float s = 0.f;
#pragma unroll
  for (int w = 0; w < kThreads / 32; ++w)
    s += part[w][i];
  return s;
}

// part[slot][row] += sum over the warp tile's columns of f(row, col, value), rows relative to m0;
// = instead of += with kSet. `slot` is the caller's: the warp, or any other fixed owner per entry.
template <bool kSet = false, int WM, int WN, class F>
__device__ __forceinline__ void add_row_sums(Acc<WM, WN>& acc, int m0, int n0, Parts& part,
                                             int slot, F&& f) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int i = 0; i < Acc<WM, WN>::MI; ++i)
#pragma unroll
    for (int hi = 0; hi < 2; ++hi) {
      const int row = m0 + 16 * i + lane / 4 + 8 * hi;
      float s = 0.f;
#pragma unroll
      for (int j = 0; j < Acc<WM, WN>::NJ; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e)
          s += f(row, n0 + 8 * j + 2 * (lane % 4) + e, acc.c[i][j][2 * hi + e]);
      s = quad_sum(s);
      __syncwarp();
      if (lane % 4 == 0)
        part[slot][row] = kSet ? s : part[slot][row] + s;
      __syncwarp();
    }
}

// part[slot][col] += sum over the warp tile's rows of f(row, col, value); kSet as above.
template <bool kSet = false, int WM, int WN, class F>
__device__ __forceinline__ void add_col_sums(Acc<WM, WN>& acc, int m0, int n0, Parts& part,
                                             int slot, F&& f) {
  const int lane = threadIdx.x & 31;
#pragma unroll
  for (int j = 0; j < Acc<WM, WN>::NJ; ++j)
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const int col = n0 + 8 * j + 2 * (lane % 4) + e;
      float s = 0.f;
#pragma unroll
      for (int i = 0; i < Acc<WM, WN>::MI; ++i)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          s += f(m0 + 16 * i + lane / 4 + 8 * hi, col, acc.c[i][j][2 * hi + e]);
      s = column_sum(s);
      __syncwarp();
      if (lane < 4)
        part[slot][col] = kSet ? s : part[slot][col] + s;
      __syncwarp();
    }
}

// x = head + tail exactly: head is x truncated to tf32, tail the rest (at most 13 bits wide).
__device__ __forceinline__ void split_tf32(float x, uint32_t& head, uint32_t& tail) {
  head = __float_as_uint(x) & 0xffffe000u;
  tail = __float_as_uint(x - __uint_as_float(head));
}

__device__ __forceinline__ void mma_tf32_1688(float (&d)[4], const uint32_t (&a)[4],
                                              const uint32_t (&b)[2]) {
  asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
}

// d += A B for one warp's 16 x 8 tile, A (16 x K) and B (K x 8) fp32 in shared memory (row
// strides lda, ldb), to about fp32 accuracy: each operand is split into a tf32 head and a tail
// and three products are summed (head * head, head * tail, tail * head). The head is x with its
// low 13 bits cleared, so the tail x - head is exact and goes to the mma as it is (the tensor
// cores read its tf32 bits): an AND and a subtraction per operand instead of two emulated
// cvt.rna.tf32 and a subtraction. The tail keeps 11 of its up to 13 bits, so each operand is
// exact to about 2^-21 relative instead of 2^-24 with rounded halves: the inverses' errors stayed
// at 4.4e-3 of bf16's outputs (docs/gdn/kernels.md). Fragments of
// mma.m16n8k8.tf32: A (row g | g + 8, column t | t + 4), B (row t | t + 4, column g), with
// g = lane / 4 and t = lane % 4; d as in Acc.
template <int K>
__device__ __forceinline__ void mma_f32x3(float (&d)[4], const float* A, int lda, const float* B,
                                          int ldb) {
  const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 8) {
    const float a[4] = {A[g * lda + k0 + t], A[(g + 8) * lda + k0 + t], A[g * lda + k0 + t + 4],
                        A[(g + 8) * lda + k0 + t + 4]};
    const float b[2] = {B[(k0 + t) * ldb + g], B[(k0 + t + 4) * ldb + g]};
    uint32_t ah[4], al[4], bh[2], bl[2];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      split_tf32(a[i], ah[i], al[i]);
#pragma unroll
    for (int i = 0; i < 2; ++i)
      split_tf32(b[i], bh[i], bl[i]);
    mma_tf32_1688(d, al, bh);
    mma_tf32_1688(d, ah, bl);
    mma_tf32_1688(d, ah, bh);
  }
}

// W warps of a CTA, from warp warp0 on, that solve one inverse together, synchronising on named
// barrier `bar` alone: 0 with W the whole CTA (__syncthreads' barrier), else 1 or 2. The ids are
// immediates so that ptxas reserves three barriers, not all sixteen.
template <int W>
struct Team {
  int warp0 = 0, bar = 0;
  __device__ __forceinline__ int warp() const { return int(threadIdx.x) / 32 - warp0; }
  __device__ __forceinline__ int tid() const { return int(threadIdx.x) - 32 * warp0; }
  __device__ __forceinline__ void sync() const {
    if (bar == 0)
      asm volatile("bar.sync 0, %0;\n" ::"n"(32 * W) : "memory");
    else if (bar == 1)
      asm volatile("bar.sync 1, %0;\n" ::"n"(32 * W) : "memory");
    else
      asm volatile("bar.sync 2, %0;\n" ::"n"(32 * W) : "memory");
  }
};

// One doubling step of invert_unit_lower: for the off-diagonal blocks of size H at rows
// [o + H, o + 2H), cols [o, o + H), block = -Y^-1 (L21 X^-1) with X^-1, Y^-1 already in Ainv.
// Both H x H x H products run on the tensor cores (mma_f32x3), in 16 x 8 output tiles spread over
// the team's warps: 4 tiles at H = 16 (two blocks), 8 at H = 32. The scalar form of this step
// read two shared-memory words per multiply-add and was the prep kernels' bottleneck. Block b's
// L21 X^-1 goes to rows H b .. of tmp (row stride ldt).
template <int H, int W>
__device__ __forceinline__ void invert_step(const float* Lf, const float* lscale, float* Ainv,
                                            float* tmp, int ldt, Team<W> team) {
  constexpr int kTiles = (H / 16) * (H / 8), kAll = kC / (2 * H) * kTiles;
  constexpr int kRounds = (kAll + W - 1) / W;
  const int lane = threadIdx.x & 31, g = lane / 4, t = lane % 4;
  // round r's output tile of this warp: tile u, of block b (at offset o), rows tr .., columns tc ..
  struct TileAt {
    int u, b, o, tr, tc;
  };
  auto tile_at = [&](int r) {
    const int u = team.warp() + W * r, b = u / kTiles;
    return TileAt{u, b, 2 * H * b, 16 * ((u % kTiles) / (H / 8)), 8 * (u % (H / 8))};
  };
  team.sync();
#pragma unroll
  for (int r = 0; r < kRounds; ++r) { // tmp = diag(lscale) L21 X^-1
    const auto [u, b, o, tr, tc] = tile_at(r);
    if (u < kAll) {
      float d[4] = {0.f, 0.f, 0.f, 0.f};
      mma_f32x3<H>(d, Lf + (o + H + tr) * kLdF + o, kLdF, Ainv + o * kLdF + o + tc, kLdF);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = tr + g + 8 * (e / 2), j = tc + 2 * t + e % 2;
        tmp[(H * b + i) * ldt + j] = lscale[o + H + i] * d[e];
      }
    }
  }
  team.sync();
#pragma unroll
  for (int r = 0; r < kRounds; ++r) { // block = -Y^-1 tmp
    const auto [u, b, o, tr, tc] = tile_at(r);
    if (u < kAll) {
      float d[4] = {0.f, 0.f, 0.f, 0.f};
      mma_f32x3<H>(d, Ainv + (o + H + tr) * kLdF + o + H, kLdF, tmp + H * b * ldt + tc, ldt);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int i = tr + g + 8 * (e / 2), j = tc + 2 * t + e % 2;
        Ainv[(o + H + i) * kLdF + o + j] = -d[e];
      }
    }
  }
}

// Ainv = (I + L)^-1 for a strictly lower 64 x 64 L given as L(i, j) = lscale[i] * Lf[i][j] (fp32,
// row stride kLdF; only entries below the diagonal are read) by the team's warps. Ainv (stride
// kLdF): every entry on or below the diagonal 16 x 16 blocks is written; the blocks above them
// must be zero on entry (a buffer that only ever holds such inverses stays so). Diagonal 16 x 16
// blocks by forward substitution (one thread per column, written after the loop so that the loads
// need not wait behind stores that might alias them), then two doubling steps with [[X, 0], [L21,
// Y]]^-1 = [[X^-1, 0], [-Y^-1 L21 X^-1, Y^-1]]. `tmp` is 32 x 32 fp32 scratch, row stride ldt (it
// may be the part of Lf above the diagonal, columns 32 .. 63 of rows 0 .. 31). Starts and ends with
// the team's barrier.
template <int W = kThreads / 32>
__device__ __forceinline__ void invert_unit_lower(const float* Lf, const float* lscale, float* Ainv,
                                                  float* tmp, int ldt = 32, Team<W> team = {}) {
  team.sync();
  const int tid = team.tid();
  if (tid < kC) {
    const int blk = tid / 16, c = tid % 16, r0 = 16 * blk;
    float x[16];
#pragma unroll
    for (int i = 0; i < 16; ++i) {
      float s0 = 0.f, s1 = 0.f; // two chains: the even and the odd columns
#pragma unroll
      for (int j = 0; j < i; ++j)
        (j % 2 ? s1 : s0) += Lf[(r0 + i) * kLdF + r0 + j] * x[j];
      x[i] = i < c ? 0.f : (i == c ? 1.f : 0.f) - lscale[r0 + i] * (s0 + s1);
    }
#pragma unroll
    for (int i = 0; i < 16; ++i)
      Ainv[(r0 + i) * kLdF + r0 + c] = x[i];
  }
  invert_step<16>(Lf, lscale, Ainv, tmp, ldt, team);
  invert_step<32>(Lf, lscale, Ainv, tmp, ldt, team);
  team.sync();
}

} // namespace qr::gdn::sm80
