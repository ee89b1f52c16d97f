// Fused GDN, the forward-recurrence scans on Hopper (sm_90a): fwd_scan, save_scan and the split's
// seg_fwd, warp-specialised, every product on wgmma (wgmma.cuh). One CTA per (64 NS value
// columns, value head), walking its chunks in order as sm80/fused_scan.cu's scans do, with the same
// algebra (fused_algorithm.cuh) and results; the roles run side by side and hand tiles over through
// shared memory:
//
//   producer warpgroup     chunk n's q, k, A, v slice, G, beta into stage n % kStages by
//                          cp.async; signals full[stage]; refills a stage once empty[stage] says
//                          every consumer is done with it.
//   state warpgroup s      the 128 x 64 fp32 state S of value columns [64 s, 64 s + 64) in
//   (s < NS, 4 warps)      registers (two m64n64 accumulators, Dk rows 0-63 and 64-127). The
//                          critical path, per chunk:
//                            S -> bf16 Sb_s                                      (hands on: SB)
//                            X = diag(beta) (V - diag(exp(G)) K Sb_s) -> Xs_s     8 k-steps
//                            v_new = A Xs_s -> Vn_s, El .* v_new -> Es_s          4 k-steps (VN)
//                            S = exp(Gl) S + K^T Es_s                             2 x 4 k-steps
//   output warpgroup       fwd_scan: Ms = scale lowerIncl(Q K^T .* D) (state-free, so it runs
//   (4 warps)              while the state warpgroups form Sb), then per slice o = scale
//                          diag(exp(G)) Q Sb_s + Ms Vn_s; each warp stages its 16 rows of o in
//                          ot and stores them to global in 16-byte pieces.
//   store warpgroup        save_scan, in the output's place: Sb_s (h_n) and Vn_s (v_new) to the
//                          workspace in coalesced 16-byte pieces; no q tile, no Ms. In the
//                          backward's pipeline (fused_pipeline.cuh, Pipeline) it then counts the
//                          chunk in.
//   seg_fwd                the state warpgroups alone, two CTAs per segment (NS = 2): one walks
//                          E (the end state from zero; V as read), the other T (the transition,
//                          from the identity; V = 0), from the segment's last sequence start
//                          (sm80/fused_split.cu states the algebra), and saves it for the combine.
//
// Hand-offs between a state warpgroup s and the output (store) warpgroup are named-barrier
// pairs, each generation of one held back by its partner (so neither side can lap the other):
// SB_s / VN_s (state arrives once Sb_s / Vn_s are written, output syncs before reading them) and
// SB_FREE_s / VN_FREE_s (output arrives once it has read them, state syncs before overwriting;
// pre-arrived once). Every accumulator reaches shared memory by stmatrix (store_frag, four 8 x 8
// matrices an instruction: the epilogues' stores, not the products, set a chunk's time with
// st.shared of bf16 pairs). Stages are mbarrier rings. Products read shared memory through the
// async proxy, so every writer fences (fence_async) before the barrier that publishes its tiles.
//
// Grid and shapes as sm80/fused_scan.cu: dim3(kD / BV, B Hv, scan groups), BV = 64 NS; NS = 2 (128
// columns, two stages: 221 KB of shared memory) where the (batch, value head) pairs fill the GPU,
// else NS = 1 (three stages, 206 KB). Four (NS = 2) or three warpgroups: setmaxnreg gives the
// producer 56 registers and the consumers the rest (152 / 224). Varlen restarts, split segments,
// the final states and save_scan's stamp check as there. Built for sm_90a only; dispatch.h picks
// it on sm_90 devices.
#include "fused_ring.cuh"

namespace qr::gdn::fused {
namespace {

using namespace ring;
using sm90::bar_arrive;
using sm90::bar_sync;
using sm90::fence_async;

template <int NS>
struct alignas(1024) HopperFwdSmem {
  Ring<NS> ring;
  bf16 sb[kD * 64 * NS]; // entering state, bf16 (block s: slice s)
  bf16 xs[kC * 64 * NS]; // diag(beta) (V - exp(G) .* (K S))
  bf16 vn[kC * 64 * NS]; // v_new
  bf16 es[kC * 64 * NS]; // El .* v_new
  bf16 ms[kC * kC];      // Ms
  bf16 ot[kC * 64 * NS]; // fwd: o, each output warp's 16 rows staged for coalesced stores
  int edge;              // seg: the walk's restart slot
};
// 221 KB at NS = 2, 206 KB at NS = 1 (with the 1 KB that aligns the base): 227 KB fit a CTA.
static_assert(sizeof(HopperFwdSmem<2>) + 1024 <= 227 * 1024 &&
              sizeof(HopperFwdSmem<1>) + 1024 <= 227 * 1024);

// The hand-offs of slice s (bar_id(s, k)).
enum HandOff { kSb, kSbFree, kVn, kVnFree };

// fwd: fwd_scan. save: save_scan (h_n and v_new for the backward, no o), the store warpgroup in
// the output's place. seg: sm80/fused_split.cu's seg_fwd, NS = 2, two CTAs per segment (blockIdx.x:
// its end state E from [V], its transition T from [0]), the state warpgroups alone.
enum class Scan { fwd, save, seg };

template <int NS, Scan kMode>
__global__ void __launch_bounds__(128 * (NS + 2), 1)
    scan_hopper_kernel(Geo geo, Workspace ws, FwdInputs in, const float* h0, Ref<bf16> o, float* ht,
                       const float* entering, int* ready) {
#if QR_GDN_WGMMA
  constexpr bool kSave = kMode == Scan::save, kSeg = kMode == Scan::seg;
  if constexpr (kSave) // bwd_scan, its dependent in the backward's pipeline, may start beside it
    launch_dependents();
  constexpr int BV = 64 * NS;
  extern __shared__ char smem_raw[];
  HopperFwdSmem<NS>& sm = sm90::aligned_smem<HopperFwdSmem<NS>>(smem_raw);
  const int bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int v0 = kSeg ? 0 : blockIdx.x * BV; // seg: every column, of E or of T
  const bool seg_move = kSeg && blockIdx.x == 1;
  const int warp = threadIdx.x / 32, wg = warp / 4;
  int2 slots = scan_slots(geo, blockIdx.z, gridDim.z, kSeg || entering != nullptr);
  bool restart = false;   // seg: the walk starts at the segment's last sequence start
  bool truncated = false; // seg: or later, from zero (gate_horizon)
  if constexpr (kSeg) {
    auto zeros = [&] {
      float* out =
          (seg_move ? ws.seg_move : ws.seg_end) + (size_t(bh) * gridDim.z + blockIdx.z) * kD * kD;
      for (int i = threadIdx.x; i < kD * kD; i += blockDim.x)
        out[i] = 0.f;
    };
    // nobody needs this segment's E and T (the last one, or the next starts a sequence)
    if (slots.y >= geo.NT || chunk_at(geo, ws, b, slots.y).first || slots.x >= slots.y)
      return zeros();
    if (threadIdx.x == 0)
      sm.edge = slots.x - 1;
    __syncthreads();
    for (int n = slots.x + threadIdx.x; n < slots.y; n += blockDim.x)
      if (chunk_at(geo, ws, b, n).first)
        atomicMax(&sm.edge, n);
    __syncthreads();
    restart = sm.edge >= slots.x;
    slots.x = restart ? sm.edge : slots.x;
    const int horizon =
        block_gate_horizon(geo, ws, in.beta, b, bh, slots.y - 1, slots.x, -1, sm.edge);
    truncated = horizon > slots.x;
    slots.x = max(slots.x, horizon);
    if (seg_move && (restart || truncated)) // T = 0: what enters is cut off
      return zeros();
  }
  if ((kSave && !stamp_ok(geo, ws)) || slots.x >= slots.y)
    return;
  const int chunks = slots.y - slots.x;
  if (threadIdx.x == 0)
    sm.ring.init(kMode == Scan::fwd ? NS + 1 : NS); // the output reads stages, not the store
  __syncthreads();

  auto stage = [&](int i) -> Stage<NS>& { return sm.ring[i]; };
  auto q_tile = [&](int i) { return Tile<kC, kD>{stage(i).q}; };
  auto k_tile = [&](int i) { return Tile<kC, kD>{stage(i).k}; };

  if (wg == NS + 1) { // producer warpgroup (T's V is zero)
    produce<NS>(geo, ws, {kMode == Scan::fwd, seg_move, in.v, in.beta}, sm.ring, slots.x, chunks,
                false, bh, v0);
    return;
  }

  if (kSeg && wg == NS) // seg has no output
    return;
  sm90::set_max_registers<kConsumerRegs<NS>, true>();
  if (wg < NS) { // state warpgroup of slice `wg`
    const int sl = wg;
    const Tile<kD, 64> sb = Tile<kD, BV>{sm.sb}.block(sl);
    const Tile<kC, 64> xs = Tile<kC, BV>{sm.xs}.block(sl), vn = Tile<kC, BV>{sm.vn}.block(sl),
                       es = Tile<kC, BV>{sm.es}.block(sl);
    const int col0 = v0 + 64 * sl; // this slice's first column in the state tensors
    Frag S[2];
    if (seg_move) { // T from the identity
#pragma unroll
      for (int m = 0; m < 2; ++m)
        sm90::each_pair64(S[m], [&](int, int r, int c, float& x0, float& x1) {
          x0 = 64 * m + r == col0 + c ? 1.f : 0.f;
          x1 = 64 * m + r == col0 + c + 1 ? 1.f : 0.f;
        });
    } else if (kSeg) { // E from zero, or from the sequence's initial state after a restart
      const float* at =
          restart && !truncated ? state_of(h0, geo, chunk_at(geo, ws, b, slots.x), h, 0) : nullptr;
      sm90::load_slice(S, at ? at + col0 : nullptr, kD);
    } else {
      const Chunk c0 = chunk_at(geo, ws, b, slots.x);
      const float* at = entry_state(geo, c0, h0, entering, bh, h, 0);
      sm90::load_slice(S, at ? at + col0 : nullptr, kD);
    }
    for (int i = 0; i < chunks; ++i) {
      Stage<NS>& s = sm.ring.landed(i);
      const Chunk cur = s.chunk;
      if (i > 0 && cur.first) { // varlen: this slot starts a sequence
        const float* at = state_of(h0, geo, cur, h, 0);
        sm90::load_slice(S, at ? at + col0 : nullptr, kD);
      }
      const float Gl = s.G[kC - 1];
      float gm[2], be[2], el[2]; // per fragment row: exp(G), beta, exp(Gl - G)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int r = sm90::frag_row(hi);
        gm[hi] = exp_ftz(s.G[r]);
        be[hi] = s.beta[r];
        el[hi] = exp_ftz(Gl - s.G[r]);
      }

      if constexpr (!kSeg)
        bar_sync(bar_id(sl, kSbFree), kPair); // the output warpgroup is done with the last Sb
#pragma unroll
      for (int m = 0; m < 2; ++m)
        sm90::store_frag(sb, 64 * m, S[m],
                         [](int, int, int, float x0, float x1) { return make_float2(x0, x1); });
      fence_async();
      if constexpr (!kSeg)
        bar_arrive(bar_id(sl, kSb), kPair);
      bar_sync(bar_group(sl), kGroup);

      Frag X; // K S, then v_new
      X.zero();
      sm90::mma64<Lay::MK, Lay::KN, kD>(X, k_tile(i), sb);
      sm90::mma_wait(X);
      sm90::store_frag(xs, 0, X, Tile<kC, BV>{s.x}.block(sl),
                       [&](int hi, int, int, float x0, float x1, float2 v) {
                         return make_float2(be[hi] * (v.x - gm[hi] * x0),
                                            be[hi] * (v.y - gm[hi] * x1));
                       });
      fence_async();
      bar_sync(bar_group(sl), kGroup);

      X.zero();
      sm90::mma64<Lay::MK, Lay::KN, kC>(X, Tile<kC, kC>{s.a}, xs);
      sm90::mma_wait(X);
      if constexpr (!kSeg)
        bar_sync(bar_id(sl, kVnFree), kPair); // the output warpgroup is done with the last Vn
      if constexpr (!kSeg)
        sm90::store_frag(vn, 0, X,
                         [](int, int, int, float x0, float x1) { return make_float2(x0, x1); });
      sm90::store_frag(es, 0, X, [&](int hi, int, int, float x0, float x1) {
        return make_float2(el[hi] * x0, el[hi] * x1);
      });
      fence_async();
      if constexpr (!kSeg)
        bar_arrive(bar_id(sl, kVn), kPair);
      bar_sync(bar_group(sl), kGroup);

      const float decay = exp_ftz(Gl);
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        S[m].each([&](int, int, float& x) { x *= decay; });
        sm90::mma64<Lay::KM, Lay::KN, kC>(S[m], k_tile(i).block(m), es);
      }
      sm90::mma_wait(S[0], S[1]);
      sm.ring.release(i);
      if (cur.last) {
        float* at = state_of(ht, geo, cur, h, 0);
        if (at)
          sm90::save_slice(S, at + col0, kD);
      }
    }
    if constexpr (kSeg) {
      const size_t at = (size_t(bh) * gridDim.z + blockIdx.z) * kD * kD;
      sm90::save_slice(S, (seg_move ? ws.seg_move : ws.seg_end) + at + col0, kD);
    }
    return;
  }

  if constexpr (kSeg) { // (its output warpgroup left before setmaxnreg)
    return;
  } else if constexpr (kSave) { // store warpgroup: each chunk's h_n (its Sb) and v_new to global
#pragma unroll
    for (int sl = 0; sl < NS; ++sl) {
      bar_arrive(bar_id(sl, kSbFree), kPair);
      bar_arrive(bar_id(sl, kVnFree), kPair);
    }
    const int id = threadIdx.x % 128;
    for (int i = 0; i < chunks; ++i) {
      const int n = slots.x + i;
      const bool more = i + 1 < chunks;
#pragma unroll
      for (int sl = 0; sl < NS; ++sl) {
        bar_sync(bar_id(sl, kSb), kPair);
        sm90::store_tile<128>(Tile<kD, BV>{sm.sb}.block(sl),
                              ws.h + (size_t(bh) * geo.NT + n) * kD * kD + v0 + 64 * sl, kD, id);
        if (more)
          bar_arrive(bar_id(sl, kSbFree), kPair);
      }
#pragma unroll
      for (int sl = 0; sl < NS; ++sl) {
        bar_sync(bar_id(sl, kVn), kPair);
        sm90::store_tile<128>(Tile<kC, BV>{sm.vn}.block(sl),
                              ws.nu + vrow(geo, bh, n) * kD + v0 + 64 * sl, kD, id);
        if (more)
          bar_arrive(bar_id(sl, kVnFree), kPair);
      }
      if (ready && ((i + 1) % kCountBatch == 0 || !more)) { // count chunks n - done + 1 .. n
        bar_sync(bar_group(NS), kGroup);
        const int done = i % kCountBatch + 1;
        if (id < done)
          count_written(ready + size_t(bh) * geo.NT + n - id);
      }
    }
    return;
  } else { // output warpgroup
    const Tile<kC, kC> ms{sm.ms};
#pragma unroll
    for (int sl = 0; sl < NS; ++sl) { // the slices' first Sb and Vn are free to write
      bar_arrive(bar_id(sl, kSbFree), kPair);
      bar_arrive(bar_id(sl, kVnFree), kPair);
    }
    for (int i = 0; i < chunks; ++i) {
      Stage<NS>& s = sm.ring.landed(i);
      const Chunk cur = s.chunk;
      const bool more = i + 1 < chunks;

      bar_sync(bar_group(NS), kGroup); // every output warp is done with the last Ms
      Frag M;
      M.zero();
      sm90::mma64<Lay::MK, Lay::NK, kD>(M, q_tile(i), k_tile(i));
      sm90::mma_wait(M);
      store_ms(M, ms, s.G, geo.scale);
      float gs[2]; // per fragment row: scale exp(G)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi)
        gs[hi] = geo.scale * exp_ftz(s.G[sm90::frag_row(hi)]);
      fence_async();
      bar_sync(bar_group(NS), kGroup);

      Frag P[NS]; // scale exp(G) .* (Q S), then o
#pragma unroll
      for (int sl = 0; sl < NS; ++sl) {
        P[sl].zero();
        bar_sync(bar_id(sl, kSb), kPair);
        sm90::mma64<Lay::MK, Lay::KN, kD>(P[sl], q_tile(i), Tile<kD, BV>{sm.sb}.block(sl));
      }
      wait_all(P);
#pragma unroll
      for (int sl = 0; sl < NS; ++sl) {
        if (more)
          bar_arrive(bar_id(sl, kSbFree), kPair);
        sm90::each_pair64(P[sl], [&](int hi, int, int, float& x0, float& x1) {
          x0 *= gs[hi];
          x1 *= gs[hi];
        });
        bar_sync(bar_id(sl, kVn), kPair);
        sm90::mma64<Lay::MK, Lay::KN, kC>(P[sl], ms, Tile<kC, BV>{sm.vn}.block(sl));
      }
      wait_all(P);
      sm.ring.release(i);
      // o through the warp's own 16 rows of ot (stmatrix), then to global in 16-byte pieces, a
      // row's 128 NS bytes from consecutive lanes
      const Tile<kC, BV> ot{sm.ot};
      __syncwarp(); // the warp's reads of the last chunk's rows are done
#pragma unroll
      for (int sl = 0; sl < NS; ++sl) {
        if (more)
          bar_arrive(bar_id(sl, kVnFree), kPair);
        sm90::store_frag(ot.block(sl), 0, P[sl],
                         [](int, int, int, float x0, float x1) { return make_float2(x0, x1); });
      }
      __syncwarp();
      constexpr int kPieces = 8 * NS; // 16-byte pieces per row
      const int lane = threadIdx.x % 32, row0 = 16 * (warp % 4);
      bf16* dst = o.at(cur.b, cur.t0, h) + v0;
#pragma unroll
      for (int k = 0; k < 16 * kPieces / 32; ++k) {
        const int p = lane + 32 * k, r = row0 + p / kPieces, c = p % kPieces * 8;
        if (r < cur.len)
          *reinterpret_cast<uint4*>(dst + r * o.st + c) =
              *reinterpret_cast<const uint4*>(&ot(r, c));
      }
    }
  }
#endif
}

template <int NS, Scan kMode>
std::string launch_ns(const Geo& geo, ScanGrid sg, const Workspace& ws, const FwdInputs& in,
                      const float* h0, Ref<bf16> o, float* ht, const float* entering, int* ready,
                      cudaStream_t st) {
  const auto kernel = scan_hopper_kernel<NS, kMode>;
  const size_t smem = sizeof(HopperFwdSmem<NS>) + 1024; // + the 1024-byte alignment
  QR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int x = kMode == Scan::seg ? 2 : kD / sg.bv;
  kernel<<<dim3(x, geo.B * geo.Hv, sg.groups), 128 * (NS + 2), smem, st>>>(geo, ws, in, h0, o, ht,
                                                                           entering, ready);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace

std::string launch_fwd_scan_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, const float* h0, Ref<bf16> o, float* ht,
                                 const float* entering, cudaStream_t st) {
  return sg.bv == 128 ? launch_ns<2, Scan::fwd>(geo, sg, ws, in, h0, o, ht, entering, nullptr, st)
                      : launch_ns<1, Scan::fwd>(geo, sg, ws, in, h0, o, ht, entering, nullptr, st);
}

std::string launch_save_scan_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                  const FwdInputs& in, const float* h0, const float* entering,
                                  Pipeline pipe, cudaStream_t st) {
  return sg.bv == 128
             ? launch_ns<2, Scan::save>(geo, sg, ws, in, h0, {}, nullptr, entering, pipe.ready, st)
             : launch_ns<1, Scan::save>(geo, sg, ws, in, h0, {}, nullptr, entering, pipe.ready, st);
}

std::string launch_seg_fwd_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, const float* h0, cudaStream_t st) {
  return launch_ns<2, Scan::seg>(geo, sg, ws, in, h0, {}, nullptr, nullptr, nullptr, st);
}

} // namespace qr::gdn::fused
