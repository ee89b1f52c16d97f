// Float64 token-by-token recurrence and its hand-derived backward (see cpu_reference.h).
//
// Forward per token: St = a S, a = exp(g); p = St^T k; e = beta (v - p); S = St + k e^T;
// o = scale S^T q. Backward walks the tokens in reverse with dS (gradient of the running state),
// recomputing the states of each 64-token block from a checkpoint so memory stays O(T/64).
#include "cpu_reference.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace qr::gdn::cpu {
namespace {

constexpr double kEps = 1e-6; // FLA's l2norm eps
constexpr int kBlock = 64;

struct Dims {
  int B, T, Hk, Hv, K, V, r;
  explicit Dims(const Shape& s)
      : B(s.batch), T(s.seq_len), Hk(s.key_heads), Hv(s.value_heads), K(s.head_dim_k),
        V(s.head_dim_v), r(s.group()) {}
  size_t qk(int b, int t, int h) const { return ((size_t(b) * T + t) * Hk + h) * K; }
  size_t vo(int b, int t, int h) const { return ((size_t(b) * T + t) * Hv + h) * V; }
  size_t gb(int b, int t, int h) const { return (size_t(b) * T + t) * Hv + h; }
  size_t st(int b, int h) const { return (size_t(b) * Hv + h) * K * V; }
};

// A run of tokens [t0, t1) of batch row b whose state is state index `state`: each batch row when
// dense, each sequence when varlen.
struct Segment {
  int b, t0, t1, state;
};

std::vector<Segment> segments(const Inputs& in) {
  const Shape& s = in.shape;
  std::vector<Segment> v;
  if (!s.varlen()) {
    for (int b = 0; b < s.batch; ++b)
      v.push_back({b, 0, s.seq_len, b});
    return v;
  }
  for (int i = 0; i < s.sequences; ++i)
    v.push_back({0, in.cu_seqlens[i], in.cu_seqlens[i + 1], i});
  return v;
}

void check(const Inputs& in) {
  const Shape& s = in.shape;
  if (!s.valid())
    throw std::invalid_argument("gdn cpu reference: invalid shape");
  const Dims d(s);
  const size_t nqk = size_t(d.B) * d.T * d.Hk * d.K, nv = size_t(d.B) * d.T * d.Hv * d.V;
  const size_t ng = size_t(d.B) * d.T * d.Hv;
  if (in.q.size() != nqk || in.k.size() != nqk || in.v.size() != nv || in.g.size() != ng ||
      in.beta.size() != ng ||
      (!in.h0.empty() && in.h0.size() != size_t(s.states()) * d.Hv * d.K * d.V))
    throw std::invalid_argument("gdn cpu reference: tensor sizes do not match the shape");
  if (s.varlen()) {
    const std::vector<int32_t>& cu = in.cu_seqlens;
    bool ok = cu.size() == size_t(s.sequences) + 1 && cu.front() == 0 && cu.back() == s.seq_len;
    for (size_t i = 1; ok && i < cu.size(); ++i)
      ok = cu[i] > cu[i - 1];
    if (!ok)
      throw std::invalid_argument("gdn cpu reference: cu_seqlens must rise strictly from 0 to T");
  } else if (!in.cu_seqlens.empty()) {
    throw std::invalid_argument("gdn cpu reference: cu_seqlens given for a dense shape");
  }
}

// x / sqrt(|x|^2 + eps) when enabled; returns the factor 1 / sqrt(|x|^2 + eps) (1 when disabled).
double normalize(const double* x, int n, bool on, double* out) {
  double ss = 0;
  for (int i = 0; i < n; ++i)
    ss += x[i] * x[i];
  const double r = on ? 1.0 / std::sqrt(ss + kEps) : 1.0;
  for (int i = 0; i < n; ++i)
    out[i] = x[i] * r;
  return r;
}

// One token's forward step on state S (K x V); returns p = St^T k and e in the out vectors.
void step(std::vector<double>& S, const double* k, const double* v, double a, double beta, int K,
          int V, std::vector<double>& p, std::vector<double>& e) {
  for (double& x : S)
    x *= a;
  for (int j = 0; j < V; ++j) {
    double acc = 0;
    for (int i = 0; i < K; ++i)
      acc += S[size_t(i) * V + j] * k[i];
    p[j] = acc;
    e[j] = beta * (v[j] - acc);
  }
  for (int i = 0; i < K; ++i)
    for (int j = 0; j < V; ++j)
      S[size_t(i) * V + j] += k[i] * e[j];
}

} // namespace

Forward forward(const Inputs& in) {
  check(in);
  const Dims d(in.shape);
  const double scale = in.opt.effective_scale(in.shape);
  Forward f;
  f.o.assign(size_t(d.B) * d.T * d.Hv * d.V, 0.0);
  f.ht.assign(size_t(in.shape.states()) * d.Hv * d.K * d.V, 0.0);
  std::vector<double> S(size_t(d.K) * d.V), q(d.K), k(d.K), p(d.V), e(d.V);
  for (const auto [b, t0, t1, state] : segments(in))
    for (int h = 0; h < d.Hv; ++h) {
      const int hk = h / d.r;
      if (in.h0.empty())
        std::fill(S.begin(), S.end(), 0.0);
      else
        std::copy_n(in.h0.begin() + ptrdiff_t(d.st(state, h)), S.size(), S.begin());
      for (int t = t0; t < t1; ++t) {
        normalize(&in.q[d.qk(b, t, hk)], d.K, in.opt.l2norm_qk, q.data());
        normalize(&in.k[d.qk(b, t, hk)], d.K, in.opt.l2norm_qk, k.data());
        step(S, k.data(), &in.v[d.vo(b, t, h)], std::exp(in.g[d.gb(b, t, h)]),
             in.beta[d.gb(b, t, h)], d.K, d.V, p, e);
        double* o = &f.o[d.vo(b, t, h)];
        for (int j = 0; j < d.V; ++j) {
          double acc = 0;
          for (int i = 0; i < d.K; ++i)
            acc += S[size_t(i) * d.V + j] * q[i];
          o[j] = scale * acc;
        }
      }
      std::copy(S.begin(), S.end(), f.ht.begin() + ptrdiff_t(d.st(state, h)));
    }
  return f;
}

Grads backward(const Inputs& in, const std::vector<double>& d_o, const std::vector<double>& dht) {
  check(in);
  const Dims d(in.shape);
  const double scale = in.opt.effective_scale(in.shape);
  const size_t KV = size_t(d.K) * d.V, states = size_t(in.shape.states()) * d.Hv * KV;
  if (d_o.size() != size_t(d.B) * d.T * d.Hv * d.V || (!dht.empty() && dht.size() != states))
    throw std::invalid_argument("gdn cpu reference: gradient sizes do not match the shape");
  Grads gr;
  // dq, dk accumulate the gradient of the normalised q, k first (summed over each head group).
  gr.dq.assign(in.q.size(), 0.0);
  gr.dk.assign(in.k.size(), 0.0);
  gr.dv.assign(in.v.size(), 0.0);
  gr.dg.assign(in.g.size(), 0.0);
  gr.dbeta.assign(in.beta.size(), 0.0);
  gr.dh0.assign(states, 0.0);
  std::vector<double> S(KV), dS(KV), dSt(KV), St(KV), p(d.V), e(d.V), de(d.V), dp(d.V);
  std::vector<std::vector<double>> ckpt((d.T + kBlock - 1) / kBlock), prev(kBlock);
  std::vector<double> qn(size_t(d.T) * d.K), kn(size_t(d.T) * d.K);
  for (const auto [b, t0_seg, t1_seg, state] : segments(in))
    for (int h = 0; h < d.Hv; ++h) {
      const int hk = h / d.r;
      for (int t = t0_seg; t < t1_seg; ++t) {
        normalize(&in.q[d.qk(b, t, hk)], d.K, in.opt.l2norm_qk, &qn[size_t(t) * d.K]);
        normalize(&in.k[d.qk(b, t, hk)], d.K, in.opt.l2norm_qk, &kn[size_t(t) * d.K]);
      }
      // Forward once to store the state before each block (blocks counted from the segment's
      // first token).
      if (in.h0.empty())
        std::fill(S.begin(), S.end(), 0.0);
      else
        std::copy_n(in.h0.begin() + ptrdiff_t(d.st(state, h)), KV, S.begin());
      const int nblk = (t1_seg - t0_seg + kBlock - 1) / kBlock;
      for (int t = t0_seg; t < t1_seg; ++t) {
        if ((t - t0_seg) % kBlock == 0)
          ckpt[(t - t0_seg) / kBlock] = S;
        step(S, &kn[size_t(t) * d.K], &in.v[d.vo(b, t, h)], std::exp(in.g[d.gb(b, t, h)]),
             in.beta[d.gb(b, t, h)], d.K, d.V, p, e);
      }
      if (dht.empty())
        std::fill(dS.begin(), dS.end(), 0.0);
      else
        std::copy_n(dht.begin() + ptrdiff_t(d.st(state, h)), KV, dS.begin());
      for (int blk = nblk - 1; blk >= 0; --blk) {
        const int t0 = t0_seg + blk * kBlock, t1 = std::min(t1_seg, t0 + kBlock);
        S = ckpt[blk];
        for (int t = t0; t < t1; ++t) {
          prev[t - t0] = S;
          step(S, &kn[size_t(t) * d.K], &in.v[d.vo(b, t, h)], std::exp(in.g[d.gb(b, t, h)]),
               in.beta[d.gb(b, t, h)], d.K, d.V, p, e);
        }
        for (int t = t1 - 1; t >= t0; --t) {
          const double* q = &qn[size_t(t) * d.K];
          const double* k = &kn[size_t(t) * d.K];
          const double* v = &in.v[d.vo(b, t, h)];
          const double* dout = &d_o[d.vo(b, t, h)];
          const double a = std::exp(in.g[d.gb(b, t, h)]), beta = in.beta[d.gb(b, t, h)];
          // Recompute St = a S_{t-1}, p, e and S_t.
          for (size_t i = 0; i < KV; ++i)
            St[i] = a * prev[t - t0][i];
          for (int j = 0; j < d.V; ++j) {
            double acc = 0;
            for (int i = 0; i < d.K; ++i)
              acc += St[size_t(i) * d.V + j] * k[i];
            p[j] = acc;
            e[j] = beta * (v[j] - acc);
          }
          double* dq = &gr.dq[d.qk(b, t, hk)];
          double* dk = &gr.dk[d.qk(b, t, hk)];
          // o = scale S_t^T q
          for (int i = 0; i < d.K; ++i) {
            double acc = 0;
            for (int j = 0; j < d.V; ++j) {
              const double s_t = St[size_t(i) * d.V + j] + k[i] * e[j];
              acc += s_t * dout[j];
              dS[size_t(i) * d.V + j] += scale * q[i] * dout[j];
            }
            dq[i] += scale * acc;
          }
          // S_t = St + k e^T
          for (int j = 0; j < d.V; ++j) {
            double acc = 0;
            for (int i = 0; i < d.K; ++i)
              acc += dS[size_t(i) * d.V + j] * k[i];
            de[j] = acc;
          }
          for (int i = 0; i < d.K; ++i) {
            double acc = 0;
            for (int j = 0; j < d.V; ++j)
              acc += dS[size_t(i) * d.V + j] * e[j];
            dk[i] += acc;
          }
          // e = beta (v - p), p = St^T k
          double db = 0;
          for (int j = 0; j < d.V; ++j) {
            gr.dv[d.vo(b, t, h) + j] = beta * de[j];
            db += de[j] * (v[j] - p[j]);
            dp[j] = -beta * de[j];
          }
          gr.dbeta[d.gb(b, t, h)] = db;
          for (int i = 0; i < d.K; ++i) {
            double acc = 0;
            for (int j = 0; j < d.V; ++j) {
              acc += St[size_t(i) * d.V + j] * dp[j];
              dSt[size_t(i) * d.V + j] = dS[size_t(i) * d.V + j] + k[i] * dp[j];
            }
            dk[i] += acc;
          }
          // St = a S_{t-1}
          double dg = 0;
          for (size_t i = 0; i < KV; ++i) {
            dg += St[i] * dSt[i];
            dS[i] = a * dSt[i];
          }
          gr.dg[d.gb(b, t, h)] = dg;
        }
      }
      std::copy(dS.begin(), dS.end(), gr.dh0.begin() + ptrdiff_t(d.st(state, h)));
    }
  // Through the l2 normalisation: dx = r (dxn - xn (xn . dxn)).
  if (in.opt.l2norm_qk) {
    std::vector<double> xn(d.K);
    for (auto [x, dx] : {std::pair{&in.q, &gr.dq}, std::pair{&in.k, &gr.dk}})
      for (size_t row = 0; row < x->size() / d.K; ++row) {
        const double r = normalize(&(*x)[row * d.K], d.K, true, xn.data());
        double dot = 0;
        for (int i = 0; i < d.K; ++i)
          dot += xn[i] * (*dx)[row * d.K + i];
        for (int i = 0; i < d.K; ++i)
          (*dx)[row * d.K + i] = r * ((*dx)[row * d.K + i] - xn[i] * dot);
      }
  }
  return gr;
}

double loss(const Inputs& in, const std::vector<double>& w_o, const std::vector<double>& w_ht) {
  const Forward f = forward(in);
  double l = 0;
  for (size_t i = 0; i < f.o.size(); ++i)
    l += w_o[i] * f.o[i];
  for (size_t i = 0; i < w_ht.size(); ++i)
    l += w_ht[i] * f.ht[i];
  return l;
}

} // namespace qr::gdn::cpu
