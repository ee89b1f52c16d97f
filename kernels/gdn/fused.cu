// The `fused` backend (fused.cuh states the algorithm). Forward: prep -> fwd_scan; a training
// forward also keeps A, the rstd of q and k, the entering states h and v_new in the saved context
// (stamped with its shape and options, plus the chunk map when varlen). Backward from that
// context: bwd_scan -> bwd_intra (which check the stamp first); self-contained: prep -> save_scan
// -> bwd_scan -> bwd_intra. Every run clears the workspace's status word first (input_error).
#include "fused.cuh"

namespace qr::gdn {
namespace {

using namespace fused;
using chunked::make_geo;
using chunked::make_inputs;
using chunked::rows_aligned;
using chunked::shape_error;

std::string grid(const Geo& geo, ScanGrid& sg) {
  int dev = 0, sms = 0;
  QR_CUDA_TRY(cudaGetDevice(&dev));
  QR_CUDA_TRY(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  sg = scan_grid(geo, sms);
  return {};
}

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
    // 210 KB of shared memory per scan CTA: sm_90 and sm_100 have 227 KB.
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
    const bool train = a.saved != nullptr;
    if (std::string e = launch_prep(geo, in, ws, train, stream); !e.empty())
      return e;
    return launch_fwd_scan(geo, sg, train, ws, a.initial_state, ref<bf16>(a.o), a.final_state,
                           stream);
  }

  std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const override {
    if (std::string e = args_error(a.shape, a.cu_seqlens); !e.empty())
      return e;
    if (!rows_aligned(a.q) || !rows_aligned(a.k) || !rows_aligned(a.v) || !rows_aligned(a.d_o) ||
        !rows_aligned(a.dq) || !rows_aligned(a.dk) || !rows_aligned(a.dv))
      return "fused: q, k, v, do, dq, dk, dv need 16-byte aligned rows";
    const Geo geo = make_geo(a.shape, a.opt, a.cu_seqlens);
    const Workspace ws = Workspace::carve(a.shape, Pass::bwd, workspace, a.saved, nullptr);
    QR_CUDA_TRY(clear_status(ws.status, stream));
    ScanGrid sg{};
    if (std::string e = grid(geo, sg); !e.empty())
      return e;
    const FwdInputs in = make_inputs(a.q, a.k, a.v, a.beta, a.g, a.initial_state);
    if (!a.saved) { // recompute the context
      if (std::string e = launch_prep(geo, in, ws, true, stream); !e.empty())
        return e;
      if (std::string e = launch_save_scan(geo, sg, ws, a.initial_state, stream); !e.empty())
        return e;
    }
    if (std::string e = launch_bwd_scan(geo, sg, ws, ref<const bf16>(a.d_o), a.d_final_state,
                                        a.d_initial_state, stream);
        !e.empty())
      return e;
    return launch_bwd_intra(geo, in, ws, ref<const bf16>(a.d_o), a, stream);
  }
};

} // namespace

std::unique_ptr<Backend> make_fused_backend() {
  return std::make_unique<Fused>();
}

} // namespace qr::gdn
