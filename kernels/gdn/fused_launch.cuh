// The fused backend's kernel launchers, one per kernel: sm80/ (mma.sync and cp.async; every
// target) and sm90/ (wgmma, warp-specialised on mbarrier rings and setmaxnreg; sm_90a only). Each
// launches its kernel with the grid it is given and decides nothing: fused.cu runs the kernels
// that dispatch.h picks (the architecture, the split, the backward's path), in order.
#pragma once

#include "dispatch.h"
#include "fused_algorithm.cuh"
#include "fused_pipeline.cuh"

namespace qr::gdn::fused {

// What prep forms (sm80/fused_prep.cu): qn, kn, G, A from the inputs (inference); also the rest of
// the context, the rstd of q and k and the stamp (a training forward, the self-contained backward).
enum class Prep { inference, context };
std::string launch_prep_sm80(const Geo& geo, const FwdInputs& in, const Workspace& ws, Prep mode,
                             cudaStream_t st);

// The scans (sm80/fused_scan.cu; sm90/fused_scan.cu, sm90/fused_bwd_scan.cu), over the slots of
// scan_grid's CTAs; a split row's segment CTAs start from `entering`, the combine's states
// (forward) or gradients (backward), where their first slot continues a sequence.
//   fwd_scan: o and the final states.
std::string launch_fwd_scan_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, const float* h0, Ref<bf16> o, float* ht,
                                 const float* entering, cudaStream_t st);
std::string launch_fwd_scan_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, const float* h0, Ref<bf16> o, float* ht,
                                 const float* entering, cudaStream_t st);
//   save_scan: h_n and v_new for the backward; on sm_90 counting each chunk into pipe.ready when
//   given (BwdPath::pipelined).
std::string launch_save_scan_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                  const FwdInputs& in, const float* h0, const float* entering,
                                  cudaStream_t st);
std::string launch_save_scan_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                  const FwdInputs& in, const float* h0, const float* entering,
                                  Pipeline pipe, cudaStream_t st);
//   bwd_scan: dh_n, dv_new and the initial-state gradients; on sm_90 with pipe.ready counting each
//   chunk there and, when `dependent`, launched as save_scan's programmatic dependent.
std::string launch_bwd_scan_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                 float* dh0, const float* entering, cudaStream_t st);
std::string launch_bwd_scan_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                 const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                 float* dh0, const float* entering, Pipeline pipe, bool dependent,
                                 cudaStream_t st);

// The split (sm80/fused_split.cu): each segment's end state E and transition T from its start
// (seg_fwd; seg_bwd: the reverse recurrence's dE and T^bwd, from do and the final-state gradient;
// on sm_90 the same walks in sm90/fused_scan.cu and sm90/fused_bwd_scan.cu), then the combine into
// ws.seg_fwd_in (reverse: ws.seg_in), which the scans start their segments from.
std::string launch_seg_fwd_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, const float* h0, cudaStream_t st);
std::string launch_seg_fwd_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, const float* h0, cudaStream_t st);
std::string launch_seg_bwd_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                cudaStream_t st);
std::string launch_seg_bwd_sm90(const Geo& geo, ScanGrid sg, const Workspace& ws,
                                const FwdInputs& in, Ref<const bf16> d_o, const float* dht,
                                cudaStream_t st);
std::string launch_combine_sm80(const Geo& geo, ScanGrid sg, const Workspace& ws, bool reverse,
                                cudaStream_t st);

// bwd_intra, every gradient from the scans' tiles (sm80/fused_bwd_intra.cu; sm90/fused_bwd_intra.cu
// warp-specialised on wgmma, with pipe.ready launched as bwd_scan's dependent and fed by the
// pipeline's queue).
std::string launch_bwd_intra_sm80(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                                  Ref<const bf16> d_o, const BwdArgs& out, cudaStream_t st);
std::string launch_bwd_intra_sm90(const Geo& geo, const FwdInputs& in, const Workspace& ws,
                                  Ref<const bf16> d_o, const BwdArgs& out, Pipeline pipe,
                                  cudaStream_t st);

} // namespace qr::gdn::fused
