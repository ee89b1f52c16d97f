// Fused GDN, the backward scan on Hopper (sm_90a): warp-specialised, every product on wgmma
// (wgmma.cuh), laid out as fused_scan.cu's forward scan. One CTA per (64 NS value
// columns, value head), walking its chunks in reverse as sm80/fused_scan.cu's bwd_scan does, with
// the same algebra (fused_algorithm.cuh) and results; dS is the gradient of the state leaving the
// chunk:
//
//   producer warpgroup     chunk n's q, k, A, do slice, G, beta into stage i % kStages (i the
//                          walk's step, n = y - 1 - i) by cp.async; signals full[stage]; refills
//                          a stage once empty[stage] says every consumer is done with it.
//   state warpgroup s      dS of value columns [64 s, 64 s + 64) in registers (two m64n64
//   (s < NS, 4 warps)      accumulators, Dk rows 0-63 and 64-127). The critical path, per chunk:
//                            dS -> bf16 dSb_s (= dh_n)                           (hands on: DSB)
//                            X = K dSb_s                                          8 k-steps
//                              (meanwhile dS = exp(Gl) dS + Qs^T do_s             2 x 4 k-steps)
//                            dv_new = El .* X + T_s -> Dnu_s                      (DNU)
//                            Y = -diag(beta exp(G)) A^T Dnu_s -> Y_s              4 k-steps
//                            dS += K^T Y_s                                        2 x 4 k-steps
//   side warpgroup         the state-free pieces, a chunk ahead where it can: Ms = scale
//   (4 warps)              lowerIncl(Q K^T .* D) from the raw Q, then Q scaled in place to Qs =
//                          scale diag(exp(G)) Q (bwd_scan's rounding), then per slice T_s = Ms^T
//                          do_s, kept fp32 (in the fragment order the state warpgroup reads it
//                          in), so dv_new is rounded once as in bwd_scan; it copies dSb_s to ws.dh
//                          and Dnu_s to ws.dnu in coalesced 16-byte pieces (sm80/fused_scan.cu says
//                          why), forming the next chunk's Ms and Qs between the two copies; in the
//                          backward's pipeline (fused_pipeline.cuh, Pipeline) it then counts the
//                          chunk in.
//
// Hand-offs between a state warpgroup s and the side warpgroup are named-barrier pairs of 256
// threads (4 per slice), each generation of one held back by its partner, so that neither side
// can lap the other: DSB_s (state arrives once dSb_s is written, side syncs before copying it) and
// DSB_FREE_s (side arrives once it is copied, state syncs before overwriting it; pre-arrived once);
// DNU_s (state arrives once Dnu_s is written, and so once it has read T_s; side syncs before
// copying Dnu_s and before writing the next T_s); TQ_s (side arrives once T_s and Qs are written,
// after its copies of the last Dnu of every slice; state syncs before its Qs^T do, its reads of
// T_s and its next Dnu_s write: TQ_s is Dnu_s's FREE barrier too). Per chunk and slice each
// barrier completes once. Stages are mbarrier rings (full: the producer's 128 threads, empty: the
// NS + 1 consumer warpgroups'). Products read shared memory through the async proxy, so every
// writer fences (fence_async) before the barrier that publishes its tiles.
//
// Grid and shapes as sm80/fused_scan.cu: dim3(kD / BV, B Hv, scan groups), BV = 64 NS; NS = 2 (two
// stages: 220 KB of shared memory) or NS = 1 (three stages, 205 KB). Four (NS = 2) or three
// warpgroups, setmaxnreg as the forward: 56 registers for the producer, 152 / 224 for the
// consumers. The stamp check first; varlen reloads of the final-state gradient, the initial-state
// gradient saves and the split segments' leaving gradients as bwd_scan. Built for sm_90a only;
// dispatch.h picks it on sm_90 devices.
#include "fused_ring.cuh"

namespace qr::gdn::fused {
namespace {

using namespace ring;
using sm90::bar_arrive;
using sm90::bar_sync;
using sm90::fence_async;

template <int NS>
struct alignas(1024) HopperBwdSmem {
  Ring<NS> ring;          // q: raw Q, then Qs in place (side warpgroup); x: do
  bf16 dsb[kD * 64 * NS]; // leaving-state gradient, bf16 (block s: slice s)
  bf16 dnu[kC * 64 * NS]; // dv_new
  bf16 y[kC * 64 * NS];   // -diag(beta exp(G)) A^T dv_new
  bf16 ms[kC * kC];       // Ms
  // T_s = Ms^T do_s, fp32 in fragment order: float4 j of thread t (of 128) at [s][j][t] holds
  // its Frag's c[0][j][0..3], so that each warp reads 512 contiguous bytes
  float4 t[NS * 8 * 128];
  int edge; // seg: the walk's restart slot
};
// 220 KB at NS = 2, 205 KB at NS = 1 (with the 1 KB that aligns the base): 227 KB fit a CTA.
static_assert(sizeof(HopperBwdSmem<2>) + 1024 <= 227 * 1024 &&
              sizeof(HopperBwdSmem<1>) + 1024 <= 227 * 1024);

// The hand-offs of slice s (bar_id(s, k)).
enum HandOff { kTq, kDsb, kDsbFree, kDnu };

// kSeg: sm80/fused_split.cu's seg_bwd, NS = 2, two CTAs per segment (blockIdx.x: the gradient dE
// entering it from [do], its transposed transition T^bwd from [0]), walking down from the
// segment's first sequence end or gate horizon (T^bwd then 0, its CTA idle); no dh_n or dv_new
// stores. Else bwd_scan.
template <int NS, bool kSeg>
__global__ void __launch_bounds__(128 * (NS + 2), 1)
    bwd_scan_hopper_kernel(Geo geo, Workspace ws, Ref<const bf16> beta, Ref<const bf16> d_o,
                           const float* dht, float* dh0, const float* entering, int* ready) {
#if QR_GDN_WGMMA
  constexpr int BV = 64 * NS;
  if constexpr (!kSeg) // bwd_intra, its dependent in the backward's pipeline, may start beside it
    launch_dependents();
  extern __shared__ char smem_raw[];
  HopperBwdSmem<NS>& sm = sm90::aligned_smem<HopperBwdSmem<NS>>(smem_raw);
  const int bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int v0 = kSeg ? 0 : blockIdx.x * BV; // seg: every column, of dE or of T^bwd
  const bool seg_move = kSeg && blockIdx.x == 1;
  const int warp = threadIdx.x / 32, wg = warp / 4;
  int2 slots = scan_slots(geo, blockIdx.z, gridDim.z, kSeg || entering != nullptr);
  const bool context_ok = stamp_ok(geo, ws);
  bool restart = false;   // seg: the walk starts at the segment's first sequence end
  bool truncated = false; // seg: or earlier, from zero (gate_horizon)
  if constexpr (kSeg) {
    auto zeros = [&] {
      float* out =
          (seg_move ? ws.seg_move : ws.seg_end) + (size_t(bh) * gridDim.z + blockIdx.z) * kD * kD;
      for (int i = threadIdx.x; i < kD * kD; i += blockDim.x)
        out[i] = 0.f;
    };
    // nobody needs this segment's dE and T^bwd (the first one, or the one before ends a sequence)
    if (!context_ok || slots.x == 0 || chunk_at(geo, ws, b, slots.x - 1).last || slots.x >= slots.y)
      return zeros();
    if (threadIdx.x == 0)
      sm.edge = slots.y;
    __syncthreads();
    for (int n = slots.x + threadIdx.x; n < slots.y; n += blockDim.x)
      if (chunk_at(geo, ws, b, n).last)
        atomicMin(&sm.edge, n);
    __syncthreads();
    restart = sm.edge < slots.y;
    slots.y = restart ? sm.edge + 1 : slots.y; // the walk's top slot is slots.y - 1
    const int horizon = block_gate_horizon(geo, ws, beta, b, bh, slots.x, slots.y - 1, 1, sm.edge);
    truncated = horizon < slots.y - 1;
    slots.y = min(slots.y, horizon + 1);
    if (seg_move && (restart || truncated)) // T^bwd = 0: what enters is cut off
      return zeros();
  }
  if (!context_ok || slots.x >= slots.y)
    return;
  const int chunks = slots.y - slots.x;
  if (threadIdx.x == 0)
    sm.ring.init(NS + 1); // the state and side warpgroups
  __syncthreads();

  // step i of the walk is slot slots.y - 1 - i, in stage i % kStages
  auto stage = [&](int i) -> Stage<NS>& { return sm.ring[i]; };
  auto q_tile = [&](int i) { return Tile<kC, kD>{stage(i).q}; };
  auto k_tile = [&](int i) { return Tile<kC, kD>{stage(i).k}; };
  auto do_tile = [&](int i, int sl) { return Tile<kC, BV>{stage(i).x}.block(sl); };

  if (wg == NS + 1) { // producer warpgroup
    produce<NS>(geo, ws, {true, seg_move, d_o, beta}, sm.ring, slots.y - 1, chunks, true, bh,
                v0); // T^bwd's do is zero
    return;
  }

  sm90::set_max_registers<kConsumerRegs<NS>, true>();
  const int tid = threadIdx.x % 128; // index in the warpgroup
  if (wg < NS) {                     // state warpgroup of slice `wg`
    const int sl = wg;
    const Tile<kD, 64> dsb = Tile<kD, BV>{sm.dsb}.block(sl);
    const Tile<kC, 64> dnu = Tile<kC, BV>{sm.dnu}.block(sl), y = Tile<kC, BV>{sm.y}.block(sl);
    const float4* t = sm.t + sl * 8 * 128 + tid;
    const int col0 = v0 + 64 * sl; // this slice's first column in the state tensors
    Frag dS[2];
    if (seg_move) { // T^bwd from the identity
#pragma unroll
      for (int m = 0; m < 2; ++m)
        sm90::each_pair64(dS[m], [&](int, int r, int c, float& x0, float& x1) {
          x0 = 64 * m + r == col0 + c ? 1.f : 0.f;
          x1 = 64 * m + r == col0 + c + 1 ? 1.f : 0.f;
        });
    } else if (kSeg) { // dE from zero, or from the sequence's final-state gradient after a restart
      const float* at = restart && !truncated
                            ? state_of(dht, geo, chunk_at(geo, ws, b, slots.y - 1), h, 0)
                            : nullptr;
      sm90::load_slice(dS, at ? at + col0 : nullptr, kD);
    } else {
      const Chunk c0 = chunk_at(geo, ws, b, slots.y - 1);
      const float* at = c0.last    ? state_of(dht, geo, c0, h, 0)
                        : entering ? segment_state(entering, bh, 0)
                                   : nullptr;
      sm90::load_slice(dS, at ? at + col0 : nullptr, kD);
    }
    for (int i = 0; i < chunks; ++i) {
      Stage<NS>& s = sm.ring.landed(i);
      const Chunk cur = s.chunk;
      if (i > 0 && cur.last) { // varlen: this slot ends a sequence
        const float* at = state_of(dht, geo, cur, h, 0);
        sm90::load_slice(dS, at ? at + col0 : nullptr, kD);
      }
      const float Gl = s.G[kC - 1];
      float el[2], bg[2]; // per fragment row: exp(Gl - G), -beta exp(G)
#pragma unroll
      for (int hi = 0; hi < 2; ++hi) {
        const int r = sm90::frag_row(hi);
        el[hi] = exp_ftz(Gl - s.G[r]);
        bg[hi] = -s.beta[r] * exp_ftz(s.G[r]);
      }

      bar_sync(bar_id(sl, kDsbFree), kPair); // the side warpgroup has copied the last dSb
#pragma unroll
      for (int m = 0; m < 2; ++m)
        sm90::store_frag(dsb, 64 * m, dS[m],
                         [](int, int, int, float x0, float x1) { return make_float2(x0, x1); });
      fence_async();
      bar_arrive(bar_id(sl, kDsb), kPair);
      bar_sync(bar_group(sl), kGroup);

      Frag X; // K dSb, then dv_new, then A^T dv_new
      X.zero();
      sm90::mma64<Lay::MK, Lay::KN, kD>(X, k_tile(i), dsb);
      // dS's state-free part beside the chain: exp(Gl) dS + Qs^T do, once Qs and T are there
      const float decay = exp_ftz(Gl);
      bar_sync(bar_id(sl, kTq), kPair);
#pragma unroll
      for (int m = 0; m < 2; ++m) {
        dS[m].each([&](int, int, float& x) { x *= decay; });
        sm90::mma64<Lay::KM, Lay::KN, kC>(dS[m], q_tile(i).block(m), do_tile(i, sl));
      }
      sm90::mma_wait<2>(X);
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float4 tj = t[j * 128];
        X.c[0][j][0] = el[0] * X.c[0][j][0] + tj.x;
        X.c[0][j][1] = el[0] * X.c[0][j][1] + tj.y;
        X.c[0][j][2] = el[1] * X.c[0][j][2] + tj.z;
        X.c[0][j][3] = el[1] * X.c[0][j][3] + tj.w;
      }
      sm90::store_frag(dnu, 0, X,
                       [](int, int, int, float x0, float x1) { return make_float2(x0, x1); });
      fence_async();
      bar_arrive(bar_id(sl, kDnu), kPair);
      bar_sync(bar_group(sl), kGroup);

      X.zero();
      sm90::mma64<Lay::KM, Lay::KN, kC>(X, Tile<kC, kC>{s.a}, dnu);
      sm90::mma_wait(X, dS[0], dS[1]);
      sm90::store_frag(y, 0, X, [&](int hi, int, int, float x0, float x1) {
        return make_float2(bg[hi] * x0, bg[hi] * x1);
      });
      fence_async();
      bar_sync(bar_group(sl), kGroup);

#pragma unroll
      for (int m = 0; m < 2; ++m)
        sm90::mma64<Lay::KM, Lay::KN, kC>(dS[m], k_tile(i).block(m), y);
      sm90::mma_wait(dS[0], dS[1]);
      sm.ring.release(i);
      if (cur.first) {
        float* at = state_of(dh0, geo, cur, h, 0);
        if (at)
          sm90::save_slice(dS, at + col0, kD);
      }
    }
    if constexpr (kSeg) {
      const size_t at = (size_t(bh) * gridDim.z + blockIdx.z) * kD * kD;
      sm90::save_slice(dS, (seg_move ? ws.seg_move : ws.seg_end) + at + col0, kD);
    }
    return;
  }

  // side warpgroup: Ms and Qs of step i + 1 are formed between its copies of step i's dSb and
  // Dnu, so that T of step i + 1 waits only for the state warpgroups' reads of T (DNU)
  const Tile<kC, kC> ms{sm.ms};
  auto form_ms_qs = [&](int i) {
    Stage<NS>& s = sm.ring.landed(i);
    bar_sync(bar_group(NS), kGroup); // every side warp is done with the last Ms
    Frag M;
    M.zero();
    sm90::mma64<Lay::MK, Lay::NK, kD>(M, q_tile(i), k_tile(i));
    sm90::mma_wait(M);
    store_ms(M, ms, s.G, geo.scale);
    // Qs = scale diag(exp(G)) Q in place of the raw Q, once every side warp has waited for its
    // part of Q K^T (a warp's wait covers only its own part's reads): a tile row's 16-byte pieces
    // stay in that row, row = offset / 64 in a block
    bar_sync(bar_group(NS), kGroup);
#pragma unroll
    for (int k = 0; k < kC * kD / 8 / kGroup; ++k) {
      const int p = tid + k * kGroup, r = p % (kC * 8) / 8;
      const float f = geo.scale * exp_ftz(s.G[r]);
      scale_piece(s.q + 8 * p, [&](int) { return make_float2(f, f); });
    }
    fence_async();
    bar_sync(bar_group(NS), kGroup);
  };
#pragma unroll
  for (int sl = 0; sl < NS; ++sl) // the slices' first dSb is free to write
    bar_arrive(bar_id(sl, kDsbFree), kPair);
  form_ms_qs(0);
  for (int i = 0; i < chunks; ++i) {
    const int n = slots.y - 1 - i;
    const bool more = i + 1 < chunks;
    // T_s = Ms^T do_s into sm.t (free: step i - 1's DNU_s syncs came first), every slice's
    // product issued before the first is waited for
    Frag T[NS];
#pragma unroll
    for (int sl = 0; sl < NS; ++sl) {
      T[sl].zero();
      sm90::mma64<Lay::KM, Lay::KN, kC>(T[sl], ms, do_tile(i, sl));
    }
    auto hand_t = [&](int sl) {
      float4* t = sm.t + sl * 8 * 128 + tid;
#pragma unroll
      for (int j = 0; j < 8; ++j)
        t[j * 128] =
            make_float4(T[sl].c[0][j][0], T[sl].c[0][j][1], T[sl].c[0][j][2], T[sl].c[0][j][3]);
      bar_arrive(bar_id(sl, kTq), kPair);
    };
    if constexpr (NS == 2) {
      sm90::mma_wait<1>(T[0]);
      hand_t(0);
    }
    sm90::mma_wait(T[NS - 1]);
    hand_t(NS - 1);
    sm.ring.release(i);
#pragma unroll
    for (int sl = 0; sl < NS; ++sl) {
      bar_sync(bar_id(sl, kDsb), kPair);
      if constexpr (!kSeg)
        sm90::store_tile<128>(Tile<kD, BV>{sm.dsb}.block(sl),
                              ws.dh + (size_t(bh) * geo.NT + n) * kD * kD + v0 + 64 * sl, kD, tid);
      if (more)
        bar_arrive(bar_id(sl, kDsbFree), kPair);
    }
    if (more)
      form_ms_qs(i + 1);
#pragma unroll
    for (int sl = 0; sl < NS; ++sl) {
      bar_sync(bar_id(sl, kDnu), kPair);
      if constexpr (!kSeg)
        sm90::store_tile<128>(Tile<kC, BV>{sm.dnu}.block(sl),
                              ws.dnu + vrow(geo, bh, n) * kD + v0 + 64 * sl, kD, tid);
    }
    if (ready && ((i + 1) % kCountBatch == 0 || !more)) { // count chunks n .. n + done - 1
      bar_sync(bar_group(NS), kGroup);
      const int done = i % kCountBatch + 1;
      if (tid < done)
        count_written(ready + size_t(bh) * geo.NT + n + tid);
    }
  }
#endif
}

template <int NS, bool kSeg>
std::string launch_ns(const Geo& geo, ScanGrid sg, const Workspace& ws, Ref<const bf16> beta,
                      Ref<const bf16> d_o, const float* dht, float* dh0, const float* entering,
                      int* ready, bool dependent, cudaStream_t st) {
  const auto kernel = bwd_scan_hopper_kernel<NS, kSeg>;
  const size_t smem = sizeof(HopperBwdSmem<NS>) + 1024; // + the 1024-byte alignment
  QR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  const int x = kSeg ? 2 : kD / sg.bv;
  QR_CUDA_TRY(launch_maybe_dependent(dependent, kernel, dim3(x, geo.B * geo.Hv, sg.groups),
                                     dim3(128 * (NS + 2)), smem, st, geo, ws, beta, d_o, dht, dh0,
                                     entering, ready));
  return {};
}

} // namespace

std::string launch_bwd_scan_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                 float* dh0, const float* entering, Pipeline pipe, bool dependent,
                                 cudaStream_t st) {
  return sg.bv == 128 ? launch_ns<2, false>(geo, sg, ws, in.beta, d_o, dht, dh0, entering,
                                            pipe.ready, dependent, st)
                      : launch_ns<1, false>(geo, sg, ws, in.beta, d_o, dht, dh0, entering,
                                            pipe.ready, dependent, st);
}

std::string launch_seg_bwd_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                cudaStream_t st) {
  return launch_ns<2, true>(geo, sg, ws, in.beta, d_o, dht, nullptr, nullptr, nullptr, false, st);
}

} // namespace qr::gdn::fused
