// Chunked GDN backend: the kernel launchers shared between chunked.cu and the kernel files.
//
// Forward:  prep (WY transform per chunk) -> fwd_scan<out> (sequential over chunks, fused output).
// Backward: prep -> fwd_scan<save> (states h and v_new) -> bwd_scan (sequential reverse: dh,
// dv_new)
//           -> bwd_intra (every gradient per chunk and key-head group, l2norm backward included).
#pragma once

#include "sm80/chunk_math.cuh"

namespace qr::gdn::chunked {

using namespace geometry;
using namespace sm80;

constexpr int kBV = 64; // value columns per CTA of the sequential scans

// Chunk-major scratch, per (b, value head) contiguous; token rows padded to NT * 64 (pad rows hold
// zeros, and G of pad rows equals G of the last real token).
struct Workspace {
  bf16* w;   // [B,Hv,Tp,Dk]  A diag(beta exp(G)) K
  bf16* u;   // [B,Hv,Tp,Dv]  A diag(beta) V
  float* G;  // [B,Hv,Tp]     in-chunk cumsum of g
  bf16* h;   // [B,Hv,NT,Dk,Dv] state entering each chunk (backward only)
  bf16* nu;  // [B,Hv,Tp,Dv]  v_new = u - w h (backward only)
  bf16* dh;  // [B,Hv,NT,Dk,Dv] gradient of the state leaving each chunk (backward only)
  bf16* dnu; // [B,Hv,Tp,Dv]  gradient of v_new (backward only)

  static Workspace carve(const Shape& s, bool bwd, void* base, size_t* bytes) {
    const size_t NT = (s.seq_len + kC - 1) / kC, Tp = NT * kC;
    const size_t heads = size_t(s.batch) * s.value_heads;
    Carver c{static_cast<char*>(base)};
    Workspace ws{};
    ws.w = c.take<bf16>(heads * Tp * kD);
    ws.u = c.take<bf16>(heads * Tp * kD);
    ws.G = c.take<float>(heads * Tp);
    if (bwd) {
      ws.h = c.take<bf16>(heads * NT * kD * kD);
      ws.nu = c.take<bf16>(heads * Tp * kD);
      ws.dh = c.take<bf16>(heads * NT * kD * kD);
      ws.dnu = c.take<bf16>(heads * Tp * kD);
    }
    if (bytes)
      *bytes = c.used;
    return ws;
  }
};

std::string launch_prep(const Geo& geo, const FwdInputs& in, const Workspace& ws, cudaStream_t st);
// Output mode writes o and the final state; save mode writes h and v_new to the workspace.
std::string launch_fwd_scan(const Geo& geo, const FwdInputs& in, const Workspace& ws, Ref<bf16> o,
                            float* ht, bool save, cudaStream_t st);
std::string launch_bwd_scan(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                            Ref<const bf16> d_o, const float* dht, float* dh0, cudaStream_t st);
std::string launch_bwd_intra(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                             Ref<const bf16> d_o, const BwdArgs& out, cudaStream_t st);

} // namespace qr::gdn::chunked
