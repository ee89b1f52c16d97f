// Chunked GDN backend: the kernel launchers shared between chunked.cu and the kernel files.
//
// Forward:  prep (WY transform per chunk) -> fwd_scan<out> (sequential over chunks, fused output).
// Backward: prep -> fwd_scan<save> (states h and v_new) -> bwd_scan (sequential reverse: dh,
// dv_new)
//           -> bwd_intra (every gradient per chunk and key-head group, l2norm backward included).
#pragma once

#include "chunked_common.cuh"

namespace qr::gdn::chunked {

struct FwdInputs {
  Ref<const bf16> q, k, v, beta;
  Ref<const float> g;
  const float* h0; // nullable
};

inline FwdInputs make_inputs(const TensorRef<const bf16_t>& q, const TensorRef<const bf16_t>& k,
                             const TensorRef<const bf16_t>& v, const TensorRef<const bf16_t>& beta,
                             const TensorRef<const float>& g, const float* h0) {
  return {ref<const bf16>(q),    ref<const bf16>(k),  ref<const bf16>(v),
          ref<const bf16>(beta), ref<const float>(g), h0};
}

std::string launch_prep(const Geo& geo, const FwdInputs& in, const Workspace& ws, cudaStream_t st);
// Output mode writes o and the final state; save mode writes h and v_new to the workspace.
std::string launch_fwd_scan(const Geo& geo, const FwdInputs& in, const Workspace& ws, Ref<bf16> o,
                            float* ht, bool save, cudaStream_t st);
std::string launch_bwd_scan(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                            Ref<const bf16> d_o, const float* dht, float* dh0, cudaStream_t st);
std::string launch_bwd_intra(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                             Ref<const bf16> d_o, const BwdArgs& out, cudaStream_t st);

} // namespace qr::gdn::chunked
