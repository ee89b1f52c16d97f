// Fused GDN, the sequential stage on mma.sync (on sm_90 devices all three are the warp-specialised
// wgmma kernels of sm90/fused_scan.cu and sm90/fused_bwd_scan.cu; these run on sm_100a / 103a):
// three scans over the chunks of one (value head, BV value columns), one CTA of 8 warps each, the
// 128 x BV fp32 state slice in registers: warp w owns the 32 x BV/2 tile at rows 32 (w % 4),
// columns BV/2 (w / 4). Warp tiles are at least 32 wide in both directions where they can be: with
// mma.sync every warp reads its own A and B fragments from shared memory, and ldmatrix traffic, not
// tensor throughput, bounds these loops.
//
// The scans read the context (qn, kn, G, A: fused_prep.cu) and the inputs (v, beta, do) and form
// u, w and Ms themselves: v_new = u - w S = A diag(beta) (V - exp(G) .* (K S)), K S where w S was
// plus one 64 x 64 product over A's triangle, and w^T dv_new = K^T diag(beta exp(G)) A^T dv_new,
// for 335 MB of u, w and Ms (35B) neither written nor read. Two shared-memory stages: at the top of
// chunk n, once chunk n has landed and every warp has left chunk n - 1, the CTA issues chunk n +
// 1's cp.async copies into the stage n - 1 used.
//
// fwd_scan, per chunk with entering state S (W warps; halves of W/2 at 64 x BV/4 tiles, W = 8):
//   phase A  S -> bf16 smem; El = exp(Gl - G); A diag(beta) in place
//   phase B  first half: X = V - exp(G) .* (K S) to smem; second half: P = scale exp(G) .* (Q S),
//            kept in registers; then first half: v_new = A diag(beta) X, stored as is and as
//            El .* v_new; second half: Ms = scale lowerIncl(Q K^T .* D) to smem
//   phase C  S = exp(Gl) S + K^T (El .* v_new);  second half: o = P + Ms v_new, to global
// save_scan (the backward's h_n and v_new), on a 2 x 4 grid of 32 x BV/4 warp tiles:
//   phase A  S -> bf16 smem, then to h_n; A diag(beta) in place
//   phase B  X = V - exp(G) .* (K S) to smem; then v_new = A diag(beta) X (= u - w S; the
//            k-steps of A's triangle only), to global, and El .* v_new
//   phase C  S = exp(Gl) S + K^T (El .* v_new)
// bwd_scan, reverse, with dS the gradient of the state leaving the chunk:
//   phase A  dS -> bf16 smem, then to dh_n; Ms = scale lowerIncl(Q K^T .* D) from the raw Q; then
//            Q rows scaled in place by scale exp(G), A diag(beta exp(G)) in place
//   phase B  dv_new = Ms^T do + El .* (K dS) (2 x 4 grid of 32 x BV/4), to global; then
//            Y = -diag(beta exp(G)) A^T dv_new (= -w^T dv_new before its K^T), to smem
//   phase C  dS = exp(Gl) dS + (scale exp(G) Q)^T do + K^T Y
// Sequence boundaries (varlen; fused_algorithm.cuh): the forward scans save the final state after a
// sequence's last chunk and load the next sequence's initial state (or zero) after the chunk before
// its first; the backward scan saves the initial-state gradient after a first chunk and loads the
// final-state gradient after the chunk behind a last one. The chunk map is read one chunk ahead, so
// its loads overlap a chunk's compute. save_scan and the backward scan check the context's stamp
// first (the backward given a context reads its chunk map).
// Split rows (fused_split.cu, which fused.cu launches first): each CTA walks segment blockIdx.z and
// starts from the state fused_split.cu combined for it (backward: the gradient leaving it), except
// where its first (backward: last) slot starts (ends) a sequence.
// The tiles the scans hand on (h_n, v_new, dh_n, dv_new) go to global memory from their
// shared-memory copies in coalesced 16-byte pieces: stored straight from the mma fragments, as
// 4-byte pieces that each half-fill a sector, they made the backward scans L2-bound. (Hopper bulk
// copies, one per 256-byte row, measured 1.8x slower still: the copy engine's per-request cost
// exceeds a chunk's compute.)
#include "fused_launch.cuh"

namespace qr::gdn::fused {
namespace {

using sm80::store_acc_bf16;

template <int BV>
constexpr int kLdV = BV + 8; // padded row stride of BV-wide bf16 tiles

// Warp tiles of a scan CTA of W warps over a BV-column slice: the state (128 x BV) as a 4 x W/4
// grid of 32 x SN, and a 64 x BV phase-B product over a group of G warps as a G/4 x 4 grid of
// (256 / G) x BV/4 (G = 4: 64 x BV/4, 8: 32 x BV/4, 16: 16 x BV/4).
template <int BV, int W>
struct ScanTiles {
  static constexpr int SN = BV * 4 / W;
  int sr, sc; // this warp's state tile
  __device__ explicit ScanTiles(int warp) : sr(32 * (warp % 4)), sc(SN * (warp / 4)) {}
};
template <int BV, int G>
struct GroupTile {
  static constexpr int M = 256 / G, N = BV / 4;
  int r0, c0;
  __device__ explicit GroupTile(int w) : r0(M * (w / 4)), c0(N * (w % 4)) {}
};

// The warp's state tile from / to an fp32 [Dk, Dv] state (nullable) at `at` = its first element.
template <int SN>
__device__ __forceinline__ void load_state(Acc<32, SN>& S, const float* at) {
  S.zero();
  if (at)
    S.each([&](int r, int c, float& x) { x = at[r * kD + c]; });
}
template <int SN>
__device__ __forceinline__ void save_state(Acc<32, SN>& S, float* at) {
  if (at)
    S.each([&](int r, int c, float& x) { at[r * kD + c] = x; });
}

template <int BV>
struct FwdStage {
  bf16 q[kC * kLdD], k[kC * kLdD];
  bf16 a[kC * kLdC]; // A, then A diag(beta) in place
  bf16 v[kC * kLdV<BV>];
  float G[kC], beta[kC];
};
// 216 KB at BV = 128.
template <int BV>
struct FwdSmem {
  FwdStage<BV> st[2];
  bf16 s[kD * kLdV<BV>];        // entering state, bf16 operand copy
  bf16 x[kC * kLdV<BV>];        // V - exp(G) .* (K S)
  bf16 nu[kC * kLdV<BV>];       // v_new
  bf16 nus[kC * kLdV<BV>];      // v_new .* El
  bf16 ms[kC * kLdC];           // Ms
  float el[kC], gs[kC], gm[kC]; // exp(Gl - G), scale exp(G), exp(G)
};

template <int BV, int W>
__global__ void __launch_bounds__(32 * W, 1)
    fwd_scan_kernel(Geo geo, Workspace ws, FwdInputs in, const float* h0, Ref<bf16> o, float* ht,
                    const float* entering) {
  constexpr int ldv = kLdV<BV>, kT = 32 * W;
  using Tiles = ScanTiles<BV, W>;
  using Half = GroupTile<BV, W / 2>; // phase B: v_new on warps [0, W/2), P, Ms and o on the rest
  extern __shared__ __align__(16) char smem_raw[];
  FwdSmem<BV>& sm = *reinterpret_cast<FwdSmem<BV>*>(smem_raw);
  const int v0 = blockIdx.x * BV, bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int tid = threadIdx.x, warp = tid / 32;
  const Tiles st(warp);
  const int sr = st.sr, sc = st.sc;
  const bool first_half = warp < W / 2;
  const Half pb(warp % (W / 2));
  const int pr = pb.r0, pc = pb.c0;

  // Chunk n's tiles; its beta (registers until the chunk before it is done) from beta_of.
  auto issue = [&](int n, const Chunk& c) {
    FwdStage<BV>& s = sm.st[n & 1];
    const size_t row0 = vrow(geo, bh, n), krow0 = krow(geo, bh, n);
    load_tile_async<kC, kD, kT>(s.q, kLdD, ws.qn + krow0 * kD, kD, kC);
    load_tile_async<kC, kD, kT>(s.k, kLdD, ws.kn + krow0 * kD, kD, kC);
    load_tile_async<kC, kC, kT>(s.a, kLdC, ws.a + row0 * kC, kC, kC);
    load_tile_async<kC, BV, kT>(s.v, ldv, in.v.at(c.b, c.t0, h) + v0, in.v.st, c.len);
    load_G(s.G, ws.G + row0);
  };

  const int2 slots = scan_slots(geo, blockIdx.z, gridDim.z, entering != nullptr);
  if (slots.x >= slots.y)
    return;
  const int tile = sr * kD + v0 + sc;
  Chunk cur = chunk_at(geo, ws, b, slots.x);
  Acc<32, Tiles::SN> S;
  load_state(S, entry_state(geo, cur, h0, entering, bh, h, tile));
  issue(slots.x, cur);
  if (tid < kC)
    sm.st[slots.x & 1].beta[tid] = beta_of(in.beta, cur, h);
  cp_async_commit();
  for (int n = slots.x; n < slots.y; ++n) {
    cp_async_wait<0>();
    __syncthreads(); // chunk n has landed, and every warp is done with chunk n - 1
    const Chunk next = n + 1 < slots.y ? chunk_at(geo, ws, b, n + 1) : Chunk{};
    float beta_next = 0.f;
    if (n + 1 < slots.y) {
      issue(n + 1, next);
      if (tid < kC)
        beta_next = beta_of(in.beta, next, h);
    }
    cp_async_commit();
    FwdStage<BV>& s = sm.st[n & 1];
    const float Gl = s.G[kC - 1];
    store_acc_bf16(S, sm.s + sr * ldv + sc, ldv);
    if (tid < kC) {
      sm.el[tid] = exp_ftz(Gl - s.G[tid]);
      sm.gm[tid] = exp_ftz(s.G[tid]);
      sm.gs[tid] = geo.scale * sm.gm[tid];
    }
    scale_columns<kT>(s.a, s.beta);
    __syncthreads();

    Acc<Half::M, Half::N> X; // first half: K S, then v_new; second half: P, then o
    X.zero();
    if (first_half) { // X = V - exp(G) .* (K S)
      warp_mma<Lay::MK, Lay::KN, kD>(X, s.k, kLdD, sm.s, ldv, pr, pc);
      X.each_pair([&](int r, int c, float& x0, float& x1) {
        const int i = pr + r, j = pc + c;
        const float2 v = load_bf16x2(s.v + i * ldv + j);
        store_bf16x2(sm.x + i * ldv + j, v.x - sm.gm[i] * x0, v.y - sm.gm[i] * x1);
      });
    } else { // P = scale exp(G) .* (Q S)
      warp_mma<Lay::MK, Lay::KN, kD>(X, s.q, kLdD, sm.s, ldv, pr, pc);
      X.each([&](int r, int, float& x) { x *= sm.gs[pr + r]; });
    }
    __syncthreads();
    if (first_half) { // v_new = A diag(beta) X = u - w S
      lower_times(X, s.a, sm.x, ldv, pr, pc);
      X.each_pair([&](int r, int c, float& x0, float& x1) {
        const int i = pr + r, j = pc + c;
        store_bf16x2(sm.nu + i * ldv + j, x0, x1);
        store_bf16x2(sm.nus + i * ldv + j, x0 * sm.el[i], x1 * sm.el[i]);
      });
    } else {
      form_ms<W / 2>(sm.ms, s.q, s.k, s.G, geo.scale, warp - W / 2);
    }
    if (tid < kC)
      sm.st[(n + 1) & 1].beta[tid] = beta_next;
    __syncthreads();
    const float decay = exp_ftz(Gl);
    S.each([&](int, int, float& x) { x *= decay; });
    warp_mma<Lay::KM, Lay::KN, kC>(S, s.k, kLdD, sm.nus, ldv, sr, sc);
    if (!first_half) { // o = P + Ms v_new
      warp_mma<Lay::MK, Lay::KN, kC>(X, sm.ms, kLdC, sm.nu, ldv, pr, pc);
      store_acc_bf16(X, o.at(cur.b, cur.t0 + pr, h) + v0 + pc, o.st, cur.len - pr);
    }
    if (cur.last)
      save_state(S, state_of(ht, geo, cur, h, tile));
    if (next.first) // varlen: the next slot starts a sequence
      load_state(S, state_of(h0, geo, next, h, tile));
    cur = next;
  }
}

template <int BV>
struct SaveStage {
  bf16 k[kC * kLdD];
  bf16 v[kC * kLdV<BV>];
  bf16 a[kC * kLdC]; // A, then A diag(beta) in place
  float G[kC], beta[kC];
};
// 173 KB at BV = 128.
template <int BV>
struct SaveSmem {
  SaveStage<BV> st[2];
  bf16 s[kD * kLdV<BV>];
  bf16 x[kC * kLdV<BV>];   // V - exp(G) .* (K S)
  bf16 nu[kC * kLdV<BV>];  // v_new
  bf16 nus[kC * kLdV<BV>]; // v_new .* El
  float el[kC], gm[kC];
};

template <int BV>
__global__ void __launch_bounds__(kThreads, 1)
    save_scan_kernel(Geo geo, Workspace ws, FwdInputs in, const float* h0, const float* entering) {
  constexpr int ldv = kLdV<BV>;
  extern __shared__ __align__(16) char smem_raw[];
  SaveSmem<BV>& sm = *reinterpret_cast<SaveSmem<BV>*>(smem_raw);
  const int v0 = blockIdx.x * BV, bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int tid = threadIdx.x, warp = tid / 32;
  const int sr = 32 * (warp % 4), sc = (BV / 2) * (warp / 4); // state tile
  const int pr = 32 * (warp % 2), pc = (BV / 4) * (warp / 2); // phase-B tile: 32 x BV/4

  // Chunk n's tiles; its beta (registers until the chunk before it is done) from beta_of.
  auto issue = [&](int n, const Chunk& c) {
    SaveStage<BV>& s = sm.st[n & 1];
    const size_t row0 = vrow(geo, bh, n);
    load_tile_async<kC, kD, kThreads>(s.k, kLdD, ws.kn + krow(geo, bh, n) * kD, kD, kC);
    load_tile_async<kC, BV, kThreads>(s.v, ldv, in.v.at(c.b, c.t0, h) + v0, in.v.st, c.len);
    load_tile_async<kC, kC, kThreads>(s.a, kLdC, ws.a + row0 * kC, kC, kC);
    load_G(s.G, ws.G + row0);
  };

  const int2 slots = scan_slots(geo, blockIdx.z, gridDim.z, entering != nullptr);
  if (!stamp_ok(geo, ws) || slots.x >= slots.y)
    return;
  const int tile = sr * kD + v0 + sc;
  Chunk cur = chunk_at(geo, ws, b, slots.x);
  Acc<32, BV / 2> S;
  load_state(S, entry_state(geo, cur, h0, entering, bh, h, tile));
  issue(slots.x, cur);
  if (tid < kC)
    sm.st[slots.x & 1].beta[tid] = beta_of(in.beta, cur, h);
  cp_async_commit();
  for (int n = slots.x; n < slots.y; ++n) {
    cp_async_wait<0>();
    __syncthreads(); // chunk n has landed, and every warp is done with chunk n - 1
    const Chunk next = n + 1 < slots.y ? chunk_at(geo, ws, b, n + 1) : Chunk{};
    float beta_next = 0.f;
    if (n + 1 < slots.y) {
      issue(n + 1, next);
      if (tid < kC)
        beta_next = beta_of(in.beta, next, h);
    }
    cp_async_commit();
    SaveStage<BV>& s = sm.st[n & 1];
    const size_t row0 = vrow(geo, bh, n);
    const float Gl = s.G[kC - 1];
    store_acc_bf16(S, sm.s + sr * ldv + sc, ldv);
    if (tid < kC) {
      sm.el[tid] = exp_ftz(Gl - s.G[tid]);
      sm.gm[tid] = exp_ftz(s.G[tid]);
    }
    scale_columns<kThreads>(s.a, s.beta);
    __syncthreads();
    store_tile<kD, BV>(ws.h + (size_t(bh) * geo.NT + n) * kD * kD + v0, kD, sm.s, ldv);

    // v_new = u - w S = A diag(beta) (V - exp(G) .* (K S))
    Acc<32, BV / 4> X;
    X.zero();
    warp_mma<Lay::MK, Lay::KN, kD>(X, s.k, kLdD, sm.s, ldv, pr, pc);
    X.each_pair([&](int r, int c, float& x0, float& x1) {
      const int i = pr + r, j = pc + c;
      const float2 v = load_bf16x2(s.v + i * ldv + j);
      store_bf16x2(sm.x + i * ldv + j, v.x - sm.gm[i] * x0, v.y - sm.gm[i] * x1);
    });
    __syncthreads();
    lower_times(X, s.a, sm.x, ldv, pr, pc);
    X.each_pair([&](int r, int c, float& x0, float& x1) {
      const int i = pr + r, j = pc + c;
      store_bf16x2(sm.nu + i * ldv + j, x0, x1);
      store_bf16x2(sm.nus + i * ldv + j, x0 * sm.el[i], x1 * sm.el[i]);
    });
    if (tid < kC)
      sm.st[(n + 1) & 1].beta[tid] = beta_next;
    __syncthreads();
    store_tile<kC, BV>(ws.nu + row0 * kD + v0, kD, sm.nu, ldv);
    const float decay = exp_ftz(Gl);
    S.each([&](int, int, float& x) { x *= decay; });
    warp_mma<Lay::KM, Lay::KN, kC>(S, s.k, kLdD, sm.nus, ldv, sr, sc);
    if (next.first)
      load_state(S, state_of(h0, geo, next, h, tile));
    cur = next;
  }
}

template <int BV>
struct BwdStage {
  bf16 q[kC * kLdD], k[kC * kLdD];
  bf16 a[kC * kLdC]; // A, then A diag(beta exp(G)) in place
  bf16 d_o[kC * kLdV<BV>];
  float G[kC], beta[kC];
};
// 199 KB at BV = 128.
template <int BV>
struct BwdSmem {
  BwdStage<BV> st[2];
  bf16 ds[kD * kLdV<BV>];  // leaving-state gradient, bf16 operand copy
  bf16 dnu[kC * kLdV<BV>]; // dv_new
  bf16 y[kC * kLdV<BV>];   // -diag(beta exp(G)) A^T dv_new
  bf16 ms[kC * kLdC];      // Ms
  float el[kC], bg[kC];    // exp(Gl - G), beta exp(G)
};

template <int BV, int W>
__global__ void __launch_bounds__(32 * W, 1)
    bwd_scan_kernel(Geo geo, Workspace ws, Ref<const bf16> beta, Ref<const bf16> d_o,
                    const float* dht, float* dh0, const float* entering) {
  constexpr int ldv = kLdV<BV>, kT = 32 * W;
  using Tiles = ScanTiles<BV, W>;
  using All = GroupTile<BV, W>; // phase B on every warp
  static_assert(All::M == 32, "lower_times takes 32-row tiles");
  extern __shared__ __align__(16) char smem_raw[];
  BwdSmem<BV>& sm = *reinterpret_cast<BwdSmem<BV>*>(smem_raw);
  const int v0 = blockIdx.x * BV, bh = blockIdx.y, b = bh / geo.Hv, h = bh % geo.Hv;
  const int tid = threadIdx.x, warp = tid / 32;
  const Tiles st(warp);
  const int sr = st.sr, sc = st.sc; // state-gradient tile
  const All pb(warp);
  const int pr = pb.r0, pc = pb.c0;

  const int2 slots = scan_slots(geo, blockIdx.z, gridDim.z, entering != nullptr);
  if (!stamp_ok(geo, ws) || slots.x >= slots.y)
    return;
  auto issue = [&](int n, const Chunk& c) {
    BwdStage<BV>& s = sm.st[n & 1];
    const size_t row0 = vrow(geo, bh, n), krow0 = krow(geo, bh, n);
    load_tile_async<kC, kD, kT>(s.q, kLdD, ws.qn + krow0 * kD, kD, kC);
    load_tile_async<kC, kD, kT>(s.k, kLdD, ws.kn + krow0 * kD, kD, kC);
    load_tile_async<kC, kC, kT>(s.a, kLdC, ws.a + row0 * kC, kC, kC);
    load_tile_async<kC, BV, kT>(s.d_o, ldv, d_o.at(c.b, c.t0, h) + v0, d_o.st, c.len);
    load_G(s.G, ws.G + row0);
  };

  // cur: slot n; prev: slot n - 1 (its tiles go out at the top of chunk n, its beta at the end);
  // the slot before that is read one chunk ahead of its use.
  const int tile = sr * kD + v0 + sc;
  Chunk cur = chunk_at(geo, ws, b, slots.y - 1);
  Chunk prev = slots.y - 1 > slots.x ? chunk_at(geo, ws, b, slots.y - 2) : Chunk{};
  Acc<32, Tiles::SN> dS;
  load_state(dS, cur.last   ? state_of(dht, geo, cur, h, tile)
                 : entering ? segment_state(entering, bh, tile)
                            : nullptr);
  issue(slots.y - 1, cur);
  if (tid < kC)
    sm.st[(slots.y - 1) & 1].beta[tid] = beta_of(beta, cur, h);
  cp_async_commit();
  for (int n = slots.y - 1; n >= slots.x; --n) {
    cp_async_wait<0>();
    __syncthreads();
    float beta_prev = 0.f;
    if (n > slots.x) {
      issue(n - 1, prev);
      if (tid < kC)
        beta_prev = beta_of(beta, prev, h);
    }
    cp_async_commit();
    const Chunk before = n - 1 > slots.x ? chunk_at(geo, ws, b, n - 2) : Chunk{};
    BwdStage<BV>& s = sm.st[n & 1];
    const size_t row0 = vrow(geo, bh, n);
    const float Gl = s.G[kC - 1];
    store_acc_bf16(dS, sm.ds + sr * ldv + sc, ldv);
    if (tid < kC) {
      sm.el[tid] = exp_ftz(Gl - s.G[tid]);
      sm.bg[tid] = s.beta[tid] * exp_ftz(s.G[tid]);
    }
    form_ms<W>(sm.ms, s.q, s.k, s.G, geo.scale, warp); // from the raw Q, before it is scaled
    __syncthreads();
    scale_columns<kT>(s.a, sm.bg);
    scale_q_rows<kT>(s.q, s.G, geo.scale);
    store_tile<kD, BV, kT>(ws.dh + (size_t(bh) * geo.NT + n) * kD * kD + v0, kD, sm.ds, ldv);

    Acc<All::M, All::N> X;
    X.zero();
    warp_mma<Lay::MK, Lay::KN, kD>(X, s.k, kLdD, sm.ds, ldv, pr, pc);
    X.each([&](int r, int, float& x) { x *= sm.el[pr + r]; });
    warp_mma<Lay::KM, Lay::KN, kC>(X, sm.ms, kLdC, s.d_o, ldv, pr, pc);
    X.each_pair([&](int r, int c, float& x0, float& x1) {
      store_bf16x2(sm.dnu + (pr + r) * ldv + pc + c, x0, x1);
    });
    __syncthreads();
    store_tile<kC, BV, kT>(ws.dnu + row0 * kD + v0, kD, sm.dnu, ldv);
    // w^T dv_new = K^T diag(beta exp(G)) A^T dv_new
    lower_t_times(X, s.a, sm.dnu, ldv, pr, pc);
    X.each_pair([&](int r, int c, float& x0, float& x1) {
      store_bf16x2(sm.y + (pr + r) * ldv + pc + c, -x0, -x1);
    });
    if (tid < kC)
      sm.st[(n - 1) & 1].beta[tid] = beta_prev;
    __syncthreads();
    const float decay = exp_ftz(Gl);
    dS.each([&](int, int, float& x) { x *= decay; });
    warp_mma<Lay::KM, Lay::KN, kC>(dS, s.q, kLdD, s.d_o, ldv, sr, sc);
    warp_mma<Lay::KM, Lay::KN, kC>(dS, s.k, kLdD, sm.y, ldv, sr, sc);
    if (cur.first)
      save_state(dS, state_of(dh0, geo, cur, h, tile));
    if (n > slots.x && prev.last) // varlen: slot n - 1 ends a sequence
      load_state(dS, state_of(dht, geo, prev, h, tile));
    cur = prev;
    prev = before;
  }
}

template <class Kernel, class... Args>
std::string launch(Kernel kernel, size_t smem, const Geo& geo, ScanGrid sg, int threads,
                   cudaStream_t st, Args... args) {
  QR_CUDA_TRY(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(smem)));
  kernel<<<dim3(kD / sg.bv, geo.B * geo.Hv, sg.groups), threads, smem, st>>>(geo, args...);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

} // namespace

// Warps per scan CTA: the forward scan takes 16 for 64 columns (at the 397B shape: 256 against 280
// us with its saves) and 8 for 128, where the registers allow no more; the backward scan keeps 8
// (248 against 233 us with 16 at 64 columns).
std::string launch_fwd_scan_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, const float* h0, Ref<bf16> o, float* ht,
                                 const float* entering, cudaStream_t st) {
  return sg.bv == 128 ? launch(fwd_scan_kernel<128, 8>, sizeof(FwdSmem<128>), geo, sg, 256, st, ws,
                               in, h0, o, ht, entering)
                      : launch(fwd_scan_kernel<64, 16>, sizeof(FwdSmem<64>), geo, sg, 512, st, ws,
                               in, h0, o, ht, entering);
}

std::string launch_save_scan_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                  const FwdInputs& in, const float* h0, const float* entering,
                                  cudaStream_t st) {
  return sg.bv == 128 ? launch(save_scan_kernel<128>, sizeof(SaveSmem<128>), geo, sg, kThreads, st,
                               ws, in, h0, entering)
                      : launch(save_scan_kernel<64>, sizeof(SaveSmem<64>), geo, sg, kThreads, st,
                               ws, in, h0, entering);
}

std::string launch_bwd_scan_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                 float* dh0, const float* entering, cudaStream_t st) {
  return sg.bv == 128 ? launch(bwd_scan_kernel<128, 8>, sizeof(BwdSmem<128>), geo, sg, 256, st, ws,
                               in.beta, d_o, dht, dh0, entering)
                      : launch(bwd_scan_kernel<64, 8>, sizeof(BwdSmem<64>), geo, sg, 256, st, ws,
                               in.beta, d_o, dht, dh0, entering);
}

} // namespace qr::gdn::fused
