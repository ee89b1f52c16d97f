// The fused backend's workspace and the context a training forward leaves for the backward
// (FLA's set): where each tensor lies (Workspace::carve, the one place that sizes them), and the
// stamp the backward checks before it reads the context.
#pragma once

#include "dispatch.h"
#include "geometry.cuh"

namespace qr::gdn::fused {

using namespace geometry;

// The stamp a training forward leaves at the start of the context, which the backward checks.
constexpr int kStampWords = 12;
constexpr int kStampMagic = 0x47444e32; // "GDN2": the context of FLA's set
__device__ __forceinline__ void make_stamp(const Geo& g, int (&w)[kStampWords]) {
  const int v[kStampWords] = {kStampMagic, g.B, g.T,  g.Hk,    g.Hv,      kD,
                              kD,          g.N, g.NT, g.group, int(g.l2), __float_as_int(g.scale)};
  for (int i = 0; i < kStampWords; ++i)
    w[i] = v[i];
}

// The split's segments of a shape (dispatch.h): the workspace holds their states.
inline int split_segments(const Shape& s) {
  return split_segments(s.batch, s.value_heads, chunk_slots(s));
}

// Chunk-major scratch. Per-value-head tensors are [B, Hv, NT, ...], per-key-head ones
// [B, Hk, NT, ...]; token rows are padded to NT * 64 (pad rows hold zeros). The fields marked
// "context" are what a training forward leaves for the backward (saved_bytes), FLA's set: given a
// saved buffer they live there, else in the workspace. The rest is scratch of the pass that forms
// it; the backward re-forms h, v_new (save_scan). No kernel stores u, w or Ms. The
// workspace starts with the status word (common.cuh), the context with its stamp.
struct Workspace {
  unsigned* status; // workspace: the input checks' status bits
  int* ready;       // [B,Hv,NT] + 1 backward: the pipeline's chunk counts and item queue (Pipeline)
  int* stamp;       // [kStampWords] context: shape and options of the forward that wrote it
  int2* chunks;     // [NT]          context: the varlen chunk map (varlen only)
  bf16* qn;         // [B,Hk,Tp,D]     context: normalised q
  bf16* kn;         // [B,Hk,Tp,D]     context: normalised k
  float* rq; // [B,Hk,Tp]       context: 1 / sqrt(|q|^2 + eps), 1 without l2norm (not inference)
  float* rk; // [B,Hk,Tp]       context: likewise for k (not inference)
  float* G;  // [B,Hv,Tp]       context: in-chunk cumsum of g
  bf16* a;   // [B,Hv,NT,C,C]   context: A = (I + L)^-1 (inference: workspace)
  bf16* h;   // [B,Hv,NT,Dk,Dv] state entering each chunk (backward only)
  bf16* nu;  // [B,Hv,Tp,Dv]    v_new (backward only)
  bf16* dh;  // [B,Hv,NT,Dk,Dv] gradient of the state leaving each chunk (backward only)
  bf16* dnu; // [B,Hv,Tp,Dv]    gradient of v_new (backward only)
  // Split scans only (split_segments > 1), per (b, value head, segment):
  float* seg_end;  // [B,Hv,Z,Dk,Dv] its end state from zero (bwd: its entering gradient)
  float* seg_move; // [B,Hv,Z,Dk,Dk] its transition (bwd: the transposed one)
  float* seg_in;   // [B,Hv,Z,Dk,Dv] bwd: the true gradient leaving it
  // [B,Hv,Z,Dk,Dv] context (not inference): the true state entering it, the forward's combine;
  // the backward's save_scan starts from it instead of running seg_fwd and the combine again
  float* seg_fwd_in;

  // The workspace of a forward (inference when saved is null, else training) or a backward
  // (self-contained when saved is null). With null bases it only counts: *ws_bytes gets the
  // workspace's size and *ctx_bytes the context's.
  static Workspace carve(const Shape& s, Pass p, void* base, const void* saved, size_t* ws_bytes,
                         size_t* ctx_bytes = nullptr) {
    const size_t NT = chunk_slots(s), Tp = NT * kC;
    const size_t vh = size_t(s.batch) * s.value_heads, kh = size_t(s.batch) * s.key_heads;
    const bool bwd = p == Pass::bwd, inference = !bwd && !saved && !ctx_bytes;
    Carver wc{static_cast<char*>(base)};
    Carver cc{static_cast<char*>(const_cast<void*>(saved))};
    Carver& c = saved || ctx_bytes ? cc : wc; // where the context goes
    Workspace ws{};
    ws.status = wc.take<unsigned>(kStatusBytes / sizeof(unsigned));
    // right after the status word (one granule), so that one memset clears both (fused.cu)
    ws.ready = bwd ? wc.take<int>(vh * NT + 1) : nullptr;
    ws.stamp = c.take<int>(kStampWords);
    ws.chunks = s.varlen() ? c.take<int2>(NT) : nullptr;
    ws.qn = c.take<bf16>(kh * Tp * kD);
    ws.kn = c.take<bf16>(kh * Tp * kD);
    ws.G = c.take<float>(vh * Tp);
    if (!inference) {
      ws.rq = c.take<float>(kh * Tp);
      ws.rk = c.take<float>(kh * Tp);
    }
    ws.a = c.take<bf16>(vh * Tp * kC);
    if (bwd) {
      ws.h = wc.take<bf16>(vh * NT * kD * kD);
      ws.nu = wc.take<bf16>(vh * Tp * kD);
      ws.dh = wc.take<bf16>(vh * NT * kD * kD);
      ws.dnu = wc.take<bf16>(vh * Tp * kD);
    }
    if (const size_t z = split_segments(s); z > 1) {
      ws.seg_end = wc.take<float>(vh * z * kD * kD);
      ws.seg_move = wc.take<float>(vh * z * kD * kD);
      ws.seg_in = bwd ? wc.take<float>(vh * z * kD * kD) : nullptr;
      ws.seg_fwd_in = c.take<float>(vh * z * kD * kD);
    }
    if (ws_bytes)
      *ws_bytes = wc.used;
    if (ctx_bytes)
      *ctx_bytes = cc.used;
    return ws;
  }
};

// Whether the context's stamp matches this geometry; else flags the status (all threads of the
// CTA call it and get the same answer).
__device__ __forceinline__ bool stamp_ok(const Geo& g, const Workspace& ws) {
  int want[kStampWords];
  make_stamp(g, want);
  bool bad = false, absent = false;
  if (threadIdx.x < kStampWords) {
    const int got = ws.stamp[threadIdx.x];
    bad = got != want[threadIdx.x];
    absent = threadIdx.x == 0 && bad;
  }
  absent = __syncthreads_or(absent);
  bad = __syncthreads_or(bad);
  if (bad && threadIdx.x == 0)
    atomicOr(ws.status, absent ? kNoContext : kBadContext);
  return !bad;
}

} // namespace qr::gdn::fused
