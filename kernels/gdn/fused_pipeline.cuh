// The fused backward's pipeline on sm_90 (dispatch.h, BwdPath::pipelined): the chunk counts the
// scans publish and bwd_intra waits for, and programmatic dependent launch.
#pragma once

#include "common.cuh"

#include <utility>

namespace qr::gdn::fused {

// The backward's pipeline on Hopper (fused.cu, run_bwd): save_scan and bwd_scan each count a chunk
// in ready[bh NT + n] once its tiles are in the workspace (h_n and v_new; dh_n and dv_new), one
// count per CTA, and bwd_intra_ws, launched behind them (programmatic dependent launch, so that
// every scan CTA is resident before any of its CTAs), takes its items from a queue in the order
// the backward scan finishes them and waits for each item's counts before loading those tiles. So
// its CTAs start on the SMs the scans leave idle: at the 397B shape the 64 the shorter save_scan
// frees while bwd_scan still runs. Null ready: no pipeline (the kernels run one after another).
struct Pipeline {
  int* ready = nullptr; // ws.ready: the counts, then the item queue's next ticket (at [B Hv NT])
  int expected = 0;     // the counts a chunk's tiles take: both scans' CTAs per (batch, value head)
};

// Counts a chunk in (release: the tiles' stores are visible to whoever reads the count); by one
// thread, after a barrier of every thread that stored them. The scans count in batches of
// kCountBatch chunks (and at the walk's end): a release waits for the counting warp's stores,
// about a microsecond, which taken per chunk made bwd_scan a fifth slower (H100, 35B: 321 -> 388
// us under ncu); bwd_intra's items wait at most a batch longer.
constexpr int kCountBatch = 8;
__device__ __forceinline__ void count_written(int* at) {
  asm volatile("red.release.gpu.global.add.s32 [%0], 1;\n" ::"l"(at) : "memory");
}

// Waits until *at reaches `want` (acquire); by one thread, whose barrier with the others then
// publishes the tiles to them. Bounded (about 2^24 polls, seconds): past it, a pipeline fault is
// flagged in the status word (kStalled) and false returned, so that a bug fails the run instead of
// hanging the GPU; once flagged, every other wait of the run gives up within 1024 polls.
__device__ __forceinline__ bool wait_written(const int* at, int want, unsigned* status) {
  for (int polls = 0; polls < 1 << 24; ++polls) {
    int got;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];\n" : "=r"(got) : "l"(at) : "memory");
    if (got >= want)
      return true;
    if (polls % 1024 == 1023 && (*static_cast<volatile unsigned*>(status) & kStalled))
      return false;
    __nanosleep(256);
  }
  atomicOr(status, kStalled);
  return false;
}

// Programmatic dependent launch: a primary lets its dependent's CTAs be scheduled once every CTA
// of it has run launch_dependents; the dependent's wait_primary returns once the primary has
// completed and its stores are visible. Both are no-ops in a kernel launched without it.
__device__ __forceinline__ void launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
}
__device__ __forceinline__ void wait_primary() {
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
}

// kernel<<<grid, block, smem, st>>>(args...), as a programmatic dependent of the stream's previous
// kernel when `dependent` (its CTAs may start once every CTA of that one ran launch_dependents).
template <class... Params, class... Args>
cudaError_t launch_maybe_dependent(bool dependent, void (*kernel)(Params...), dim3 grid, dim3 block,
                                   size_t smem, cudaStream_t st, Args&&... args) {
  cudaLaunchAttribute attr{};
  attr.id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr.val.programmaticStreamSerializationAllowed = 1;
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cfg.dynamicSmemBytes = smem;
  cfg.stream = st;
  cfg.attrs = dependent ? &attr : nullptr;
  cfg.numAttrs = dependent ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, std::forward<Args>(args)...);
}

} // namespace qr::gdn::fused
