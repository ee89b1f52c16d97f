// The `fused` backend (fused_algorithm.cuh states the algorithm): it runs the kernels dispatch.h
// picks, in order, through the launchers of sm80/ and sm90/ (fused_launch.cuh). Forward: prep ->
// (split: seg_fwd -> combine) -> fwd_scan; a training forward's prep writes qn, kn, G, A and the
// rstd of q and k to the saved context (stamped with its shape and options, plus the chunk map
// when varlen): FLA's set. Backward: save_scan and bwd_scan (forming what they need from the
// context) -> bwd_intra, after prep forms the context when none is given; the backward kernels
// that read the context check its stamp first. Every run clears the workspace's status word
// first (input_error).
#include "fused_launch.cuh"

#include <cstdlib>
#include <map>
#include <mutex>

namespace qr::gdn {
namespace {

using namespace fused;

static_assert(kScanColumns == kD, "dispatch.h's scan rows are Dv wide");

// The device's SM count and the scans' grid and kernels there (dispatch.h).
std::string device_grid(const Geo& geo, int& sms, ScanGrid& sg) {
  int dev = 0, major = 0;
  QR_CUDA_TRY(cudaGetDevice(&dev));
  if (std::string e =
          cuda_error(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
      !e.empty())
    return e;
  QR_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  unsigned hopper = 0;
  if (std::string e = hopper_kernels(major, std::getenv("QR_GDN_HOPPER_SCANS"), hopper); !e.empty())
    return e;
  sg = scan_grid(geo.B, geo.Hv, geo.NT, geo.N, sms, hopper);
  return {};
}

// The status word and the pipeline's counts after it (Workspace::carve): one memset.
cudaError_t clear_status_and_ready(const Workspace& ws, const Geo& geo, cudaStream_t st) {
  if (reinterpret_cast<char*>(ws.ready) != reinterpret_cast<char*>(ws.status) + kStatusBytes)
    return cudaErrorInvalidValue; // the carve order changed
  const size_t ready = (size_t(geo.B) * geo.Hv * geo.NT + 1) * sizeof(int);
  return cudaMemsetAsync(ws.status, 0, kStatusBytes + ready, st);
}

// The split (sm80/fused_split.cu): every segment's end state and transition (seg_fwd, on sm_90
// its sm90/ form when picked), then the combine into ws.seg_fwd_in; backward likewise in reverse
// into ws.seg_in.
std::string split_fwd(const Geo& geo, ScanGrid sg, const Workspace& ws, const FwdInputs& in,
                      const float* h0, cudaStream_t st) {
  const std::string e = sg.hopper & kHopperSegFwd ? launch_seg_fwd_sm90(geo, sg, ws, in, h0, st)
                                                  : launch_seg_fwd_sm80(geo, sg, ws, in, h0, st);
  return e.empty() ? launch_combine_sm80(geo, sg, ws, false, st) : e;
}

std::string split_bwd(const Geo& geo, ScanGrid sg, const Workspace& ws, const FwdInputs& in,
                      Ref<const bf16> d_o, const float* dht, cudaStream_t st) {
  const std::string e = sg.hopper & kHopperSegBwd
                            ? launch_seg_bwd_sm90(geo, sg, ws, in, d_o, dht, st)
                            : launch_seg_bwd_sm80(geo, sg, ws, in, d_o, dht, st);
  return e.empty() ? launch_combine_sm80(geo, sg, ws, true, st) : e;
}

// The scans, each on the kernel the grid picks for it; a split row runs the split first, and its
// segment CTAs then start from the combine's states.
std::string fwd_scan(const Geo& geo, ScanGrid sg, const Workspace& ws, const FwdInputs& in,
                     const float* h0, Ref<bf16> o, float* ht, cudaStream_t st) {
  if (sg.split)
    if (std::string e = split_fwd(geo, sg, ws, in, h0, st); !e.empty())
      return e;
  const float* entering = sg.split ? ws.seg_fwd_in : nullptr;
  if (sg.hopper & kHopperFwd)
    return launch_fwd_scan_sm90(geo, sg, ws, in, h0, o, ht, entering, st);
  return launch_fwd_scan_sm80(geo, sg, ws, in, h0, o, ht, entering, st);
}

// states_saved: a split row's entering states are in the context already (the backward given
// one). pipe: the backward's pipeline (BwdPath::pipelined, sm_90 kernels only).
std::string save_scan(const Geo& geo, ScanGrid sg, const Workspace& ws, const FwdInputs& in,
                      const float* h0, bool states_saved, Pipeline pipe, cudaStream_t st) {
  if (sg.split && !states_saved)
    if (std::string e = split_fwd(geo, sg, ws, in, h0, st); !e.empty())
      return e;
  const float* entering = sg.split ? ws.seg_fwd_in : nullptr;
  if (sg.hopper & kHopperSave)
    return launch_save_scan_sm90(geo, sg, ws, in, h0, entering, pipe, st);
  if (pipe.ready)
    return "fused: the backward's pipeline needs save_scan's Hopper kernel";
  return launch_save_scan_sm80(geo, sg, ws, in, h0, entering, st);
}

// In the pipeline bwd_scan is save_scan's dependent unless the split's passes come between them.
std::string bwd_scan(const Geo& geo, ScanGrid sg, const Workspace& ws, const FwdInputs& in,
                     Ref<const bf16> d_o, const float* dht, float* dh0, Pipeline pipe,
                     cudaStream_t st) {
  if (sg.split)
    if (std::string e = split_bwd(geo, sg, ws, in, d_o, dht, st); !e.empty())
      return e;
  const float* entering = sg.split ? ws.seg_in : nullptr;
  if (sg.hopper & kHopperBwd)
    return launch_bwd_scan_sm90(geo, sg, ws, in, d_o, dht, dh0, entering, pipe,
                                pipe.ready && !sg.split, st);
  if (pipe.ready)
    return "fused: the backward's pipeline needs bwd_scan's Hopper kernel";
  return launch_bwd_scan_sm80(geo, sg, ws, in, d_o, dht, dh0, entering, st);
}

// A second stream per device for save_scan beside bwd_scan, with the events that fork it from the
// caller's stream and join it back (a CUDA-graph capture follows both). Made on first use, never
// while the caller's stream is capturing (the backward then runs the scans in sequence); the
// lock keeps one backward's record-and-wait pairs together.
class SideStreams {
public:
  ~SideStreams() { // errors ignored: at exit the runtime may be gone already
    for (auto& [dev, s] : sides_) {
      cudaEventDestroy(s.fork);
      cudaEventDestroy(s.join);
      cudaStreamDestroy(s.stream);
    }
  }

  // Enqueues first(stream) beside second(side stream), both after what `stream` holds, and makes
  // `stream` wait for both; *paired = false when no side stream could be used (nothing enqueued).
  template <class First, class Second>
  std::string pair(cudaStream_t stream, First first, Second second, bool* paired) {
    *paired = false;
    int dev = 0;
    QR_CUDA_TRY(cudaGetDevice(&dev));
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = sides_.find(dev);
    if (it == sides_.end()) {
      cudaStreamCaptureStatus capturing = cudaStreamCaptureStatusNone;
      QR_CUDA_TRY(cudaStreamIsCapturing(stream, &capturing));
      if (capturing != cudaStreamCaptureStatusNone)
        return {};
      Side s{};
      QR_CUDA_TRY(cudaStreamCreateWithFlags(&s.stream, cudaStreamNonBlocking));
      QR_CUDA_TRY(cudaEventCreateWithFlags(&s.fork, cudaEventDisableTiming));
      QR_CUDA_TRY(cudaEventCreateWithFlags(&s.join, cudaEventDisableTiming));
      it = sides_.emplace(dev, s).first;
    }
    const Side& s = it->second;
    *paired = true;
    QR_CUDA_TRY(cudaEventRecord(s.fork, stream));
    QR_CUDA_TRY(cudaStreamWaitEvent(s.stream, s.fork, 0));
    const std::string e1 = second(s.stream);
    const std::string e2 = first(stream);
    QR_CUDA_TRY(cudaEventRecord(s.join, s.stream));      // joined even after an error, so that a
    QR_CUDA_TRY(cudaStreamWaitEvent(stream, s.join, 0)); // capture still ends cleanly
    return !e1.empty() ? e1 : e2;
  }

private:
  struct Side {
    cudaStream_t stream;
    cudaEvent_t fork, join;
  };
  std::mutex mutex_;
  std::map<int, Side> sides_;
};

std::string fused_shape_error(const Shape& s) {
  if (s.sequences >= 1 << 22) // the chunk map's 22 bits of sequence index
    return "fused: at most 4194303 sequences";
  return shape_error(s);
}

std::string args_error(const Shape& s, const int32_t* cu_seqlens) {
  if (std::string e = fused_shape_error(s); !e.empty())
    return e;
  return s.varlen() && !cu_seqlens ? "fused: varlen needs cu_seqlens" : std::string();
}

class Fused final : public Backend {
public:
  std::string name() const override { return "fused"; }

  std::string unsupported(const DeviceInfo& dev, const Shape& s) const override {
    if (std::string e = arch_error(dev); !e.empty())
      return e;
    // Up to 220 KB of shared memory per scan CTA: sm_90 and sm_100 have 227 KB.
    return dev.major < 9 ? "needs sm_90 or newer" : fused_shape_error(s);
  }

  std::string input_error(const void* workspace, Stream stream) const override {
    return read_status(name(), workspace, stream);
  }

  size_t workspace_bytes(const Shape& s, Pass p) const override {
    size_t bytes = 0; // without a saved context: the larger
    Workspace::carve(s, p, nullptr, nullptr, &bytes);
    return bytes;
  }

  size_t saved_bytes(const Shape& s) const override {
    size_t ws = 0, ctx = 0;
    Workspace::carve(s, Pass::fwd, nullptr, nullptr, &ws, &ctx);
    return ctx;
  }

  std::string run_fwd(const FwdArgs& a, void* workspace, Stream stream) const override {
    if (std::string e = args_error(a.shape, a.cu_seqlens); !e.empty())
      return e;
    if (!rows_aligned(a.q) || !rows_aligned(a.k) || !rows_aligned(a.v) || !rows_aligned(a.o))
      return "fused: q, k, v, o need 16-byte aligned rows";
    const Geo geo = make_geo(a.shape, a.opt, a.cu_seqlens);
    const Workspace ws = Workspace::carve(a.shape, Pass::fwd, workspace, a.saved, nullptr);
    QR_CUDA_TRY(clear_status(ws.status, stream));
    int sms = 0;
    ScanGrid sg{};
    if (std::string e = device_grid(geo, sms, sg); !e.empty())
      return e;
    const FwdInputs in = make_inputs(a.q, a.k, a.v, a.beta, a.g, a.initial_state);
    const Prep mode = a.saved ? Prep::context : Prep::inference;
    if (std::string e = launch_prep_sm80(geo, in, ws, mode, stream); !e.empty())
      return e;
    return fwd_scan(geo, sg, ws, in, a.initial_state, ref<bf16>(a.o), a.final_state, stream);
  }

  std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const override {
    if (std::string e = args_error(a.shape, a.cu_seqlens); !e.empty())
      return e;
    if (!rows_aligned(a.q) || !rows_aligned(a.k) || !rows_aligned(a.v) || !rows_aligned(a.d_o) ||
        !rows_aligned(a.dq) || !rows_aligned(a.dk) || !rows_aligned(a.dv))
      return "fused: q, k, v, do, dq, dk, dv need 16-byte aligned rows";
    const Geo geo = make_geo(a.shape, a.opt, a.cu_seqlens);
    const Workspace ws = Workspace::carve(a.shape, Pass::bwd, workspace, a.saved, nullptr);
    QR_CUDA_TRY(clear_status_and_ready(ws, geo, stream));
    int sms = 0;
    ScanGrid sg{};
    std::string e = device_grid(geo, sms, sg);
    if (!e.empty())
      return e;
    const BwdPlan plan = plan_bwd(geo.B, geo.Hv, sg, sms);
    const FwdInputs in = make_inputs(a.q, a.k, a.v, a.beta, a.g, a.initial_state);
    // the scans form what they need from the context: without one, prep forms it first
    if (!a.saved)
      if (e = launch_prep_sm80(geo, in, ws, Prep::context, stream); !e.empty())
        return e;
    auto save = [&](ScanGrid sg, Pipeline pipe = {}) {
      return [&, sg, pipe](cudaStream_t st) {
        return save_scan(geo, sg, ws, in, a.initial_state, a.saved != nullptr, pipe, st);
      };
    };
    auto bwd = [&](ScanGrid sg, Pipeline pipe = {}) {
      return [&, sg, pipe](cudaStream_t st) {
        return bwd_scan(geo, sg, ws, in, ref<const bf16>(a.d_o), a.d_final_state, a.d_initial_state,
                        pipe, st);
      };
    };
    if (plan.path == BwdPath::pipelined) {
      const Pipeline pipe{ws.ready, 2 * (kD / plan.scans.bv)};
      if ((e = save(plan.scans, pipe)(stream)).empty() &&
          (e = bwd(plan.scans, pipe)(stream)).empty())
        e = launch_bwd_intra_sm90(geo, in, ws, ref<const bf16>(a.d_o), a, pipe, stream);
      return e;
    }
    bool paired = false;
    if (plan.path == BwdPath::side_by_side &&
        !(e = side_.pair(stream, bwd(plan.scans), save(plan.scans), &paired)).empty())
      return e;
    if (!paired) { // in sequence, on the forward's grid
      if (e = save(sg)(stream); !e.empty())
        return e;
      if (e = bwd(sg)(stream); !e.empty())
        return e;
    }
    if (plan.intra_sm90)
      return launch_bwd_intra_sm90(geo, in, ws, ref<const bf16>(a.d_o), a, {}, stream);
    return launch_bwd_intra_sm80(geo, in, ws, ref<const bf16>(a.d_o), a, stream);
  }

private:
  mutable SideStreams side_;
};

} // namespace

std::unique_ptr<Backend> make_fused_backend() {
  return std::make_unique<Fused>();
}

} // namespace qr::gdn
