// Host-side facts of the CUDA backends that need no GPU: the memory a training step keeps (as
// documented in docs/gdn/kernels.md) and that the cuDNN conv baseline finds cuDNN at run time.
#define CATCH_CONFIG_MAIN
#include "conv.h"
#include "gdn.h"

#include <algorithm>
#include <catch2/catch.hpp>
#include <cmath>

using namespace qr::gdn;

namespace {

size_t rounded(size_t bytes) { // the workspace carver's 256-byte granules
  return (bytes + 255) / 256 * 256;
}

// The fused context by its documented layout, FLA's set: the stamp (12 ints) and, when varlen,
// the chunk map (8 bytes per slot); per key head qn, kn (bf16) and their rstd (fp32); per value
// head G (fp32) and A (bf16, 64 wide); when the rows split into Z = min(128 / (B Hv), NT / 16)
// >= 4 segments, each segment's entering state (fp32, 128 x 128). Varlen has floor(T / 64) + N
// chunk slots.
size_t fused_context_bytes(const Shape& s) {
  const size_t nt = s.varlen() ? s.seq_len / 64 + s.sequences : (s.seq_len + 63) / 64;
  const size_t tp = nt * 64, d = 128;
  const size_t kh = size_t(s.batch) * s.key_heads, vh = size_t(s.batch) * s.value_heads;
  const size_t z = std::min(128 / vh, nt / 16);
  return rounded(12 * 4) + (s.varlen() ? rounded(nt * 8) : 0) + 2 * rounded(kh * tp * d * 2) +
         2 * rounded(kh * tp * 4) + rounded(vh * tp * 4) + rounded(vh * tp * 64 * 2) +
         (z >= 4 ? rounded(z * vh * d * d * 4) : 0);
}

// The fused workspace by its documented layout (fused_workspace.cuh, Workspace): the status word;
// in an inference forward the context's qn, kn, G and A (a training forward keeps them in the saved
// buffer, the self-contained backward in the workspace, with rstd, the stamp and the chunk map);
// the backward's h, v_new and their gradients; a split row's segment states. No u, w or Ms: the
// scans form them.
size_t fused_workspace_bytes(const Shape& s, Pass p) {
  const size_t nt = s.varlen() ? s.seq_len / 64 + s.sequences : (s.seq_len + 63) / 64;
  const size_t tp = nt * 64, d = 128;
  const size_t kh = size_t(s.batch) * s.key_heads, vh = size_t(s.batch) * s.value_heads;
  const size_t z = std::min(128 / vh, nt / 16);
  const bool bwd = p == Pass::bwd, split = z >= 4;
  size_t bytes =
      rounded(256) +
      (bwd ? fused_context_bytes(s) - (split ? rounded(z * vh * d * d * 4) : 0)
           : rounded(12 * 4) + (s.varlen() ? rounded(nt * 8) : 0) + 2 * rounded(kh * tp * d * 2) +
                 rounded(vh * tp * 4) + rounded(vh * tp * 64 * 2));
  if (bwd) // h, dh, v_new, dv_new; the pipeline's per-chunk counts and its queue's ticket
    bytes += 2 * rounded(vh * nt * d * d * 2) + 2 * rounded(vh * tp * d * 2) +
             rounded((vh * nt + 1) * 4);
  if (split) // end states, transitions, (bwd) the gradients leaving, the entering states
    bytes += (bwd ? 4 : 3) * rounded(z * vh * d * d * 4);
  return bytes;
}

std::unique_ptr<Backend> backend(const std::string& name) {
  for (auto& b : all_backends())
    if (b->name() == name)
      return std::move(b);
  return nullptr;
}

} // namespace

TEST_CASE("fused keeps the documented context; reference and chunked keep none", "[gdn]") {
  const Shape s35{4, 4096, 16, 32, 128, 128}, s397{1, 4096, 16, 64, 128, 128};
  const auto fused = backend("fused");
  REQUIRE(fused);
  CHECK(fused->saved_bytes(s35) == fused_context_bytes(s35));
  CHECK(fused->saved_bytes(s397) == fused_context_bytes(s397));
  // docs/gdn/kernels.md quotes these sizes per GDN layer: FLA's 205.5 and 68.7 MB (its
  // save_for_backward: normalised q, k, their rstd, A, the g cumsum), within a stamp's granule.
  CHECK(std::llround(double(fused->saved_bytes(s35)) / 1e5) == 2055);
  CHECK(std::llround(double(fused->saved_bytes(s397)) / 1e5) == 687);
  // A split row keeps its segments' entering states too: 8.4 MB more at B1 T16384 Hv32 (Z = 4).
  const Shape split{1, 16384, 16, 32, 128, 128};
  CHECK(fused->saved_bytes(split) == fused_context_bytes(split));
  CHECK(std::llround(double(fused->saved_bytes(split)) / 1e5) == 2139);
  // A ragged T rounds to whole chunks.
  const Shape ragged{2, 70, 2, 4, 128, 128};
  CHECK(fused->saved_bytes(ragged) == fused_context_bytes(ragged));
  // Varlen sizes depend on T and N only.
  const Shape packed{1, 4096, 16, 32, 128, 128, 100};
  CHECK(fused->saved_bytes(packed) == fused_context_bytes(packed));
  CHECK(fused->saved_bytes(packed) > fused->saved_bytes(Shape{1, 4096, 16, 32, 128, 128}));
  for (const char* name : {"reference", "chunked"}) {
    const auto b = backend(name);
    REQUIRE(b);
    CHECK(b->saved_bytes(s35) == 0);
  }
}

TEST_CASE("fused's workspace holds no u, w or Ms", "[gdn]") {
  const auto fused = backend("fused");
  REQUIRE(fused);
  for (const Shape& s : {Shape{4, 4096, 16, 32, 128, 128}, Shape{1, 4096, 16, 64, 128, 128},
                         Shape{1, 16384, 16, 32, 128, 128}, Shape{2, 70, 2, 4, 128, 128},
                         Shape{1, 4096, 16, 32, 128, 128, 100}})
    for (const Pass p : {Pass::fwd, Pass::bwd}) {
      INFO("B" << s.batch << " T" << s.seq_len << " Hv" << s.value_heads << " N" << s.sequences
               << (p == Pass::bwd ? " bwd" : " fwd"));
      CHECK(fused->workspace_bytes(s, p) == fused_workspace_bytes(s, p));
    }
  // 35B: the inference forward's workspace is its context (qn, kn, G, A), 203 MB; it held 539 MB
  // with u, w and Ms.
  CHECK(std::llround(double(fused->workspace_bytes(Shape{4, 4096, 16, 32, 128, 128}, Pass::fwd)) /
                     1e6) == 203);
}

TEST_CASE("backends refuse what they cannot run", "[gdn]") {
  const Shape dense{1, 64, 1, 1, 128, 128}, packed{1, 64, 1, 1, 128, 128, 3};
  for (const auto& b : all_backends()) {
    INFO(b->name());
    // No build has code for a made-up sm_127: the launch would fail, so unsupported() says so.
    CHECK(b->unsupported(DeviceInfo{12, 7, 132}, dense).find("no code for sm_127") !=
          std::string::npos);
    CHECK(b->unsupported(DeviceInfo{9, 0, 132}, Shape{1, 64, 1, 1, 128, 128, 65}) != "");
  }
  CHECK(backend("chunked")->unsupported(DeviceInfo{9, 0, 132}, packed).find("variable-length") !=
        std::string::npos);
}

TEST_CASE("the cuDNN conv baseline, where built, loads cuDNN at run time", "[gdn][conv]") {
  const auto cudnn = conv::make_cudnn_backend();
  if (!cudnn)
    return; // built without cuDNN: nothing to load
  // Shape checks come after loading, so an empty answer means every cuDNN function resolved.
  CHECK(cudnn->unsupported(DeviceInfo{9, 0, 132}, Shape{4, 4096, 16, 32, 128, 128}) == "");
}
