// fp64 CPU reference of the short convolution and gates (conv.h), forward and hand-derived
// backward. Plain C++: the CI's CPU tests and gdn-bench --op conv's oracle use it.
//
// Backward, per token t and channel c (z, y as in conv.h):
//   q / k heads: o = y r, r = (|y|^2 + eps)^-1/2 over the head, so dy = r (do - o (o . do))
//   v heads:     dy = dv
//   dz = dy silu'(z), silu'(z) = s (1 + z (1 - s)), s = sigmoid(z)
//   dx[t] = sum_j w[j] dz[t + 3 - j] (t + 3 - j < T);  dw[j] = sum_t dz[t] x[t - 3 + j];
//   dbias = sum_t dz[t]
// Gates: u = a + dt_bias, g = -exp(A_log) softplus(u):
//   da = dg (-exp(A_log)) sigmoid(u) (softplus' = sigmoid; 1 above the threshold),
//   d dt_bias = sum da, d A_log = sum dg g;  db = dbeta beta (1 - beta).
#include "conv.h"

#include <cmath>

namespace qr::gdn::conv::cpu {
namespace {

double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}
double softplus(double x) {
  return x > kSoftplusThreshold ? x : std::log1p(std::exp(x));
}
double softplus_grad(double x) {
  return x > kSoftplusThreshold ? 1 : sigmoid(x);
}

// Pre-activation z for all tokens and channels, [B,T,C].
std::vector<double> conv_z(const Inputs& in) {
  const Shape& s = in.shape;
  const int C = channels(s), T = s.seq_len;
  std::vector<double> z(size_t(s.batch) * T * C);
  for (int b = 0; b < s.batch; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) {
        double acc = in.bias.empty() ? 0 : in.bias[c];
        for (int j = 0; j < kWidth; ++j) {
          const int tt = t - (kWidth - 1) + j;
          if (tt >= 0)
            acc += in.weight[size_t(c) * kWidth + j] * in.x[(size_t(b) * T + tt) * C + c];
        }
        z[(size_t(b) * T + t) * C + c] = acc;
      }
  return z;
}

double silu(double z) {
  return z * sigmoid(z);
}

} // namespace

Forward forward(const Inputs& in) {
  const Shape& s = in.shape;
  const int C = channels(s), Hk = s.key_heads, Hv = s.value_heads, Dk = s.head_dim_k,
            Dv = s.head_dim_v;
  const size_t tok = size_t(s.batch) * s.seq_len;
  const std::vector<double> z = conv_z(in);
  Forward f;
  f.q.resize(tok * Hk * Dk);
  f.k.resize(tok * Hk * Dk);
  f.v.resize(tok * Hv * Dv);
  f.g.resize(tok * Hv);
  f.beta.resize(tok * Hv);
  for (size_t n = 0; n < tok; ++n) {
    const double* zr = &z[n * C];
    for (int part = 0; part < 2; ++part) // q, then k
      for (int h = 0; h < Hk; ++h) {
        const int c0 = part * Hk * Dk + h * Dk;
        double ss = 0;
        for (int d = 0; d < Dk; ++d)
          ss += silu(zr[c0 + d]) * silu(zr[c0 + d]);
        const double r = 1 / std::sqrt(ss + kL2Eps);
        std::vector<double>& out = part ? f.k : f.q;
        for (int d = 0; d < Dk; ++d)
          out[(n * Hk + h) * Dk + d] = silu(zr[c0 + d]) * r;
      }
    for (int i = 0; i < Hv * Dv; ++i)
      f.v[n * Hv * Dv + i] = silu(zr[2 * Hk * Dk + i]);
    for (int h = 0; h < Hv; ++h) {
      f.g[n * Hv + h] = -std::exp(in.A_log[h]) * softplus(in.a[n * Hv + h] + in.dt_bias[h]);
      f.beta[n * Hv + h] = sigmoid(in.b[n * Hv + h]);
    }
  }
  return f;
}

Grads backward(const Inputs& in, const OutGrads& d) {
  const Shape& s = in.shape;
  const int C = channels(s), Hk = s.key_heads, Hv = s.value_heads, Dk = s.head_dim_k,
            Dv = s.head_dim_v, T = s.seq_len;
  const size_t tok = size_t(s.batch) * T;
  const std::vector<double> z = conv_z(in);
  std::vector<double> dz(tok * C);
  for (size_t n = 0; n < tok; ++n) {
    const double* zr = &z[n * C];
    double* dzr = &dz[n * C];
    for (int part = 0; part < 2; ++part)
      for (int h = 0; h < Hk; ++h) {
        const int c0 = part * Hk * Dk + h * Dk;
        const std::vector<double>& dout = part ? d.dk : d.dq;
        double ss = 0;
        for (int i = 0; i < Dk; ++i)
          ss += silu(zr[c0 + i]) * silu(zr[c0 + i]);
        const double r = 1 / std::sqrt(ss + kL2Eps);
        double dot = 0;
        for (int i = 0; i < Dk; ++i)
          dot += silu(zr[c0 + i]) * r * dout[(n * Hk + h) * Dk + i];
        for (int i = 0; i < Dk; ++i)
          dzr[c0 + i] = r * (dout[(n * Hk + h) * Dk + i] - silu(zr[c0 + i]) * r * dot);
      }
    for (int i = 0; i < Hv * Dv; ++i)
      dzr[2 * Hk * Dk + i] = d.dv[n * Hv * Dv + i];
    for (int c = 0; c < C; ++c) {
      const double sg = sigmoid(zr[c]);
      dzr[c] *= sg * (1 + zr[c] * (1 - sg));
    }
  }
  Grads g;
  g.dx.assign(tok * C, 0);
  g.dweight.assign(size_t(C) * kWidth, 0);
  if (!in.bias.empty())
    g.dbias.assign(C, 0);
  for (int b = 0; b < s.batch; ++b)
    for (int t = 0; t < T; ++t)
      for (int c = 0; c < C; ++c) {
        const double dzt = dz[(size_t(b) * T + t) * C + c];
        if (!in.bias.empty())
          g.dbias[c] += dzt;
        for (int j = 0; j < kWidth; ++j) {
          const int tt = t - (kWidth - 1) + j; // x[tt] feeds z[t] through w[j]
          if (tt < 0)
            continue;
          g.dweight[size_t(c) * kWidth + j] += dzt * in.x[(size_t(b) * T + tt) * C + c];
          g.dx[(size_t(b) * T + tt) * C + c] += in.weight[size_t(c) * kWidth + j] * dzt;
        }
      }
  g.da.resize(tok * Hv);
  g.db.resize(tok * Hv);
  g.dA_log.assign(Hv, 0);
  g.ddt_bias.assign(Hv, 0);
  for (size_t n = 0; n < tok; ++n)
    for (int h = 0; h < Hv; ++h) {
      const size_t i = n * Hv + h;
      const double u = in.a[i] + in.dt_bias[h], A = std::exp(in.A_log[h]);
      const double da = d.dg[i] * -A * softplus_grad(u);
      g.da[i] = da;
      g.ddt_bias[h] += da;
      g.dA_log[h] += d.dg[i] * -A * softplus(u);
      const double beta = sigmoid(in.b[i]);
      g.db[i] = d.dbeta[i] * beta * (1 - beta);
    }
  return g;
}

double loss(const Inputs& in, const OutGrads& w) {
  const Forward f = forward(in);
  double l = 0;
  auto dot = [&](const std::vector<double>& a, const std::vector<double>& b) {
    for (size_t i = 0; i < a.size(); ++i)
      l += a[i] * b[i];
  };
  dot(f.q, w.dq);
  dot(f.k, w.dk);
  dot(f.v, w.dv);
  dot(f.g, w.dg);
  dot(f.beta, w.dbeta);
  return l;
}

} // namespace qr::gdn::conv::cpu

namespace qr::gdn::conv {

double model_bytes(const Shape& s, Pass p, bool bias) {
  const double tok = double(s.batch) * s.seq_len, C = channels(s), Hv = s.value_heads;
  const double params = C * kWidth * 2 + (bias ? C * 2 : 0) + Hv * 4 * 2;
  const double x = tok * C * 2, ab = tok * Hv * 2 * 2, gbeta = tok * Hv * (4 + 2);
  if (p == Pass::fwd)
    return x + ab + params + x /* q, k, v */ + gbeta;
  const double dparams = C * kWidth * 4 + (bias ? C * 4 : 0) + Hv * 4 * 2;
  return x + x /* dq, dk, dv */ + ab + gbeta + params + x /* dx */ + ab /* da, db */ + dparams;
}

} // namespace qr::gdn::conv
