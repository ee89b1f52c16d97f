// The `fused` backend (fused.cuh states the algorithm). Forward: prep -> fwd_scan; a training
// forward's prep writes qn, kn, G, A and the rstd of q and k to the saved context (stamped with
// its shape and options, plus the chunk map when varlen): FLA's set. Backward: save_scan and
// bwd_scan (forming what they need from the context) -> bwd_intra, after prep forms the context
// when none is given; the backward kernels that read the context check its stamp first. Every run clears the workspace's status word first
// (input_error).
#include "fused.cuh"

#include <cstdlib>
#include <map>
#include <mutex>

namespace qr::gdn {
namespace {

using namespace fused;
using chunked::make_geo;
using chunked::make_inputs;
using chunked::rows_aligned;
using chunked::shape_error;

int sm_count(int dev, std::string& e) {
  int sms = 0;
  e = cuda_error(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
  return sms;
}

// The forward's scan grid, with the scans that take their Hopper kernels.
std::string grid(const Geo& geo, ScanGrid& sg) {
  int dev = 0, major = 0;
  QR_CUDA_TRY(cudaGetDevice(&dev));
  std::string e;
  const int sms = sm_count(dev, e);
  QR_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
  sg = scan_grid(geo, sms);
  if (std::string bad = hopper_scans(major, sg.hopper); !bad.empty())
    return bad;
  return e;
}

int scan_ctas(const Geo& geo, ScanGrid sg) {
  return kD / sg.bv * geo.B * geo.Hv * sg.groups;
}

// The status word and the pipeline's counts after it (Workspace::carve): one memset.
cudaError_t clear_status_and_ready(const Workspace& ws, const Geo& geo, cudaStream_t st) {
  if (reinterpret_cast<char*>(ws.ready) != reinterpret_cast<char*>(ws.status) + kStatusBytes)
    return cudaErrorInvalidValue; // the carve order changed
  const size_t ready = (size_t(geo.B) * geo.Hv * geo.NT + 1) * sizeof(int);
  return cudaMemsetAsync(ws.status, 0, kStatusBytes + ready, st);
}

// The grid save_scan and bwd_scan share when they run side by side, or {0, 0} when they do not
// fit in one wave together (one CTA per SM each): scan_grid's if twice its CTAs fit, else its
// 128-column form (half the CTAs, each twice the columns) if that does. At the 397B shape the
// pair at 128 columns (64 + 64 CTAs) replaces two 128-CTA launches one after the other; at 35B
// (128 CTAs each already) they stay in sequence.
ScanGrid pair_grid(const Geo& geo, ScanGrid sg, int sms) {
  if (sg.split) // both scans' segment passes write ws.seg_end and ws.seg_move
    return {0, 0, false};
  if (2 * scan_ctas(geo, sg) <= sms)
    return sg;
  const ScanGrid wide{128, sg.groups, false, sg.hopper};
  return 2 * scan_ctas(geo, wide) <= sms ? wide : ScanGrid{0, 0, false};
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
    ScanGrid sg{};
    if (std::string e = grid(geo, sg); !e.empty())
      return e;
    const FwdInputs in = make_inputs(a.q, a.k, a.v, a.beta, a.g, a.initial_state);
    const Prep mode = a.saved ? Prep::context : Prep::inference;
    if (std::string e = launch_prep(geo, in, ws, mode, stream); !e.empty())
      return e;
    return launch_fwd_scan(geo, sg, ws, in, a.initial_state, ref<bf16>(a.o), a.final_state, stream);
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
    int dev = 0, major = 0;
    QR_CUDA_TRY(cudaGetDevice(&dev));
    std::string e;
    const int sms = sm_count(dev, e);
    if (!e.empty())
      return e;
    QR_CUDA_TRY(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    ScanGrid sg = scan_grid(geo, sms);
    if (e = hopper_scans(major, sg.hopper); !e.empty())
      return e;
    const FwdInputs in = make_inputs(a.q, a.k, a.v, a.beta, a.g, a.initial_state);
    // the scans form what they need from the context: without one, prep forms it first
    if (!a.saved)
      if (e = launch_prep(geo, in, ws, Prep::context, stream); !e.empty())
        return e;
    auto save = [&](ScanGrid sg, Pipeline pipe = {}) {
      return [&, sg, pipe](cudaStream_t st) {
        return launch_save_scan(geo, sg, ws, in, a.initial_state, a.saved != nullptr, pipe, st);
      };
    };
    auto bwd = [&](ScanGrid sg, Pipeline pipe = {}) {
      return [&, sg, pipe](cudaStream_t st) {
        return launch_bwd_scan(geo, sg, ws, in, ref<const bf16>(a.d_o), a.d_final_state,
                               a.d_initial_state, pipe, st);
      };
    };
    const ScanGrid pg = pair_grid(geo, sg, sms);
    // On Hopper the pipeline (fused.cuh, Pipeline): save_scan, then bwd_scan as its dependent
    // (side by side where both fit in one wave: pair_grid), then bwd_intra_ws as bwd_scan's,
    // all on the caller's stream
    constexpr unsigned kPipelined = kHopperSave | kHopperBwd | kHopperIntra;
    if ((sg.hopper & kPipelined) == kPipelined) {
      const ScanGrid both = pg.bv ? pg : sg;
      const Pipeline pipe{ws.ready, 2 * (kD / both.bv)};
      if ((e = save(both, pipe)(stream)).empty() && (e = bwd(both, pipe)(stream)).empty())
        e = launch_bwd_intra_ws(geo, in, ws, ref<const bf16>(a.d_o), a, pipe, stream);
      return e;
    }
    bool paired = false;
    if (pg.bv && !(e = side_.pair(stream, bwd(pg), save(pg), &paired)).empty())
      return e;
    if (!paired) {
      if (e = save(sg)(stream); !e.empty())
        return e;
      if (e = bwd(sg)(stream); !e.empty())
        return e;
    }
    if (sg.hopper & kHopperIntra)
      return launch_bwd_intra_ws(geo, in, ws, ref<const bf16>(a.d_o), a, {}, stream);
    return launch_bwd_intra(geo, in, ws, ref<const bf16>(a.d_o), a, stream);
  }

private:
  mutable SideStreams side_;
};

} // namespace

namespace fused {
std::string hopper_scans(int major, unsigned& bits) {
  if (major != 9) {
    bits = 0;
    return {};
  }
  return parse_hopper_scans(std::getenv("QR_GDN_HOPPER_SCANS"), bits);
}
} // namespace fused

std::unique_ptr<Backend> make_fused_backend() {
  return std::make_unique<Fused>();
}

} // namespace qr::gdn
