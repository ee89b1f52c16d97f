// The geometry and the parameters every GDN kernel family shares (chunked, fused; the kernels of
// sm80/ and sm90/): the chunk and head sizes, the padded shared-memory row strides, the chunk
// slots of a (batch row, head), Geo (the first argument of every kernel) and the inputs.
#pragma once

#include "common.cuh"

namespace qr::gdn::geometry {

constexpr int kC = 64;        // chunk length
constexpr int kD = 128;       // Dk = Dv
constexpr int kThreads = 256; // 8 warps in every mma.sync kernel
constexpr int kLdD = kD + 8;  // padded smem row strides (bf16): 16-byte rows, no bank conflicts
constexpr int kLdC = kC + 8;
constexpr int kLdF = kC + 4;    // padded fp32 row stride of 64-wide tiles
constexpr float kL2Eps = 1e-6f; // FLA's l2norm eps

// Chunk slots per (batch row, head). Dense: ceil(T / 64). Varlen (fused only): sequence s's
// chunk j sits at slot floor(cu[s] / 64) + s + j, so that a slot's sequence follows from
// cu_seqlens alone (a binary search, no prefix sum over the lengths) and the count depends on T
// and N only: chunks of s end before the next sequence's first slot because
// floor(cu[s] / 64) + ceil(len_s / 64) <= floor(cu[s+1] / 64) + 1, and the last sequence's end
// at slot floor(T / 64) + N - 1 at most. Slots between two sequences stay unused.
inline int chunk_slots(const Shape& s) {
  return s.varlen() ? s.seq_len / kC + s.sequences : (s.seq_len + kC - 1) / kC;
}

// Problem geometry shared by every kernel.
struct Geo {
  int B, T, Hk, Hv, NT, group;
  float scale;
  bool l2;
  int N;             // varlen sequences (0: dense)
  const int32_t* cu; // varlen offsets
  __device__ int valid(int n) const { return min(kC, T - n * kC); }
};

inline Geo make_geo(const Shape& s, const Options& opt, const int32_t* cu = nullptr) {
  return {s.batch,
          s.seq_len,
          s.key_heads,
          s.value_heads,
          chunk_slots(s),
          s.group(),
          opt.effective_scale(s),
          opt.l2norm_qk,
          s.sequences,
          cu};
}

inline std::string shape_error(const Shape& s) {
  if (!s.valid())
    return "invalid shape";
  if (s.head_dim_k != kD || s.head_dim_v != kD)
    return "head dims must be 128";
  return {};
}

// 16-byte aligned rows, as cp.async and the bf16x2 stores need.
template <class T>
bool rows_aligned(const TensorRef<T>& r) {
  return reinterpret_cast<uintptr_t>(r.data) % 16 == 0 && r.stride_b % 8 == 0 &&
         r.stride_t % 8 == 0 && r.stride_h % 8 == 0;
}

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

} // namespace qr::gdn::geometry
