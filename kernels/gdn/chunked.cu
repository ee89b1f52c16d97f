// The `chunked` backend: FLA's chunked algorithm (chunk 64, WY/UT transform, chunk-state scan) on
// mma.sync tensor cores (sm_80+). Kernels: sm80/chunked_prep.cu, sm80/chunked_scan.cu,
// sm80/chunked_bwd_intra.cu.
#include "chunked.cuh"

namespace qr::gdn {
namespace {

using namespace chunked;

// Chunks are fixed 64-token tiles of each batch row here: no variable-length sequences.
std::string dense_error(const Shape& s) {
  return s.varlen() ? "chunked: no variable-length sequences (cu_seqlens); fused and reference "
                      "take them"
                    : shape_error(s);
}

class Chunked final : public Backend {
public:
  std::string name() const override { return "chunked"; }

  std::string unsupported(const DeviceInfo& dev, const Shape& s) const override {
    if (std::string e = arch_error(dev); !e.empty())
      return e;
    return dev.major < 8 ? "needs sm_80 or newer (mma.sync bf16)" : dense_error(s);
  }

  size_t workspace_bytes(const Shape& s, Pass p) const override {
    size_t bytes = 0;
    Workspace::carve(s, p == Pass::bwd, nullptr, &bytes);
    return bytes;
  }

  std::string run_fwd(const FwdArgs& a, void* workspace, Stream stream) const override {
    if (std::string e = dense_error(a.shape); !e.empty())
      return e;
    if (!rows_aligned(a.q) || !rows_aligned(a.k) || !rows_aligned(a.v) || !rows_aligned(a.o))
      return "chunked: q, k, v, o need 16-byte aligned rows";
    const Geo geo = make_geo(a.shape, a.opt);
    const Workspace ws = Workspace::carve(a.shape, false, workspace, nullptr);
    const FwdInputs in = make_inputs(a.q, a.k, a.v, a.beta, a.g, a.initial_state);
    if (std::string e = launch_prep(geo, in, ws, stream); !e.empty())
      return e;
    return launch_fwd_scan(geo, in, ws, ref<bf16>(a.o), a.final_state, false, stream);
  }

  std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const override {
    if (std::string e = dense_error(a.shape); !e.empty())
      return e;
    if (!rows_aligned(a.q) || !rows_aligned(a.k) || !rows_aligned(a.v) || !rows_aligned(a.d_o) ||
        !rows_aligned(a.dq) || !rows_aligned(a.dk) || !rows_aligned(a.dv))
      return "chunked: q, k, v, do, dq, dk, dv need 16-byte aligned rows";
    const Geo geo = make_geo(a.shape, a.opt);
    const Workspace ws = Workspace::carve(a.shape, true, workspace, nullptr);
    const FwdInputs in = make_inputs(a.q, a.k, a.v, a.beta, a.g, a.initial_state);
    if (std::string e = launch_prep(geo, in, ws, stream); !e.empty())
      return e;
    if (std::string e = launch_fwd_scan(geo, in, ws, {}, nullptr, true, stream); !e.empty())
      return e;
    if (std::string e = launch_bwd_scan(geo, in, ws, ref<const bf16>(a.d_o), a.d_final_state,
                                        a.d_initial_state, stream);
        !e.empty())
      return e;
    return launch_bwd_intra(geo, in, ws, ref<const bf16>(a.d_o), a, stream);
  }
};

} // namespace

std::unique_ptr<Backend> make_chunked_backend() {
  return std::make_unique<Chunked>();
}

} // namespace qr::gdn
