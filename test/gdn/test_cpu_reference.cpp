// CPU tests of the float64 reference: hand-derivable cases and finite-difference gradients.
#define CATCH_CONFIG_MAIN
#include "cpu_reference.h"

#include <catch2/catch.hpp>
#include <cmath>
#include <random>

using namespace qr::gdn;

namespace {

cpu::Inputs random_inputs(Shape s, bool l2, bool h0, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_real_distribution<double> u01(0.0, 1.0);
  cpu::Inputs in;
  in.shape = s;
  in.opt.l2norm_qk = l2;
  auto fill = [&](std::vector<double>& x, size_t n, auto gen) {
    x.resize(n);
    for (double& e : x)
      e = gen();
  };
  const size_t tok = size_t(s.batch) * s.seq_len;
  fill(in.q, tok * s.key_heads * s.head_dim_k, [&] { return n01(rng); });
  fill(in.k, tok * s.key_heads * s.head_dim_k, [&] { return n01(rng); });
  fill(in.v, tok * s.value_heads * s.head_dim_v, [&] { return n01(rng); });
  // log decay as Qwen computes it: -softplus(.) style negatives, here logsigmoid(N(0,1))
  fill(in.g, tok * s.value_heads, [&] { return -std::log1p(std::exp(-n01(rng))); });
  fill(in.beta, tok * s.value_heads, [&] { return 1.0 / (1.0 + std::exp(-u01(rng))); });
  if (h0)
    fill(in.h0, size_t(s.states()) * s.value_heads * s.head_dim_k * s.head_dim_v,
         [&] { return 0.5 * n01(rng); });
  return in;
}

std::vector<double> randn(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<double> n01;
  std::vector<double> x(n);
  for (double& e : x)
    e = n01(rng);
  return x;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(a[i] - b[i]));
  return m;
}

} // namespace

TEST_CASE("beta = 0 leaves the state alone: only decay acts", "[gdn][cpu]") {
  const Shape s{1, 5, 1, 2, 3, 4};
  cpu::Inputs in = random_inputs(s, true, true, 1);
  std::fill(in.beta.begin(), in.beta.end(), 0.0);
  const cpu::Forward f = cpu::forward(in);
  for (int h = 0; h < s.value_heads; ++h) {
    double gsum = 0;
    for (int t = 0; t < s.seq_len; ++t)
      gsum += in.g[size_t(t) * s.value_heads + h];
    for (int i = 0; i < 12; ++i) {
      const size_t idx = size_t(h) * 12 + i;
      CHECK(f.ht[idx] == Approx(std::exp(gsum) * in.h0[idx]).epsilon(1e-12));
    }
  }
  // With g = 0 as well the state is exactly h0.
  std::fill(in.g.begin(), in.g.end(), 0.0);
  CHECK(max_abs_diff(cpu::forward(in).ht, in.h0) == 0.0);
}

TEST_CASE("g = 0, beta = 1 is the plain delta rule", "[gdn][cpu]") {
  // One head, Dk = Dv = 2, no normalisation, unit keys: S += k (v - S^T k)^T replaces the value
  // stored under k, so after writing v under e1 and then w under e2, S = [v; w] exactly.
  const Shape s{1, 3, 1, 1, 2, 2};
  cpu::Inputs in;
  in.shape = s;
  in.opt.l2norm_qk = false;
  in.opt.scale = 1.0f;
  in.q = {1, 0, 0, 1, 1, 1};
  in.k = {1, 0, 0, 1, 1, 0};
  in.v = {2, 3, 5, 7, 11, 13};
  in.g = {0, 0, 0};
  in.beta = {1, 1, 1};
  const cpu::Forward f = cpu::forward(in);
  // t0: S = e1 [2 3]; o = S^T e1 = [2 3]
  CHECK(f.o[0] == 2.0);
  CHECK(f.o[1] == 3.0);
  // t1: S = [2 3; 5 7]; o = S^T e2 = [5 7]
  CHECK(f.o[2] == 5.0);
  CHECK(f.o[3] == 7.0);
  // t2: writing [11 13] under e1 overwrites row 1: S = [11 13; 5 7]; o = S^T [1 1] = [16 20]
  CHECK(f.o[4] == 16.0);
  CHECK(f.o[5] == 20.0);
  CHECK(f.ht == std::vector<double>{11, 13, 5, 7});
}

TEST_CASE("decay alone scales the previous state", "[gdn][cpu]") {
  // g = log(0.5) and beta = 1 with orthogonal unit keys: the older row halves each step.
  const Shape s{1, 2, 1, 1, 2, 1};
  cpu::Inputs in;
  in.shape = s;
  in.opt.l2norm_qk = false;
  in.opt.scale = 1.0f;
  in.q = {1, 0, 1, 0};
  in.k = {1, 0, 0, 1};
  in.v = {4, 6};
  in.g = {std::log(0.5), std::log(0.5)};
  in.beta = {1, 1};
  const cpu::Forward f = cpu::forward(in);
  CHECK(f.o[0] == Approx(4.0));
  CHECK(f.o[1] == Approx(2.0)); // 0.5 * 4 remains under e1
  CHECK(f.ht[0] == Approx(2.0));
  CHECK(f.ht[1] == Approx(6.0));
}

// The bound behind the split's gate horizon (gate_horizon, fused_algorithm.cuh): with |k| <= 1 and
// beta in [0, 1] a token maps the state by exp(g) (I - beta k k^T), of 2-norm at most exp(g), so of
// what enters a run of tokens at most exp(their summed gates) leaves it, forward (the state) and
// backward (the state's gradient, through the transposed maps). The recurrence is affine in the
// state, so what the entering state contributes is the difference of two runs.
namespace {

double head_norm(const std::vector<double>& states, int h, int per_head) {
  double sum = 0;
  for (int i = 0; i < per_head; ++i)
    sum += states[size_t(h) * per_head + i] * states[size_t(h) * per_head + i];
  return std::sqrt(sum);
}

std::vector<double> minus(std::vector<double> a, const std::vector<double>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    a[i] -= b[i];
  return a;
}

} // namespace

TEST_CASE("what enters a run of tokens leaves it scaled by at most exp(its summed gates)",
          "[gdn][cpu]") {
  const Shape s{1, 48, 1, 3, 8, 6};
  const int per_head = 8 * 6;
  // beta over the whole of [0, 1] (its ends included), and small, where the bound is nearly met
  for (const double beta_max : {1.0, 0.01})
    for (unsigned seed : {1u, 2u, 3u}) {
      cpu::Inputs in = random_inputs(s, true, true, seed);
      std::mt19937 rng(seed);
      std::uniform_real_distribution<double> u01(0.0, beta_max);
      for (size_t i = 0; i < in.beta.size(); ++i)
        in.beta[i] = i % 7 == 0 ? beta_max : i % 11 == 0 ? 0.0 : u01(rng);
      for (double& g : in.g)
        g *= 0.1; // slow gates, so the bound is far from 0
      cpu::Inputs from_zero = in;
      std::fill(from_zero.h0.begin(), from_zero.h0.end(), 0.0);
      const std::vector<double> entered = minus(cpu::forward(in).ht, cpu::forward(from_zero).ht);

      const std::vector<double> dht = randn(in.h0.size(), seed + 10);
      const std::vector<double> no_do(size_t(s.seq_len) * s.value_heads * s.head_dim_v, 0.0);
      const std::vector<double> dh0 = cpu::backward(in, no_do, dht).dh0; // the maps' transposes

      for (int h = 0; h < s.value_heads; ++h) {
        double gates = 0;
        for (int t = 0; t < s.seq_len; ++t)
          gates += in.g[size_t(t) * s.value_heads + h];
        const double bound = std::exp(gates);
        REQUIRE(bound > 1e-3);
        CHECK(head_norm(entered, h, per_head) <=
              bound * head_norm(in.h0, h, per_head) * (1 + 1e-12));
        CHECK(head_norm(dh0, h, per_head) <= bound * head_norm(dht, h, per_head) * (1 + 1e-12));
      }
    }
}

TEST_CASE("a key of norm above 1 (bf16's rounding) breaks the bound at beta 2, not at beta 1",
          "[gdn][cpu]") {
  // Why gate_horizon asks for beta <= 1 and not <= 2: k = (1 + 2^-7) e1, a bf16 value that a
  // normalised key can round to, and a state along e1. Per token the state scales by
  // 1 - beta |k|^2: about -1.03 at beta 2 (it grows), -0.016 at beta 1. No decay (g = 0).
  const Shape s{1, 16, 1, 1, 2, 1};
  cpu::Inputs in;
  in.shape = s;
  in.opt.l2norm_qk = false;
  in.q.assign(size_t(s.seq_len) * 2, 0.0);
  in.k.assign(size_t(s.seq_len) * 2, 0.0);
  for (int t = 0; t < s.seq_len; ++t)
    in.k[size_t(t) * 2] = 1.0078125; // 1 + 2^-7
  in.v.assign(s.seq_len, 0.0);
  in.g.assign(s.seq_len, 0.0);
  in.h0 = {1.0, 0.0};
  in.beta.assign(s.seq_len, 2.0);
  CHECK(std::abs(cpu::forward(in).ht[0]) > 1.6); // |1 - 2 (1 + 2^-7)^2|^16 = 1.64
  in.beta.assign(s.seq_len, 1.0);
  CHECK(std::abs(cpu::forward(in).ht[0]) < 1e-20);
}

TEST_CASE("grouped value heads read key head h / (Hv / Hk)", "[gdn][cpu]") {
  // Hk = 1, Hv = 2 equals Hk = Hv = 2 with q and k repeated.
  const Shape gva{2, 7, 1, 2, 4, 3}, rep{2, 7, 2, 2, 4, 3};
  const cpu::Inputs a = random_inputs(gva, true, true, 3);
  cpu::Inputs b = a;
  b.shape = rep;
  b.q.clear();
  b.k.clear();
  for (size_t row = 0; row < a.q.size() / 4; ++row)
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 4; ++i) {
        b.q.push_back(a.q[row * 4 + i]);
        b.k.push_back(a.k[row * 4 + i]);
      }
  CHECK(max_abs_diff(cpu::forward(a).o, cpu::forward(b).o) < 1e-14);
}

TEST_CASE("backward matches central finite differences", "[gdn][cpu]") {
  struct Case {
    Shape s;
    bool l2, h0;
  };
  // T = 70 crosses the 64-token checkpoint block of the backward.
  const Case cases[] = {{{1, 6, 1, 1, 3, 2}, true, true},
                        {{2, 5, 1, 2, 4, 3}, true, false},
                        {{1, 70, 2, 4, 3, 2}, true, true},
                        {{1, 9, 2, 2, 3, 3}, false, true}};
  unsigned seed = 10;
  for (const Case& c : cases) {
    cpu::Inputs in = random_inputs(c.s, c.l2, c.h0, seed++);
    const cpu::Forward f = cpu::forward(in);
    const std::vector<double> w_o = randn(f.o.size(), seed++), w_ht = randn(f.ht.size(), seed++);
    const cpu::Grads gr = cpu::backward(in, w_o, w_ht);
    struct Named {
      const char* name;
      std::vector<double>* x;
      const std::vector<double>* dx;
    };
    std::vector<Named> all = {{"q", &in.q, &gr.dq},
                              {"k", &in.k, &gr.dk},
                              {"v", &in.v, &gr.dv},
                              {"g", &in.g, &gr.dg},
                              {"beta", &in.beta, &gr.dbeta}};
    cpu::Inputs with_h0 = in;
    if (with_h0.h0.empty())
      with_h0.h0.assign(gr.dh0.size(), 0.0);
    for (const Named& n : all) {
      double err = 0, ref = 0;
      for (size_t i = 0; i < n.x->size(); ++i) {
        const double x0 = (*n.x)[i], eps = 1e-6;
        (*n.x)[i] = x0 + eps;
        const double lp = cpu::loss(in, w_o, w_ht);
        (*n.x)[i] = x0 - eps;
        const double lm = cpu::loss(in, w_o, w_ht);
        (*n.x)[i] = x0;
        const double fd = (lp - lm) / (2 * eps);
        err = std::max(err, std::abs(fd - (*n.dx)[i]));
        ref = std::max(ref, std::abs(fd));
      }
      INFO("d" << n.name << " T=" << c.s.seq_len << " max|fd| " << ref);
      CHECK(err <= 1e-6 * std::max(1.0, ref));
    }
    double err = 0;
    for (size_t i = 0; i < with_h0.h0.size(); ++i) {
      const double x0 = with_h0.h0[i], eps = 1e-6;
      with_h0.h0[i] = x0 + eps;
      const double lp = cpu::loss(with_h0, w_o, w_ht);
      with_h0.h0[i] = x0 - eps;
      const double lm = cpu::loss(with_h0, w_o, w_ht);
      with_h0.h0[i] = x0;
      err = std::max(err, std::abs((lp - lm) / (2 * eps) - gr.dh0[i]));
    }
    INFO("dh0");
    CHECK(err <= 1e-6);
  }
}

// Tokens [t0, t1) of every [T, H, D] tensor in `x` (batch 1), as a dense tensor of t1 - t0 tokens.
std::vector<double> tokens(const std::vector<double>& x, int T, int t0, int t1) {
  const size_t row = x.size() / size_t(T);
  return {x.begin() + ptrdiff_t(t0 * row), x.begin() + ptrdiff_t(t1 * row)};
}
// State i of an [N, Hv, Dk, Dv] tensor (empty stays empty).
std::vector<double> state(const std::vector<double>& x, int N, int i) {
  if (x.empty())
    return {};
  const size_t n = x.size() / size_t(N);
  return {x.begin() + ptrdiff_t(i * n), x.begin() + ptrdiff_t((i + 1) * n)};
}

TEST_CASE("varlen runs every sequence exactly as a dense run of its tokens alone", "[gdn][cpu]") {
  // Boundaries off the 64-token blocks, single-token sequences, a 130-token one crossing two
  // checkpoint blocks of the backward.
  const std::vector<int> lens = {1, 65, 3, 130, 64, 1, 7};
  std::vector<int32_t> cu = {0};
  for (int l : lens)
    cu.push_back(cu.back() + l);
  const int N = int(lens.size()), T = cu.back();
  for (bool h0 : {true, false}) {
    const Shape s{1, T, 2, 4, 5, 3, N};
    cpu::Inputs in = random_inputs(s, true, h0, 40 + h0);
    in.cu_seqlens = cu;
    const cpu::Forward f = cpu::forward(in);
    const std::vector<double> d_o = randn(f.o.size(), 41), dht = randn(f.ht.size(), 42);
    const cpu::Grads gr = cpu::backward(in, d_o, dht);
    for (int i = 0; i < N; ++i) {
      const int t0 = cu[i], t1 = cu[i + 1];
      cpu::Inputs one;
      one.shape = {1, t1 - t0, 2, 4, 5, 3};
      one.opt = in.opt;
      one.q = tokens(in.q, T, t0, t1);
      one.k = tokens(in.k, T, t0, t1);
      one.v = tokens(in.v, T, t0, t1);
      one.g = tokens(in.g, T, t0, t1);
      one.beta = tokens(in.beta, T, t0, t1);
      one.h0 = state(in.h0, N, i);
      const cpu::Forward fo = cpu::forward(one);
      const cpu::Grads go = cpu::backward(one, tokens(d_o, T, t0, t1), state(dht, N, i));
      INFO("sequence " << i << " tokens " << t0 << ".." << t1 << (h0 ? " h0" : ""));
      CHECK(tokens(f.o, T, t0, t1) == fo.o);
      CHECK(state(f.ht, N, i) == fo.ht);
      CHECK(tokens(gr.dq, T, t0, t1) == go.dq);
      CHECK(tokens(gr.dk, T, t0, t1) == go.dk);
      CHECK(tokens(gr.dv, T, t0, t1) == go.dv);
      CHECK(tokens(gr.dg, T, t0, t1) == go.dg);
      CHECK(tokens(gr.dbeta, T, t0, t1) == go.dbeta);
      CHECK(state(gr.dh0, N, i) == go.dh0);
    }
  }
}

TEST_CASE("varlen shapes and offsets are checked", "[gdn][cpu]") {
  CHECK(Shape{1, 10, 1, 1, 4, 4, 10}.valid());
  CHECK_FALSE(Shape{2, 10, 1, 1, 4, 4, 3}.valid());  // packed sequences need batch 1
  CHECK_FALSE(Shape{1, 10, 1, 1, 4, 4, 11}.valid()); // more sequences than tokens
  CHECK(Shape{1, 10, 1, 1, 4, 4, 3}.states() == 3);
  CHECK(Shape{2, 10, 1, 1, 4, 4}.states() == 2);
  cpu::Inputs in = random_inputs({1, 10, 1, 1, 4, 4, 3}, true, false, 50);
  for (const std::vector<int32_t>& bad : std::vector<std::vector<int32_t>>{
           {0, 4, 10}, {0, 4, 4, 10}, {1, 4, 6, 10}, {0, 4, 6, 9}, {0, 6, 4, 10}}) {
    in.cu_seqlens = bad;
    CHECK_THROWS_AS(cpu::forward(in), std::invalid_argument);
  }
  in.cu_seqlens = {0, 4, 6, 10};
  CHECK_NOTHROW(cpu::forward(in));
  cpu::Inputs dense = random_inputs({1, 10, 1, 1, 4, 4}, true, false, 51);
  dense.cu_seqlens = {0, 10};
  CHECK_THROWS_AS(cpu::forward(dense), std::invalid_argument);
}

TEST_CASE("FLOP and byte model", "[gdn][cpu]") {
  const Shape s35{4, 4096, 16, 32, 128, 128};
  // shared/reference/gdn.md: 92.6 fwd and 266.3 bwd GFLOP at the 35B recipe shape.
  CHECK(model_flops(s35, Pass::fwd) / 1e9 == Approx(92.6).epsilon(0.01));
  CHECK(model_flops(s35, Pass::bwd) / 1e9 == Approx(266.3).epsilon(0.01));
  CHECK(model_bytes(s35, Pass::fwd, false) > 0);
}
