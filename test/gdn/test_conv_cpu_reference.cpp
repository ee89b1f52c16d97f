// CPU tests of the fp64 short-convolution reference (conv.h): hand cases and central differences.
#include "conv.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

using namespace qr::gdn;

namespace {

conv::cpu::Inputs random_inputs(Shape s, bool bias, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n01;
  conv::cpu::Inputs in;
  in.shape = s;
  auto fill = [&](std::vector<double>& x, size_t n, double scale, double shift = 0) {
    x.resize(n);
    for (double& e : x)
      e = shift + scale * n01(rng);
  };
  const size_t tok = size_t(s.batch) * s.seq_len;
  const int C = conv::channels(s);
  fill(in.x, tok * C, 1);
  fill(in.weight, size_t(C) * conv::kWidth, 0.5);
  if (bias)
    fill(in.bias, C, 0.3);
  fill(in.a, tok * s.value_heads, 1);
  fill(in.b, tok * s.value_heads, 1);
  fill(in.A_log, s.value_heads, 0.5, 0.5);
  fill(in.dt_bias, s.value_heads, 0.5);
  return in;
}

conv::cpu::OutGrads random_grads(const Shape& s, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n01;
  auto v = [&](size_t n) {
    std::vector<double> x(n);
    for (double& e : x)
      e = n01(rng);
    return x;
  };
  const size_t tok = size_t(s.batch) * s.seq_len;
  return {v(tok * s.key_heads * s.head_dim_k), v(tok * s.key_heads * s.head_dim_k),
          v(tok * s.value_heads * s.head_dim_v), v(tok * s.value_heads), v(tok * s.value_heads)};
}

double silu(double z) {
  return z / (1 + std::exp(-z));
}

} // namespace

TEST_CASE("conv: channel count and layout", "[gdn][conv][cpu]") {
  CHECK(conv::channels({4, 4096, 16, 32, 128, 128}) == 8192);
  CHECK(conv::channels({1, 4096, 16, 64, 128, 128}) == 12288);
}

TEST_CASE("conv: identity tap passes x through silu; v is not normalised", "[gdn][conv][cpu]") {
  const Shape s{1, 6, 1, 1, 2, 3}; // C = 2 + 2 + 3
  conv::cpu::Inputs in = random_inputs(s, false, 3);
  const int C = conv::channels(s);
  for (int c = 0; c < C; ++c)
    for (int j = 0; j < conv::kWidth; ++j)
      in.weight[c * conv::kWidth + j] = j == conv::kWidth - 1 ? 1 : 0;
  const conv::cpu::Forward f = conv::cpu::forward(in);
  for (int t = 0; t < s.seq_len; ++t) {
    for (int d = 0; d < 3; ++d)
      CHECK(f.v[t * 3 + d] == Approx(silu(in.x[t * C + 4 + d])).epsilon(1e-12));
    double ss = 0;
    for (int d = 0; d < 2; ++d)
      ss += silu(in.x[t * C + d]) * silu(in.x[t * C + d]);
    for (int d = 0; d < 2; ++d)
      CHECK(f.q[t * 2 + d] == Approx(silu(in.x[t * C + d]) / std::sqrt(ss + 1e-6)).epsilon(1e-12));
  }
}

TEST_CASE("conv: causal taps and bias by hand", "[gdn][conv][cpu]") {
  const Shape s{1, 5, 1, 1, 1, 1}; // C = 3: q, k, v one channel each
  conv::cpu::Inputs in = random_inputs(s, true, 4);
  const int C = 3;
  for (int t = 0; t < s.seq_len; ++t)
    for (int c = 0; c < C; ++c)
      in.x[t * C + c] = t + 1 + 10 * c; // v channel: 21, 22, ...
  in.weight[2 * 4 + 0] = 1000, in.weight[2 * 4 + 1] = 100, in.weight[2 * 4 + 2] = 10,
                    in.weight[2 * 4 + 3] = 1;
  in.bias[2] = 0.5;
  const conv::cpu::Forward f = conv::cpu::forward(in);
  // t = 0: only the current token; t = 1: w[2] x[0] + w[3] x[1]; t = 4: all four taps.
  CHECK(f.v[0] == Approx(silu(0.5 + 21)));
  CHECK(f.v[1] == Approx(silu(0.5 + 10 * 21 + 22)));
  CHECK(f.v[4] == Approx(silu(0.5 + 1000 * 22 + 100 * 23 + 10 * 24 + 25)));
  // One-channel q normalises to y / sqrt(y^2 + eps); here q's conv is the identity tap.
  in.weight[0] = in.weight[1] = in.weight[2] = 0, in.weight[3] = 1, in.bias[0] = 0;
  const conv::cpu::Forward f2 = conv::cpu::forward(in);
  for (int t = 0; t < s.seq_len; ++t) {
    const double y = silu(in.x[t * C]);
    CHECK(f2.q[t] == Approx(y / std::sqrt(y * y + 1e-6)).epsilon(1e-12));
  }
}

TEST_CASE("conv: gates by hand", "[gdn][conv][cpu]") {
  const Shape s{1, 1, 1, 2, 1, 1};
  conv::cpu::Inputs in = random_inputs(s, false, 5);
  in.a = {0.0, 30.0};
  in.dt_bias = {0.0, 0.0};
  in.A_log = {0.0, std::log(2.0)};
  in.b = {0.0, 2.0};
  const conv::cpu::Forward f = conv::cpu::forward(in);
  CHECK(f.g[0] == Approx(-std::log(2.0)));
  CHECK(f.g[1] == Approx(-2 * 30.0)); // softplus above the threshold is the identity
  CHECK(f.beta[0] == Approx(0.5));
  CHECK(f.beta[1] == Approx(1 / (1 + std::exp(-2.0))));
}

TEST_CASE("conv: backward matches central finite differences", "[gdn][conv][cpu]") {
  for (bool bias : {false, true}) {
    const Shape s{2, 7, 2, 4, 3, 2}; // C = 6 + 6 + 8
    const conv::cpu::Inputs in = random_inputs(s, bias, 11 + bias);
    const conv::cpu::OutGrads w = random_grads(s, 21);
    const conv::cpu::Grads gr = conv::cpu::backward(in, w);
    struct Named {
      const char* name;
      std::vector<double> conv::cpu::Inputs::*x;
      const std::vector<double>* grad;
    };
    std::vector<Named> all = {{"x", &conv::cpu::Inputs::x, &gr.dx},
                              {"weight", &conv::cpu::Inputs::weight, &gr.dweight},
                              {"a", &conv::cpu::Inputs::a, &gr.da},
                              {"b", &conv::cpu::Inputs::b, &gr.db},
                              {"A_log", &conv::cpu::Inputs::A_log, &gr.dA_log},
                              {"dt_bias", &conv::cpu::Inputs::dt_bias, &gr.ddt_bias}};
    if (bias)
      all.push_back({"bias", &conv::cpu::Inputs::bias, &gr.dbias});
    else
      CHECK(gr.dbias.empty());
    for (const Named& n : all) {
      INFO("d " << n.name << (bias ? " (bias)" : ""));
      conv::cpu::Inputs p = in;
      std::vector<double>& x = p.*n.x;
      REQUIRE(n.grad->size() == x.size());
      double err = 0, scale = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const double x0 = x[i], eps = 1e-6;
        x[i] = x0 + eps;
        const double lp = conv::cpu::loss(p, w);
        x[i] = x0 - eps;
        const double lm = conv::cpu::loss(p, w);
        x[i] = x0;
        err = std::max(err, std::abs((lp - lm) / (2 * eps) - (*n.grad)[i]));
        scale = std::max(scale, std::abs((*n.grad)[i]));
      }
      CHECK(scale > 0);
      CHECK(err <= 1e-6 * std::max(1.0, scale));
    }
  }
}

TEST_CASE("conv: byte model", "[gdn][conv][cpu]") {
  const Shape s35{4, 4096, 16, 32, 128, 128};
  // fwd: x in, q/k/v out (2 x 128 MiB), a/b in, g/beta out (+ parameters)
  CHECK(conv::model_bytes(s35, Pass::fwd, false) / 1e6 == Approx(542.2).epsilon(0.01));
  CHECK(conv::model_bytes(s35, Pass::bwd, false) / 1e6 == Approx(812.8).epsilon(0.01));
}
