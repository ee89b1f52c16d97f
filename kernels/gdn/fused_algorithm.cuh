// The fused GDN backend's algorithm (`fused`) and its chunk geometry: the chunk map, the slots a
// scan CTA walks, the states it starts from, the split's gate horizon, and the chunk products the
// kernels of sm80/ and sm90/ form alike. Its workspace and context: fused_workspace.cuh; the
// backward's pipeline: fused_pipeline.cuh; the launchers: fused_launch.cuh; which kernels run:
// dispatch.h.
//
// The chunked algorithm (chunk C = 64, head dims 128) reorganised so
// that one parallel kernel forms FLA's context (the normalised q, k and the chunk inverse A) once,
// and the sequential scans form the rest of each chunk's products (u, w, Ms) from it on the fly
// instead of reading them back from HBM.
//
// Per (b, value head h, chunk n), with q, k the normalised keys of key head h / (Hv / Hk), G the
// in-chunk cumsum of g (pad rows repeat the last real G), Gl = G of the last real token,
// D_ij = exp(G_i - G_j), Gm = exp(G), El = exp(Gl - G):
//
//   prep (sm80/fused_prep.cu, one CTA per (chunk, key head) looping over its value heads;
//   parallel):
//     q, k <- l2norm(q), l2norm(k); K K^T      once per key head: written as qn, kn
//     A    = (I + strictLower(diag(beta) K K^T .* D))^-1   fp32 block inverse, stored in bf16
//
//   fwd_scan (sm80/fused_scan.cu, sm90/fused_scan.cu, one CTA per (BV value columns, value head);
//   sequential over chunks), with u = A diag(beta) V and w = A diag(beta Gm) K never formed:
//     v_new = u - w S = A diag(beta) (V - diag(Gm) K S)     beside  P = scale diag(Gm) Q S
//     o = P + Ms v_new,   Ms = scale lowerIncl(Q K^T .* D)  formed per chunk beside v_new
//     S = exp(Gl) S + K^T diag(El) v_new
//   save_scan: the same recurrence without o, writing h_n and v_new for the backward.
//   bwd_scan (reverse), with dS the gradient of the state leaving the chunk, Ms formed per chunk:
//     dv_new = Ms^T do + diag(El) K dS
//     dS = exp(Gl) dS + (scale diag(Gm) Q)^T do - K^T (diag(beta Gm) A^T dv_new)   (w^T dv_new)
//   bwd_intra (sm80/ and sm90/fused_bwd_intra.cu, persistent CTAs walking the (chunk, key head)
//   items, looping over the group's value heads): every gradient from h_n, dh_n, v_new, dv_new and
//   the stored A, as in sm80/chunked_bwd_intra.cu, without re-normalising q, k or re-inverting.
//
// The context (Workspace, "context" fields) is what a training forward leaves for the backward,
// FLA's set: qn, kn, their rstd, G, A (and the stamp, the varlen chunk map). With it the backward
// is save_scan (h_n, v_new) -> bwd_scan -> bwd_intra, the scans forming what they need from the
// context and the inputs' v and beta, as fwd_scan does; without it, prep (context mode, into the
// workspace) -> the same. bwd_scan reads neither h_n nor v_new, so it does not wait for save_scan:
// they run side by side when both fit in one wave (dispatch.h, plan_bwd).
//
// Variable-length sequences (gdn.h): chunks never cross a sequence boundary, and chunk j of
// sequence s sits at slot floor(cu[s] / 64) + s + j (geometry.cuh, chunk_slots, says why that fits
// in floor(T / 64) + N slots). Every per-chunk quantity above is laid out by slot exactly as in the
// dense case (B = 1, NT = slots), so the kernels differ only in where a slot's tokens are and when
// a state restarts. Prep finds its slot's (sequence, first token, length) by a binary search over
// cu_seqlens and writes it to the context's chunk map, which the later kernels read (the scans
// one chunk ahead, so the load never waits). A slot that no sequence uses gets zero tiles from
// prep (G = 0, A = I) and its beta is 0, so the scans' v_new = A diag(beta) (...) is 0 there:
// they pass the state through it unchanged, bwd_intra skips it. The forward scan restarts the state
// from the sequence's initial state (or zero) after the chunk before a sequence's first and writes
// the final state after its last; the backward scan likewise in reverse with the final-state
// gradient and the initial-state gradient. The scans also split the sequences among gridDim.z
// groups per value head (scan_grid: enough to fill one wave), group z taking whole sequences from
// the first that starts at or after slot z NT / Z, found by a binary search; each sequence is still
// walked by exactly one CTA, so the result is the same bit for bit. All of this is on the device:
// no host sync, a grid fixed by the shape (CUDA-graph capture works).
//
// Split (sm80/fused_split.cu): when the (batch, value head) pairs leave SMs idle (dispatch.h,
// split_segments, from the shape alone: B Hv <= 32 and at least 16 chunks per segment), gridDim.z
// instead cuts each row's slots into Z segments, whole sequences or not. The forward runs seg_fwd
// (every segment's end state E from zero and transition T, the recurrence being affine in the
// state) and combine (S_in(z + 1) = T_z S_in(z) + E_z, fp32) before its scan, whose segment CTAs
// start from S_in unless their first slot starts a sequence; the backward mirrors it (seg_bwd, the
// reverse combine, then bwd_scan from the gradient leaving each segment). A segment's pass walks
// only the chunks whose gates leave more than e^-16 of what enters them (gate_horizon): the rest
// lies below the fp32 state's rounding, so the result differs from the unsplit walk only by
// rounding.
//
// Input checks (Backend::input_error, via the workspace's status word): prep flags any g > 0 or
// NaN (exp(G_i - G_j) <= 1 is what keeps the chunk products in range) and, in a varlen run, bad
// cu_seqlens; a training forward stamps the context with its shape and options, and the backward
// kernels compare the stamp with their own before they read anything else, returning at once on a
// mismatch.
//
// The scans keep the state slice (128 x BV, fp32; BV from dispatch.h's scan_grid) in registers
// and load the next chunk's tiles while they compute the current one (sm80/: cp.async into two
// shared-memory stages; sm90/: a producer warpgroup's mbarrier ring).
#pragma once

#include "fused_workspace.cuh"
#include "sm80/chunk_math.cuh"

namespace qr::gdn::fused {

// Where a chunk slot's tokens are: tokens [t0, t0 + len) of batch row b (len 0: an unused
// slot); its state is index `state` of the [*, Hv, Dk, Dv] state tensors; first / last: the
// first / last chunk of its sequence.
struct Chunk {
  int b, t0, len, state;
  bool first, last;
};

// The varlen chunk map's entry of a slot: {t0, len | first << 7 | last << 8 | state << 9}.
__host__ __device__ inline int2 encode(const Chunk& c) {
  return {c.t0, c.len | int(c.first) << 7 | int(c.last) << 8 | c.state << 9};
}
__device__ __forceinline__ Chunk decode(int2 e) {
  return {0, e.x, e.y & 127, e.y >> 9, bool(e.y >> 7 & 1), bool(e.y >> 8 & 1)};
}
// Dense slots: chunk n of batch row b.
__device__ __forceinline__ Chunk dense_chunk(const Geo& g, int b, int n) {
  return {b, n * kC, g.valid(n), b, n == 0, n == g.NT - 1};
}
// Varlen slot n from cu_seqlens (geometry.cuh, chunk_slots); offsets are clamped into [0, T] so
// that bad ones (flagged by prep) never send a kernel out of bounds.
__device__ __forceinline__ Chunk find_chunk(const Geo& g, int n) {
  auto at = [&](int i) { return min(max(g.cu[i], 0), g.T); };
  int lo = 0, hi = g.N - 1; // the last sequence whose first slot is <= n
  while (lo < hi) {
    const int mid = (lo + hi + 1) / 2;
    if (at(mid) / kC + mid <= n)
      lo = mid;
    else
      hi = mid - 1;
  }
  const int begin = at(lo), end = max(at(lo + 1), begin);
  const int t0 = begin + (n - begin / kC - lo) * kC;
  if (t0 < begin || t0 >= end)
    return {0, 0, 0, lo, false, false};
  return {0, t0, min(kC, end - t0), lo, t0 == begin, t0 + kC >= end};
}

// First token row of chunk n of value head bh = b * Hv + h, and of its key head, in the workspace.
__device__ __forceinline__ size_t vrow(const Geo& g, int bh, int n) {
  return (size_t(bh) * g.NT + n) * kC;
}
__device__ __forceinline__ size_t krow(const Geo& g, int bh, int n) {
  const int b = bh / g.Hv, hk = (bh % g.Hv) / g.group;
  return (size_t(b * g.Hk + hk) * g.NT + n) * kC;
}

// The slots [x, y) that scan CTA group z of Z (gridDim.z) walks. Split: segment z, slots
// [z NT / Z, (z + 1) NT / Z). Else whole sequences, the group's first one the first to start at or
// after slot z NT / Z (fused_scan.cu); dense: all slots.
__device__ __forceinline__ int2 scan_slots(const Geo& g, int z, int Z, bool split) {
  if (split)
    return {int(int64_t(z) * g.NT / Z), int(int64_t(z + 1) * g.NT / Z)};
  if (!g.N)
    return {0, g.NT};
  auto first = [&](int s) { return s >= g.N ? g.NT : min(max(g.cu[s], 0), g.T) / kC + s; };
  auto lower = [&](int slot) { // the first sequence whose first slot is >= slot
    int lo = 0, hi = g.N;
    while (lo < hi) {
      const int mid = (lo + hi) / 2;
      if (first(mid) >= slot)
        hi = mid;
      else
        lo = mid + 1;
    }
    return lo;
  };
  const int a = z == 0 ? 0 : lower(int(int64_t(z) * g.NT / Z));
  const int b = z + 1 == Z ? g.N : lower(int(int64_t(z + 1) * g.NT / Z));
  return {first(a), min(first(b), g.NT)};
}

// Slot n's chunk in the kernels after prep: from the chunk map when varlen.
__device__ __forceinline__ Chunk chunk_at(const Geo& g, const Workspace& ws, int b, int n) {
  return g.N ? decode(ws.chunks[n]) : dense_chunk(g, b, n);
}

template <class T>
__device__ __forceinline__ T* offset(T* p, size_t i) {
  return p ? p + i : nullptr;
}

// The warp's first element of value head h's state of chunk c's sequence (or batch row) in an
// fp32 [*, Hv, Dk, Dv] state tensor (nullable), `tile` = the element's offset inside one state.
template <class T>
__device__ __forceinline__ T* state_of(T* p, const Geo& geo, const Chunk& c, int h, int tile) {
  return offset(p, (size_t(c.state) * geo.Hv + h) * kD * kD + tile);
}

// The split scans' fp32 [Dk, Dv] state of segment blockIdx.z of (b, value head) bh, from
// ws.seg_fwd_in or, backward, ws.seg_in (fused_split.cu).
__device__ __forceinline__ const float* segment_state(const float* seg, int bh, int tile) {
  return seg + (size_t(bh) * gridDim.z + blockIdx.z) * kD * kD + tile;
}
// The state a scan CTA starts from at its first slot c: the sequence's initial state (or zero)
// when c starts one, else (split) the true state entering the segment.
__device__ __forceinline__ const float* entry_state(const Geo& geo, const Chunk& c, const float* h0,
                                                    const float* entering, int bh, int h,
                                                    int tile) {
  return c.first || !entering ? state_of(h0, geo, c, h, tile) : segment_state(entering, bh, tile);
}

// Truncating a split segment's pass (fused_split.cu). Per token the state maps by
// exp(g) (I - beta k k^T), of 2-norm at most exp(g) when |k| <= 1 (l2norm_qk) and 0 <= beta <= 1
// (beta <= 1 keeps it so with bf16's rounding of k), and the backward's gradient by its
// transpose; so of what enters a run of chunks at most
// exp(their summed gates) leaves it. Once that is e^-16 (below 2^-23, fp32's rounding of the
// state), the pass starts there from zero with transition 0. Slow gates, a beta out of range or
// no l2norm keep the whole walk: exact.
constexpr float kHorizonLogDecay = -16.f;
// By one warp (each lane gets the answer): walking slots from `from` by `step` (+1 or -1) up to
// `to` (excluded), the first slot at which the summed chunk gates reach kHorizonLogDecay, every
// beta on the way in [0, 1]; else `to`. After the first slot the lanes take 32 slots a round
// (lane l the l-th in walk order: its betas and its chunk's summed gate), and a prefix sum over
// the lanes and two ballots find the first slot that ends the walk: at slow gates a walk crosses
// whole segments, and one slot at a time it waited through two dependent loads per chunk.
__device__ __forceinline__ int gate_horizon(const Geo& geo, const Workspace& ws,
                                            const Ref<const bf16>& beta, int b, int bh, int from,
                                            int to, int step) {
  if (!geo.l2)
    return to;
  constexpr unsigned kAll = 0xffffffffu;
  const int lane = threadIdx.x % 32, h = bh % geo.Hv;
  if (from == to)
    return to;
  // The first slot alone, its betas spread over the lanes: at fast gates it ends the walk, and a
  // round of 32 slots would cost that case 64 loads a lane.
  const Chunk first = chunk_at(geo, ws, b, from);
  bool first_in_range = true;
  for (int i = lane; i < first.len; i += 32) {
    const float x = __bfloat162float(*beta.at(first.b, first.t0 + i, h));
    first_in_range = first_in_range && x >= 0.f && x <= 1.f; // false for NaN
  }
  if (!__all_sync(kAll, first_in_range))
    return to;
  float gates = ws.G[vrow(geo, bh, from) + kC - 1]; // summed over the slots before the round
  if (gates <= kHorizonLogDecay)
    return from;
  for (int base = from + step; step > 0 ? base < to : base > to; base += 32 * step) {
    const int n = base + lane * step;
    const bool slot = step > 0 ? n < to : n > to;
    bool in_range = true;
    float g = 0.f;
    if (slot) {
      const Chunk c = chunk_at(geo, ws, b, n);
      for (int i = 0; i < c.len; ++i) {
        const float x = __bfloat162float(*beta.at(c.b, c.t0 + i, h));
        in_range = in_range && x >= 0.f && x <= 1.f; // false for NaN
      }
      g = ws.G[vrow(geo, bh, n) + kC - 1]; // a chunk's G ends with its summed gates
    }
#pragma unroll
    for (int o = 1; o < 32; o <<= 1) { // inclusive prefix sum in walk order
      const float y = __shfl_up_sync(kAll, g, o);
      g += lane >= o ? y : 0.f;
    }
    g += gates;
    const unsigned bad = __ballot_sync(kAll, slot && !in_range);
    const unsigned ends = bad | __ballot_sync(kAll, slot && g <= kHorizonLogDecay);
    if (ends) { // the first slot that ends the walk: a beta out of range there ends it at `to`
      const int l = __ffs(ends) - 1;
      return bad >> l & 1 ? to : base + l * step;
    }
    gates = __shfl_sync(kAll, g, 31);
  }
  return to;
}

// gate_horizon for a whole block: warp 0 walks, every thread gets the slot through `edge` (shared
// memory, which every thread must be done reading).
__device__ __forceinline__ int block_gate_horizon(const Geo& geo, const Workspace& ws,
                                                  const Ref<const bf16>& beta, int b, int bh,
                                                  int from, int to, int step, int& edge) {
  __syncthreads();
  if (threadIdx.x < 32) {
    const int n = gate_horizon(geo, ws, beta, b, bh, from, to, step);
    if (threadIdx.x == 0)
      edge = n;
  }
  __syncthreads();
  return edge;
}

// A chunk's 64 G values (fp32) into shared memory by cp.async (the scans' stages).
__device__ __forceinline__ void load_G(float* dst, const float* src) {
  if (threadIdx.x < kC / 4)
    cp_async16(dst + 4 * threadIdx.x, src + 4 * threadIdx.x, true);
}

// A bf16 pair in shared memory from / to two floats (the scans' element-pair epilogues).
__device__ __forceinline__ void store_bf16x2(bf16* p, float x0, float x1) {
  *reinterpret_cast<__nv_bfloat162*>(p) = __floats2bfloat162_rn(x0, x1);
}
__device__ __forceinline__ float2 load_bf16x2(const bf16* p) {
  return bf16x2_to_float2(*reinterpret_cast<const uint32_t*>(p));
}

// Copies a ROWS x COLS bf16 tile from shared memory (row stride ld_src) to global memory (row
// stride ld_dst) in 16-byte pieces; COLS a multiple of 8.
template <int ROWS, int COLS, int THREADS = kThreads>
__device__ __forceinline__ void store_tile(bf16* dst, int64_t ld_dst, const bf16* src, int ld_src) {
  for_each_piece<ROWS, COLS, THREADS>([&](int r, int c) {
    *reinterpret_cast<uint4*>(dst + r * ld_dst + c) =
        *reinterpret_cast<const uint4*>(src + r * ld_src + c);
  });
}

// Eight bf16 in shared memory (16 bytes) times factors, in place, each product rounded to bf16
// once: the pair j (elements 2j, 2j + 1) by f(j).x and f(j).y.
template <class Factors>
__device__ __forceinline__ void scale_piece(bf16* p, Factors f) {
  uint4* const at = reinterpret_cast<uint4*>(p);
  uint4 x = *at;
  uint32_t* const y = reinterpret_cast<uint32_t*>(&x);
#pragma unroll
  for (int j = 0; j < 4; ++j) {
    const float2 t = bf16x2_to_float2(y[j]);
    const float2 s = f(j);
    const __nv_bfloat162 z = __floats2bfloat162_rn(t.x * s.x, t.y * s.y);
    y[j] = *reinterpret_cast<const uint32_t*>(&z);
  }
  *at = x;
}

// The backward scans' Q operand: the chunk's q rows (row stride kLdD, in shared memory) times
// scale exp(G_i), in place, by the CTA's THREADS threads, 8 columns at a time.
template <int THREADS>
__device__ __forceinline__ void scale_q_rows(bf16* q, const float* G, float scale) {
  for_each_piece<kC, kD, THREADS>([&](int i, int c) {
    const float f = scale * exp_ftz(G[i]);
    scale_piece(q + i * kLdD + c, [&](int) { return make_float2(f, f); });
  });
}

// The chunk products the scans form from the context instead of reading them (FLA's set: qn, kn,
// G and the bf16 A; beta from the input).
//
// Chunk c's beta of value head h (0 past its length), for thread threadIdx.x < kC.
__device__ __forceinline__ float beta_of(const Ref<const bf16>& beta, const Chunk& c, int h) {
  const int i = threadIdx.x;
  return i < c.len ? __bfloat162float(*beta.at(c.b, c.t0 + i, h)) : 0.f;
}
// A 64 x 64 bf16 tile (row stride kLdC) times f[j] in column j, in place, by the CTA's THREADS
// threads: A diag(beta) and A diag(beta exp(G)) from A, each element rounded to bf16 once.
template <int THREADS>
__device__ __forceinline__ void scale_columns(bf16* a, const float* f) {
  for_each_piece<kC, kC, THREADS>([&](int i, int c) {
    scale_piece(a + i * kLdC + c,
                [&](int j) { return make_float2(f[c + 2 * j], f[c + 2 * j + 1]); });
  });
}
// X = L x and X = L^T x for the warp's 32-row tile at (r0, c0) (L x also for a 64-row tile, r0 =
// 0), L a lower-triangular 64 x 64 bf16 tile (row stride kLdC) and x 64 rows (row stride ldx): only
// the k-steps the triangle leaves nonzero (for L^T, rows r0 .. of both operands).
template <int M, int N>
__device__ __forceinline__ void lower_times(Acc<M, N>& X, const bf16* l, const bf16* x, int ldx,
                                            int r0, int c0) {
  static_assert(M == 32 || M == 64);
  X.zero();
  if constexpr (M == 64) // the whole chunk: no k-step to skip
    warp_mma<Lay::MK, Lay::KN, 64>(X, l, kLdC, x, ldx, 0, c0);
  else if (r0 == 0)
    warp_mma<Lay::MK, Lay::KN, 32>(X, l, kLdC, x, ldx, 0, c0);
  else
    warp_mma<Lay::MK, Lay::KN, 64>(X, l, kLdC, x, ldx, 32, c0);
}
template <int N>
__device__ __forceinline__ void lower_t_times(Acc<32, N>& X, const bf16* l, const bf16* x, int ldx,
                                              int r0, int c0) {
  X.zero();
  if (r0 == 0)
    warp_mma<Lay::KM, Lay::KN, 64>(X, l, kLdC, x, ldx, 0, c0);
  else
    warp_mma<Lay::KM, Lay::KN, 32>(X, l + 32 * kLdC, kLdC, x + 32 * ldx, ldx, 32, c0);
}
// Ms = scale lowerIncl(Q K^T .* D) into ms (row stride kLdC) from the chunk's raw qn, kn (row
// stride kLdD) and G, by a group of W warps, `warp` the index in it (a 4 x W/4 grid of 16-row
// tiles; tiles above the diagonal only store zeros).
template <int W>
__device__ __forceinline__ void form_ms(bf16* ms, const bf16* q, const bf16* k, const float* G,
                                        float scale, int warp) {
  constexpr int kN = kC * 4 / W;
  const int m0 = 16 * (warp % 4), n0 = kN * (warp / 4);
  Acc<16, kN> x;
  x.zero();
  if (n0 < m0 + 16) {
    warp_mma<Lay::MK, Lay::NK, kD>(x, q, kLdD, k, kLdD, m0, n0);
    x.each([&](int r, int c, float& y) {
      const int i = m0 + r, j = n0 + c;
      y = i >= j ? y * scale * exp_ftz(G[i] - G[j]) : 0.f;
    });
  }
  sm80::store_acc_bf16(x, ms + m0 * kLdC + n0, kLdC);
}

} // namespace qr::gdn::fused
