// CUDA-free parts of the host API: shape checks and the FLOP / byte model.
#include "gdn.h"

#include <cmath>

namespace qr::gdn {

bool Shape::valid() const {
  return batch > 0 && seq_len > 0 && key_heads > 0 && value_heads > 0 && head_dim_k > 0 &&
         head_dim_v > 0 && value_heads % key_heads == 0 && sequences >= 0 &&
         (sequences == 0 || (batch == 1 && sequences <= seq_len));
}

float Options::effective_scale(const Shape& s) const {
  return scale != 0.f ? scale : 1.f / std::sqrt(float(s.head_dim_k));
}

// Matrix FLOPs per (64-token chunk, value head), 2mnk each, as the chunked algorithm issues them
// (the same counts as FLA's pipeline in shared/reference/gdn.md, so TFLOP/s compare directly).
double model_flops(const Shape& s, Pass p) {
  const double C = 64, K = s.head_dim_k, V = s.head_dim_v;
  const double chunks = double(s.batch) * s.value_heads * std::ceil(s.seq_len / C);
  auto mm = [](double m, double n, double k) { return 2 * m * n * k; };
  const double kkt = mm(C, C, K) * 10 / 16 + 4 * mm(16, 16, 16) * 2 + 12 * mm(16, 16, 16);
  const double wu = mm(C, K, C) + mm(C, V, C);
  const double h = mm(C, V, K) + mm(K, V, C);
  const double o = mm(C, V, K) + mm(C, C, K) + mm(C, V, C);
  if (p == Pass::fwd)
    return chunks * (kkt + wu + h + o);
  const double dv_local = mm(C, C, K) + mm(C, V, C);
  const double dhu = mm(C, V, K) + 2 * mm(K, V, C);
  const double dqkwg = 3 * mm(C, K, V) + 3 * mm(C, C, K);
  const double wy_bwd = 6 * mm(C, C, K) + 2 * mm(C, C, C) + mm(C, C, K);
  return chunks * (wu + h + dv_local + dhu + dqkwg + wy_bwd);
}

// Fewest HBM bytes: every input read once, every output written once (bf16 tensors, fp32 g/dg and
// states). The forward reads q, k, v, g, beta and writes o; the backward also reads do and writes
// dq, dk, dv, dg, dbeta.
double model_bytes(const Shape& s, Pass p, bool with_states) {
  const double tok = double(s.batch) * s.seq_len;
  const double qk = tok * s.key_heads * s.head_dim_k * 2;
  const double v = tok * s.value_heads * s.head_dim_v * 2;
  const double gb = tok * s.value_heads * (4 + 2);
  const double state = double(s.states()) * s.value_heads * s.head_dim_k * s.head_dim_v * 4;
  const double in = 2 * qk + v + gb + (with_states ? state : 0);
  if (p == Pass::fwd)
    return in + v + (with_states ? state : 0);
  return in + v /* do */ + 2 * qk + v + gb + (with_states ? 2 * state : 0);
}

} // namespace qr::gdn
