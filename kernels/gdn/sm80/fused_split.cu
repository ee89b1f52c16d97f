// Fused GDN, splitting a long sequence inside the card. When the (batch, value head) pairs leave
// SMs idle (split_segments, dispatch.h), the scans of fused_scan.cu walk Z segments of each row's
// chunk slots side by side, each from the true state entering it, which this file computes
// exactly beforehand.
//
// Per chunk the forward recurrence is affine in the state,
//   S' = M S + K^T diag(El) u,   M = exp(Gl) I - K^T diag(El) w   (Dk x Dk, per value head),
// so a segment maps the state entering it to S_out = T S_in + E, with E its end state from zero
// and T = M_last ... M_first its transition. The backward, dS_in = M^T dS_out + (scale diag(Gm)
// Q)^T do - w^T Ms^T do, maps the gradient leaving a segment to the one entering it the same way,
// with T^bwd = M_first^T ... M_last^T.
//
//   seg_fwd (on sm_90 devices sm90/fused_scan.cu's, the same walk on wgmma, E and T in two CTAs),
//     one CTA of 16 warps per (b, value head, segment): E and T side by side as one
//     128 x 256 state X = [E | T], from [0 | I], through the forward scan's per-chunk math with
//     V = [V | 0]: v_new = u - w X = A diag(beta) (V - exp(G) .* (K X)), X = exp(Gl) X + K^T
//     (El .* v_new), the same bf16 operand rounding as the scans. Two cp.async stages. Warp w owns
//     the 32 x 64 state tile at rows 32 (w % 4), columns 64 (w / 4) (warps 0-7 E, 8-15 T) and the
//     32 x 32 v_new tile at rows 32 (w % 2), columns 32 (w / 2).
//   seg_bwd (on sm_90 devices sm90/fused_bwd_scan.cu's, dE and T^bwd in two CTAs), likewise in
//     reverse: X = [dE | T^bwd] from [0 | I] through the backward scan's math
//     with do = [do | 0], forming Ms and w^T dv_new from the context as bwd_scan does:
//     dv_new = Ms^T do + El .* (K X), X = exp(Gl) X + (scale exp(G) Q)^T do - w^T dv_new. One
//     stage (the tiles of both stages would not fit).
//   combine, one CTA per (32 value columns, b, value head), fp32 on the CUDA cores, in segment
//     order: S_in(0) = 0, S_in(z + 1) = T_z S_in(z) + E_z (bwd, from the last segment down:
//     dS_out(z - 1) = T^bwd_z dS_out(z) + dE_z), into ws.seg_fwd_in (bwd: ws.seg_in); where T_z
//     is exactly zero (a restart or the gate horizon) it takes E_z without the product.
//     A training forward's seg_fwd_in is in the context: the backward's save_scan reuses it.
//
// Sequence boundaries (varlen; a dense row starts at slot 0 and ends at NT - 1) cut the chain.
// A segment in which a sequence starts walks from its last such start, from that sequence's
// initial state (or zero), with T = 0, so S_out = T S_in + E still holds; the scans themselves
// restart at every first slot as before and use seg_in only where their segment starts
// mid-sequence. A segment whose successor begins with a sequence start, and the last segment,
// feed nobody: they write zeros without walking. The backward mirrors this with sequence ends,
// the final-state gradient and the predecessor.
//
// Gates cut the chain too, up to fp32 rounding (gate_horizon, fused_algorithm.cuh): with |k| <= 1
// and beta in [0, 1] each token's map has norm at most exp(g), so once a segment's last chunks
// (bwd: first) sum their gates to -16 or less, what entered them is below 2^-23 of the state: the
// walk starts there from zero and T = 0. The Hopper kernels then skip the T CTA's walk, as after a
// restart. Slow gates keep the whole walk, exact. At the bench's gates (about -0.8 a token) the
// walk is one chunk.
#include "fused_launch.cuh"

namespace qr::gdn::fused {
namespace {

using sm80::store_acc_bf16;

constexpr int kW = 16, kT = 32 * kW; // warps and threads of seg_fwd / seg_bwd
constexpr int kLdX = 2 * kD + 8;     // padded row stride of the 256-wide [E | T] tiles

struct SegFwdStage {
  bf16 k[kC * kLdD], v[kC * kLdD];
  bf16 a[kC * kLdC]; // A, then A diag(beta) in place
  float G[kC], beta[kC];
};
// 220 KB.
struct SegFwdSmem {
  SegFwdStage st[2];
  bf16 x[kD * kLdX];   // [E | T], bf16 operand copy
  bf16 vx[kC * kLdX];  // [V | 0] - exp(G) .* (K X)
  bf16 nus[kC * kLdX]; // v_new .* El
  float el[kC], gm[kC];
  int edge; // the walk's restart slot
};

// 202 KB.
struct SegBwdSmem {
  bf16 q[kC * kLdD], k[kC * kLdD];
  bf16 a[kC * kLdC];  // A, then A diag(beta exp(G)) in place
  bf16 ms[kC * kLdC]; // Ms, formed here
  bf16 d_o[kC * kLdD];
  float G[kC], beta[kC];
  bf16 x[kD * kLdX];   // [dE | T^bwd], bf16 operand copy
  bf16 dnu[kC * kLdX]; // dv_new
  bf16 y[kC * kLdX];   // -diag(beta exp(G)) A^T dv_new
  float el[kC], bg[kC];
  int edge;
};

// The warp's state tile at (sr, sc) of X = [E | T]: E from `state` (an fp32 [Dk, Dv] state,
// nullable: zero), T the identity, or zero when `restart`.
__device__ __forceinline__ void init_x(Acc<32, 64>& X, int sr, int sc, const float* state,
                                       bool restart) {
  X.zero();
  if (sc < kD) {
    if (state)
      X.each([&](int r, int c, float& x) { x = state[(sr + r) * kD + sc + c]; });
  } else if (!restart) {
    X.each([&](int r, int c, float& x) { x = sr + r == sc - kD + c ? 1.f : 0.f; });
  }
}
// The warp's tile of X to the segment's E (seg_end) or T (seg_move).
__device__ __forceinline__ void save_x(Acc<32, 64>& X, const Workspace& ws, size_t at, int sr,
                                       int sc) {
  float* out = sc < kD ? ws.seg_end + at + sr * kD + sc : ws.seg_move + at + sr * kD + sc - kD;
  X.each([&](int r, int c, float& x) { out[r * kD + c] = x; });
}

__device__ __forceinline__ const float* state_ptr(const float* p, const Geo& geo, const Chunk& c,
                                                  int h) {
  return p ? p + (size_t(c.state) * geo.Hv + h) * kD * kD : nullptr;
}

__global__ void __launch_bounds__(kT, 1)
    seg_fwd_kernel(Geo geo, Workspace ws, FwdInputs in, const float* h0) {
  extern __shared__ __align__(16) char smem_raw[];
  SegFwdSmem& sm = *reinterpret_cast<SegFwdSmem*>(smem_raw);
  const int bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv, z = blockIdx.z, Z = gridDim.z;
  const int tid = threadIdx.x, warp = tid / 32;
  const int sr = 32 * (warp % 4), sc = 64 * (warp / 4); // state tile
  const int pr = 32 * (warp % 2), pc = 32 * (warp / 2); // v_new tile
  const int2 seg = scan_slots(geo, z, Z, true);
  const size_t at = (size_t(bh) * Z + z) * kD * kD;

  // The segment's last sequence start, where the walk restarts.
  if (tid == 0)
    sm.edge = seg.x - 1;
  __syncthreads();
  for (int n = seg.x + tid; n < seg.y; n += kT)
    if (chunk_at(geo, ws, b, n).first)
      atomicMax(&sm.edge, n);
  __syncthreads();
  const bool restart = sm.edge >= seg.x;
  int begin = restart ? sm.edge : seg.x;
  Acc<32, 64> X;
  // Nobody needs this segment's E and T: it is the last, or the next one starts a sequence.
  if (seg.y >= geo.NT || chunk_at(geo, ws, b, seg.y).first || seg.x >= seg.y) {
    X.zero();
    save_x(X, ws, at, sr, sc);
    return;
  }
  const int horizon = block_gate_horizon(geo, ws, in.beta, b, bh, seg.y - 1, begin, -1, sm.edge);
  const bool truncated = horizon > begin;
  begin = max(begin, horizon);
  init_x(X, sr, sc,
         restart && !truncated ? state_ptr(h0, geo, chunk_at(geo, ws, b, begin), h) : nullptr,
         restart || truncated);

  // Chunk n's tiles; its beta for thread tid < kC (registers until chunk n - 1 is done).
  auto issue = [&](int n) {
    const Chunk c = chunk_at(geo, ws, b, n);
    SegFwdStage& s = sm.st[n & 1];
    const size_t row0 = vrow(geo, bh, n);
    load_tile_async<kC, kD, kT>(s.k, kLdD, ws.kn + krow(geo, bh, n) * kD, kD, kC);
    load_tile_async<kC, kD, kT>(s.v, kLdD, in.v.at(c.b, c.t0, h), in.v.st, c.len);
    load_tile_async<kC, kC, kT>(s.a, kLdC, ws.a + row0 * kC, kC, kC);
    load_G(s.G, ws.G + row0);
    return tid < kC ? beta_of(in.beta, c, h) : 0.f;
  };
  const float beta0 = issue(begin);
  if (tid < kC)
    sm.st[begin & 1].beta[tid] = beta0;
  cp_async_commit();
  for (int n = begin; n < seg.y; ++n) {
    cp_async_wait<0>();
    __syncthreads(); // chunk n has landed, and every warp is done with chunk n - 1
    const float beta_next = n + 1 < seg.y ? issue(n + 1) : 0.f;
    cp_async_commit();
    SegFwdStage& s = sm.st[n & 1];
    const float Gl = s.G[kC - 1];
    store_acc_bf16(X, sm.x + sr * kLdX + sc, kLdX);
    if (tid < kC) {
      sm.el[tid] = exp_ftz(Gl - s.G[tid]);
      sm.gm[tid] = exp_ftz(s.G[tid]);
    }
    scale_columns<kT>(s.a, s.beta);
    __syncthreads();
    Acc<32, 32> V; // K X, then v_new = A diag(beta) ([V | 0] - exp(G) .* (K X)) = u - w X
    V.zero();
    warp_mma<Lay::MK, Lay::KN, kD>(V, s.k, kLdD, sm.x, kLdX, pr, pc);
    V.each_pair([&](int r, int c, float& x0, float& x1) {
      const int i = pr + r, j = pc + c;
      const float2 v = pc < kD ? load_bf16x2(s.v + i * kLdD + j) : float2{0.f, 0.f};
      store_bf16x2(sm.vx + i * kLdX + j, v.x - sm.gm[i] * x0, v.y - sm.gm[i] * x1);
    });
    __syncthreads();
    lower_times(V, s.a, sm.vx, kLdX, pr, pc);
    V.each_pair([&](int r, int c, float& x0, float& x1) {
      const int i = pr + r, j = pc + c;
      store_bf16x2(sm.nus + i * kLdX + j, x0 * sm.el[i], x1 * sm.el[i]);
    });
    if (tid < kC)
      sm.st[(n + 1) & 1].beta[tid] = beta_next;
    __syncthreads();
    const float decay = exp_ftz(Gl);
    X.each([&](int, int, float& x) { x *= decay; });
    warp_mma<Lay::KM, Lay::KN, kC>(X, s.k, kLdD, sm.nus, kLdX, sr, sc);
  }
  save_x(X, ws, at, sr, sc);
}

__global__ void __launch_bounds__(kT, 1) seg_bwd_kernel(Geo geo, Workspace ws, Ref<const bf16> beta,
                                                        Ref<const bf16> d_o, const float* dht) {
  extern __shared__ __align__(16) char smem_raw[];
  SegBwdSmem& sm = *reinterpret_cast<SegBwdSmem*>(smem_raw);
  const int bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv, z = blockIdx.z, Z = gridDim.z;
  const int tid = threadIdx.x, warp = tid / 32;
  const int sr = 32 * (warp % 4), sc = 64 * (warp / 4);
  const int pr = 32 * (warp % 2), pc = 32 * (warp / 2);
  const int2 seg = scan_slots(geo, z, Z, true);
  const size_t at = (size_t(bh) * Z + z) * kD * kD;
  const bool context_ok = stamp_ok(geo, ws);

  // The segment's first sequence end, where the reverse walk restarts.
  if (tid == 0)
    sm.edge = seg.y;
  __syncthreads();
  for (int n = seg.x + tid; context_ok && n < seg.y; n += kT)
    if (chunk_at(geo, ws, b, n).last)
      atomicMin(&sm.edge, n);
  __syncthreads();
  const bool restart = sm.edge < seg.y;
  int top = restart ? sm.edge : seg.y - 1;
  Acc<32, 64> X;
  // Nobody needs this segment's dE and T: it is the first, or the one before ends a sequence.
  if (!context_ok || seg.x == 0 || chunk_at(geo, ws, b, seg.x - 1).last || seg.x >= seg.y) {
    X.zero();
    save_x(X, ws, at, sr, sc);
    return;
  }
  const int horizon = block_gate_horizon(geo, ws, beta, b, bh, seg.x, top, 1, sm.edge);
  const bool truncated = horizon < top;
  top = min(top, horizon);
  init_x(X, sr, sc,
         restart && !truncated ? state_ptr(dht, geo, chunk_at(geo, ws, b, top), h) : nullptr,
         restart || truncated);

  const bool gradient = sc < kD; // this warp's state tile is in dE
  for (int n = top; n >= seg.x; --n) {
    const Chunk c = chunk_at(geo, ws, b, n);
    __syncthreads(); // every warp is done with chunk n + 1's tiles
    const size_t row0 = vrow(geo, bh, n), krow0 = krow(geo, bh, n);
    load_tile_async<kC, kD, kT>(sm.q, kLdD, ws.qn + krow0 * kD, kD, kC);
    load_tile_async<kC, kD, kT>(sm.k, kLdD, ws.kn + krow0 * kD, kD, kC);
    load_tile_async<kC, kC, kT>(sm.a, kLdC, ws.a + row0 * kC, kC, kC);
    load_tile_async<kC, kD, kT>(sm.d_o, kLdD, d_o.at(c.b, c.t0, h), d_o.st, c.len);
    load_G(sm.G, ws.G + row0);
    cp_async_commit();
    if (tid < kC)
      sm.beta[tid] = beta_of(beta, c, h);
    store_acc_bf16(X, sm.x + sr * kLdX + sc, kLdX); // beside the loads
    cp_async_wait<0>();
    __syncthreads();
    const float Gl = sm.G[kC - 1];
    if (tid < kC) {
      sm.el[tid] = exp_ftz(Gl - sm.G[tid]);
      sm.bg[tid] = sm.beta[tid] * exp_ftz(sm.G[tid]);
    }
    form_ms<kW>(sm.ms, sm.q, sm.k, sm.G, geo.scale, warp); // as bwd_scan
    __syncthreads();
    scale_columns<kT>(sm.a, sm.bg);
    scale_q_rows<kT>(sm.q, sm.G, geo.scale);
    Acc<32, 32> V; // dv_new = El .* (K X) (+ Ms^T do in dE's columns)
    V.zero();
    warp_mma<Lay::MK, Lay::KN, kD>(V, sm.k, kLdD, sm.x, kLdX, pr, pc);
    V.each([&](int r, int, float& x) { x *= sm.el[pr + r]; });
    if (pc < kD)
      warp_mma<Lay::KM, Lay::KN, kC>(V, sm.ms, kLdC, sm.d_o, kLdD, pr, pc);
    V.each_pair([&](int r, int col, float& x0, float& x1) {
      store_bf16x2(sm.dnu + (pr + r) * kLdX + pc + col, x0, x1);
    });
    __syncthreads();
    // w^T dv_new = K^T diag(beta exp(G)) A^T dv_new
    lower_t_times(V, sm.a, sm.dnu, kLdX, pr, pc);
    V.each_pair([&](int r, int col, float& x0, float& x1) {
      store_bf16x2(sm.y + (pr + r) * kLdX + pc + col, -x0, -x1);
    });
    __syncthreads();
    const float decay = exp_ftz(Gl);
    X.each([&](int, int, float& x) { x *= decay; });
    if (gradient)
      warp_mma<Lay::KM, Lay::KN, kC>(X, sm.q, kLdD, sm.d_o, kLdD, sr, sc);
    warp_mma<Lay::KM, Lay::KN, kC>(X, sm.k, kLdD, sm.y, kLdX, sr, sc);
  }
  save_x(X, ws, at, sr, sc);
}

constexpr int kCombineCols = 32, kCombineThreads = 256;
constexpr int kCombineRows = kD * kCombineCols / kCombineThreads; // per thread: 16
struct CombineSmem {
  float t[kD * kD];           // the segment's transition
  float s[kD * kCombineCols]; // the running state's column slice
};

// In segment order (reverse: from the last down), seg_in(z) = the running state, which then
// becomes T_z state + E_z. Thread t owns column t % 32 of the slice, rows 16 (t / 32) ...
__global__ void __launch_bounds__(kCombineThreads)
    combine_kernel(Workspace ws, int Z, bool reverse, float* seg_in) {
  extern __shared__ __align__(16) char smem_raw[];
  CombineSmem& sm = *reinterpret_cast<CombineSmem*>(smem_raw);
  const int tid = threadIdx.x, col = blockIdx.x * kCombineCols + tid % kCombineCols;
  const int r0 = kCombineRows * (tid / kCombineCols), bh = blockIdx.y;
  float acc[kCombineRows];
#pragma unroll
  for (int i = 0; i < kCombineRows; ++i)
    acc[i] = 0.f;
  for (int step = 0; step < Z; ++step) {
    const int z = reverse ? Z - 1 - step : step;
    const size_t at = (size_t(bh) * Z + z) * kD * kD;
#pragma unroll
    for (int i = 0; i < kCombineRows; ++i)
      seg_in[at + (r0 + i) * kD + col] = acc[i];
    if (step + 1 == Z)
      break;
    __syncthreads();    // every thread is done reading the previous step's t and s
    bool moves = false; // T != 0
    for (int e = tid; e < kD * kD / 4; e += kCombineThreads) {
      const float4 t = reinterpret_cast<const float4*>(ws.seg_move + at)[e];
      moves |= t.x != 0.f || t.y != 0.f || t.z != 0.f || t.w != 0.f;
      reinterpret_cast<float4*>(sm.t)[e] = t;
    }
#pragma unroll
    for (int i = 0; i < kCombineRows; ++i) {
      sm.s[(r0 + i) * kCombineCols + tid % kCombineCols] = acc[i];
      acc[i] = ws.seg_end[at + (r0 + i) * kD + col];
    }
    // T = 0 wherever a sequence start or the gate horizon cut what enters the segment (at the
    // bench's gates, every segment): the state is E alone, and the product is skipped.
    if (!__syncthreads_or(moves))
      continue;
    for (int k = 0; k < kD; k += 4) {
      float x[4];
#pragma unroll
      for (int j = 0; j < 4; ++j)
        x[j] = sm.s[(k + j) * kCombineCols + tid % kCombineCols];
#pragma unroll
      for (int i = 0; i < kCombineRows; ++i) {
        const float4 t = *reinterpret_cast<const float4*>(sm.t + (r0 + i) * kD + k);
        acc[i] = fmaf(t.x, x[0], acc[i]);
        acc[i] = fmaf(t.y, x[1], acc[i]);
        acc[i] = fmaf(t.z, x[2], acc[i]);
        acc[i] = fmaf(t.w, x[3], acc[i]);
      }
    }
  }
}

} // namespace

std::string launch_combine_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws, bool reverse,
                                cudaStream_t st) {
  QR_CUDA_TRY(cudaFuncSetAttribute(combine_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(sizeof(CombineSmem))));
  combine_kernel<<<dim3(kD / kCombineCols, geo.B * geo.Hv), kCombineThreads, sizeof(CombineSmem),
                   st>>>(ws, sg.groups, reverse, reverse ? ws.seg_in : ws.seg_fwd_in);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

std::string launch_seg_fwd_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, const float* h0, cudaStream_t st) {
  QR_CUDA_TRY(cudaFuncSetAttribute(seg_fwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(sizeof(SegFwdSmem))));
  seg_fwd_kernel<<<dim3(1, geo.B * geo.Hv, sg.groups), kT, sizeof(SegFwdSmem), st>>>(geo, ws, in,
                                                                                     h0);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

std::string launch_seg_bwd_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                cudaStream_t st) {
  QR_CUDA_TRY(cudaFuncSetAttribute(seg_bwd_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                                   int(sizeof(SegBwdSmem))));
  seg_bwd_kernel<<<dim3(1, geo.B * geo.Hv, sg.groups), kT, sizeof(SegBwdSmem), st>>>(
      geo, ws, in.beta, d_o, dht);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace qr::gdn::fused
