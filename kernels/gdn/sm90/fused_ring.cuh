// What the Hopper scans (fused_scan.cu, fused_bwd_scan.cu; sm_90a) share: the
// stage a producer warpgroup fills per chunk and their ring, the producer itself, the warpgroups'
// register split, the named-barrier ids of their hand-offs, and the Ms epilogue; and the Fill
// (an mbarrier pair per single buffer) of fused_bwd_intra.cu.
//
// A CTA has NS state warpgroups (one per 64 value columns, warpgroups 0 .. NS - 1), one side
// warpgroup (NS: the forward's output or store warpgroup, the backward's side warpgroup) and the
// producer (NS + 1).
#pragma once

#include "fused_launch.cuh"
#include "wgmma.cuh"

namespace qr::gdn::fused::ring {

using sm90::Frag;
using sm90::MBarrier;
using sm90::Tile;

// Stages in the ring: two at NS = 2 (the larger tiles), three at NS = 1.
template <int NS>
constexpr int kStages = NS == 2 ? 2 : 3;

// Chunk n's tiles: q (raw; the backward's side warpgroup scales it in place), k, A, the 64 NS
// columns of v (forward) or do (backward), G, beta, and the chunk's map entry.
template <int NS>
struct alignas(1024) Stage {
  bf16 q[kC * kD], k[kC * kD], a[kC * kC], x[kC * 64 * NS];
  float G[kC], beta[kC];
  Chunk chunk;
};

// The ring of stages, step i of a walk in stage i % kStages: full[stage] completes when the
// producer's 128 threads have landed a step's tiles, empty[stage] when the `readers` consumer
// warpgroups are done with them.
template <int NS>
struct Ring {
  static constexpr int kSize = kStages<NS>;
  Stage<NS> st[kSize];
  MBarrier full[kSize], empty[kSize];

  // By one thread, before a __syncthreads.
  __device__ __forceinline__ void init(int readers) {
    for (int i = 0; i < kSize; ++i) {
      full[i].init(128);
      empty[i].init(128 * readers);
    }
  }
  __device__ __forceinline__ Stage<NS>& operator[](int i) { return st[i % kSize]; }
  // Step i's stage, once its tiles are in.
  __device__ __forceinline__ Stage<NS>& landed(int i) {
    full[i % kSize].wait((i / kSize) & 1);
    return st[i % kSize];
  }
  // This thread is done with step i's stage.
  __device__ __forceinline__ void release(int i) { empty[i % kSize].arrive(); }
};

// Registers per thread by role (setmaxnreg): the producer needs few; a state slice (128 x 64
// fp32) and a 64 x 64 product, or the side's two products, take 96-128 of the consumers'.
constexpr int kProducerRegs = 56;
template <int NS>
constexpr int kConsumerRegs = NS == 2 ? 152 : 224;
static_assert(kProducerRegs + 3 * kConsumerRegs<2> <= 65536 / 128 &&
              kProducerRegs + 2 * kConsumerRegs<1> <= 65536 / 128);

// Named barrier ids: slice s's four hand-offs with the side warpgroup at 1 + 4 s + k (k < 4, each
// kernel names its own), then one per warpgroup for its own tiles (9 + wg).
__device__ __forceinline__ int bar_id(int s, int k) {
  return 1 + 4 * s + k;
}
__device__ __forceinline__ int bar_group(int wg) {
  return 9 + wg;
}
constexpr int kPair = 256; // a state warpgroup and the side warpgroup
constexpr int kGroup = 128;

#if QR_GDN_WGMMA
// Waits for every product in flight, then releases all of the slices' accumulators.
template <int NS>
__device__ __forceinline__ void wait_all(Frag (&P)[NS]) {
  if constexpr (NS == 2)
    sm90::mma_wait(P[0], P[1]);
  else
    sm90::mma_wait(P[0]);
}

// What the producer loads: the raw q (or not), and the value-side tile from x (v or do), zero
// instead when zero_x (the split's transition walks V = 0).
struct Loads {
  bool q, zero_x;
  Ref<const bf16> x, beta;
};

// The producer warpgroup: the walk's steps i = 0 .. chunks - 1 (slot first + i, or first - i when
// reverse) into stage i % kStages, each after the consumers released the stage's last use.
template <int NS>
__device__ __forceinline__ void produce(const Geo& geo, const Workspace& ws, const Loads& l,
                                        Ring<NS>& ring, int first, int chunks, bool reverse, int bh,
                                        int v0) {
  constexpr int kSize = Ring<NS>::kSize;
  sm90::set_max_registers<kProducerRegs, false>();
  const int id = threadIdx.x % 128, b = bh / geo.Hv, h = bh % geo.Hv;
  for (int i = 0; i < chunks; ++i) {
    const int n = reverse ? first - i : first + i;
    if (i >= kSize) // the consumers' release of step i - kSize
      ring.empty[i % kSize].wait((i / kSize + 1) & 1);
    Stage<NS>& s = ring[i];
    const Chunk c = chunk_at(geo, ws, b, n);
    const size_t row0 = vrow(geo, bh, n), krow0 = krow(geo, bh, n);
    if (l.q)
      sm90::load_tile<128>(Tile<kC, kD>{s.q}, ws.qn + krow0 * kD, kD, kC, id);
    sm90::load_tile<128>(Tile<kC, kD>{s.k}, ws.kn + krow0 * kD, kD, kC, id);
    sm90::load_tile<128>(Tile<kC, kC>{s.a}, ws.a + row0 * kC, kC, kC, id);
    sm90::load_tile<128>(Tile<kC, 64 * NS>{s.x}, l.x.at(c.b, c.t0, h) + v0, l.x.st,
                         l.zero_x ? 0 : c.len, id);
    if (id < kC / 4)
      cp_async16(s.G + 4 * id, ws.G + row0 + 4 * id, true);
    cp_async_commit();
    const float beta =
        id < c.len && id < kC ? __bfloat162float(*l.beta.at(c.b, c.t0 + id, h)) : 0.f;
    if (id == 0)
      s.chunk = c;
    cp_async_wait<0>();
    if (id < kC)
      s.beta[id] = beta;
    sm90::fence_async();
    ring.full[i % kSize].arrive();
  }
}

// Ms = scale lowerIncl(Q K^T .* D) into ms from the warpgroup's accumulator M = Q K^T and the
// chunk's G.
__device__ __forceinline__ void store_ms(Frag& M, Tile<kC, kC> ms, const float* G, float scale) {
  float gi[2]; // per fragment row: G
#pragma unroll
  for (int hi = 0; hi < 2; ++hi)
    gi[hi] = G[sm90::frag_row(hi)];
  sm90::store_frag(ms, 0, M, [&](int hi, int r, int c, float x0, float x1) {
    const float2 gj = *reinterpret_cast<const float2*>(G + c);
    return make_float2(r >= c ? scale * x0 * exp_ftz(gi[hi] - gj.x) : 0.f,
                       r >= c + 1 ? scale * x1 * exp_ftz(gi[hi] - gj.y) : 0.f);
  });
}
#endif

} // namespace qr::gdn::fused::ring

namespace qr::gdn::fused {

// A buffer a producer warpgroup fills again and again: its k-th fill (k = 0, 1, ...) completes
// phase k of `full` (the producer's 128 threads, each through cp.async.mbarrier.arrive once its
// copies have landed, or a plain arrive after its stores) and is released by phase k of `empty`
// (its readers' threads, each once it and its products are done reading; the count is the
// kernel's).
struct Fill {
  sm90::MBarrier full, empty;
};

#if QR_GDN_WGMMA
// The producer's side of a Fill: wait until fill k - 1 is released; after the copies of fill k
// are issued, have its full barrier count this thread in once they land.
__device__ __forceinline__ void claim(Fill& f, int k) {
  if (k > 0)
    f.empty.wait((k - 1) & 1);
}
__device__ __forceinline__ void commit_async(Fill& f) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(smem_addr(&f.full))
               : "memory");
}
// The consumers' side: wait for fill k, then make it visible to wgmma (the copies land through
// the generic proxy, wgmma reads through the async one); release when done with it.
__device__ __forceinline__ void landed(Fill& f, int k) {
  f.full.wait(k & 1);
  sm90::fence_async();
}
__device__ __forceinline__ void release(Fill& f) {
  f.empty.arrive();
}
#endif

} // namespace qr::gdn::fused
