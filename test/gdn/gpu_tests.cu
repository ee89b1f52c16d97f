// GPU correctness suite for the GDN backends (run on a GPU machine; exits 77 without a device).
//
//   oracle:      every backend against the float64 CPU reference (cpu_reference.h)
//   agreement:   `chunked` and `fused` against `reference` at larger shapes
//   fd:          every gradient of both backends against central differences of the float64 loss
//                sum(do . o) + sum(dht . ht) at the same inputs, on sampled elements
//   stability:   no NaN / Inf and agreement for large |g| and long sequences without decay
//   determinism: two runs of each non-reference backend give bit-identical outputs
//   varlen:      packed sequences (cu_seqlens) against the CPU oracle or `reference`, and `fused`
//                against its own dense runs of each sequence alone, which must match bit for bit
//                (the chunks and their math are the same) unless the packed run splits its row
//                into segments (sm80/fused_split.cu); `chunked` must refuse them
//   split:       shapes whose few (batch, value head) pairs make `fused` split each row into
//                segments (dispatch.h, split_segments) sit in the oracle, agreement, stability,
//                determinism and varlen suites: lengths off the chunk and segment grid, initial
//                and final states, strong decay and none, gates slow enough that the segment
//                passes walk part of their segment or all of it, one long sequence among many short
//   checks:      the device-side input checks (Backend::input_error): a positive gate, bad
//                cu_seqlens, a saved context from another shape or options, or none at all
// A backend that keeps a saved context (fused) is checked on both paths: training (the forward
// keeps the context, the backward reads it) and recompute (self-contained backward).
// Every output buffer is poisoned with NaN before each run. Errors are relative L2 norms
// |x - ref| / |ref| per output. `--quick` runs a small subset (CTest and compute-sanitizer).
#include "cpu_reference.h"
#include "fused_workspace.cuh"
#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>
#include <map>
#include <random>
#include <string>

using namespace qr::gdn;

namespace {

// Tolerances on the relative L2 error. `reference` computes in fp32 and rounds bf16 outputs;
// `chunked` and `fused` use bf16 tensor-core operands (as FLA does), so they are about an order
// looser.
constexpr double kTolReference = 5e-3;
constexpr double kTolChunked = 2e-2;
constexpr double kTolFdReference = 1e-2;
constexpr double kTolFdChunked = 3e-2;

int g_failures = 0;

double tol_for(const std::string& backend, bool fd) {
  return backend == "reference" ? (fd ? kTolFdReference : kTolReference)
                                : (fd ? kTolFdChunked : kTolChunked);
}

void report(const std::string& suite, const std::string& what, const std::string& output,
            const Error& e, double tol) {
  const bool ok = e.ok(tol);
  g_failures += !ok;
  std::printf("%-11s %-44s %-6s rel_l2 %.3e  max_abs %.3e  nonfinite %zu  (tol %.0e) %s\n",
              suite.c_str(), what.c_str(), output.c_str(), e.rel_l2, e.max_abs, e.non_finite, tol,
              ok ? "ok" : "FAIL");
  std::fflush(stdout);
}

std::string describe(const Shape& s, const Options& o, const InputSpec& in) {
  char buf[160], gates[32] = "";
  if (in.g_scale != 1.f)
    std::snprintf(gates, sizeof gates, " g*%g", in.g_scale);
  std::snprintf(buf, sizeof buf, "B%d T%d Hk%d Hv%d%s%s%s%s", s.batch, s.seq_len, s.key_heads,
                s.value_heads, s.varlen() ? (" N" + std::to_string(s.sequences)).c_str() : "",
                o.l2norm_qk ? "" : " no-l2", in.initial_state ? " states" : "", gates);
  return buf;
}

using Outputs = std::map<std::string, std::vector<double>>;

// The paths a backend is checked on: training (the forward keeps its context, the backward reads
// it) and, for a backend that keeps one, also recompute (inference forward, self-contained
// backward).
std::vector<bool> paths(const Backend& be, const Shape& s) {
  return be.saved_bytes(s) ? std::vector<bool>{true, false} : std::vector<bool>{true};
}
std::string path_name(const Backend& be, bool train) {
  return be.name() + (train ? "" : " recompute");
}

// Outputs and the training context are NaN-poisoned before the pass that writes them.
bool run(const Backend& be, Problem& p, Outputs& got, bool train) {
  for (bool bwd : {false, true}) {
    std::string e = p.poison_outputs();
    if (e.empty() && train && !bwd)
      e = p.poison_saved();
    const Run r =
        bwd ? (train ? Run::bwd : Run::bwd_recompute) : (train ? Run::fwd_train : Run::fwd);
    if (e.empty())
      e = run_pass(be, p, r, nullptr);
    if (cudaError_t ce = cudaDeviceSynchronize(); e.empty() && ce != cudaSuccess)
      e = cudaGetErrorString(ce);
    if (e.empty()) // valid inputs: the device-side checks must pass
      e = be.input_error(p.workspace.get(), nullptr);
    if (!e.empty()) {
      std::printf("ERROR %s: %s\n", path_name(be, train).c_str(), e.c_str());
      ++g_failures;
      return false;
    }
    for (const Output& o : bwd ? backward_outputs() : forward_outputs())
      got[o.name] = download(p.*o.buf, o.type);
  }
  return true;
}

bool setup(Problem& p, const Shape& s, const Options& o, const InputSpec& in,
           const std::vector<std::unique_ptr<Backend>>& bes) {
  size_t ws = 0, ctx = 0;
  for (const auto& b : bes) {
    ws = std::max<size_t>({ws, b->workspace_bytes(s, Pass::fwd), b->workspace_bytes(s, Pass::bwd)});
    ctx = std::max(ctx, b->saved_bytes(s));
  }
  std::string e = p.init(s, o, in);
  if (e.empty())
    e = p.ensure_workspace(ws);
  if (e.empty())
    e = p.ensure_saved(ctx);
  if (!e.empty()) {
    std::printf("ERROR setup %s: %s\n", describe(s, o, in).c_str(), e.c_str());
    ++g_failures;
    return false;
  }
  return true;
}

Outputs cpu_outputs(const Problem& p) {
  const cpu::Inputs in = p.to_cpu();
  const std::vector<double> d_o = download(p.d_o, DType::bf16), dht = download(p.dht, DType::f32);
  const cpu::Forward f = cpu::forward(in);
  const cpu::Grads g = cpu::backward(in, d_o, dht);
  return {{"o", f.o},   {"ht", f.ht}, {"dq", g.dq},       {"dk", g.dk},
          {"dv", g.dv}, {"dg", g.dg}, {"dbeta", g.dbeta}, {"dh0", g.dh0}};
}

struct Case {
  Shape s;
  bool l2, states;
  float g_scale = 1.f;
};

Shape shape(int b, int t, int hk, int hv) {
  return {b, t, hk, hv, 128, 128};
}

void oracle_suite(const std::vector<Case>& cases,
                  const std::vector<std::unique_ptr<Backend>>& bes) {
  for (const Case& c : cases) {
    Problem p;
    Options o;
    o.l2norm_qk = c.l2;
    InputSpec in;
    in.initial_state = in.d_final_state = c.states;
    in.g_scale = c.g_scale;
    in.qk_scale = c.l2 ? 1.f : 1.f / std::sqrt(128.f);
    in.seed = uint64_t(c.s.seq_len) * 7 + c.s.value_heads;
    if (!setup(p, c.s, o, in, bes))
      continue;
    const Outputs ref = cpu_outputs(p);
    for (const auto& be : bes)
      for (bool train : paths(*be, c.s)) {
        Outputs got;
        if (!run(*be, p, got, train))
          continue;
        for (const auto& [name, data] : got)
          report("oracle", path_name(*be, train) + " " + describe(c.s, o, in), name,
                 compare(data, ref.at(name)), tol_for(be->name(), false));
      }
  }
}

// Every backend after the first against the first (reference).
void agreement_suite(const std::vector<Case>& cases,
                     const std::vector<std::unique_ptr<Backend>>& bes, const char* suite) {
  for (const Case& c : cases) {
    Problem p;
    Options o;
    o.l2norm_qk = c.l2;
    InputSpec in;
    in.initial_state = in.d_final_state = c.states;
    in.g_scale = c.g_scale;
    in.qk_scale = c.l2 ? 1.f : 1.f / std::sqrt(128.f);
    in.seed = uint64_t(c.s.seq_len) * 13 + c.s.key_heads;
    if (!setup(p, c.s, o, in, bes))
      continue;
    Outputs ref;
    if (!run(*bes.front(), p, ref, true))
      continue;
    for (const auto& [name, data] : ref) // the oracle itself must stay finite
      if (size_t bad = count_non_finite(data)) {
        std::printf("%-11s reference %s %s: %zu non-finite FAIL\n", suite,
                    describe(c.s, o, in).c_str(), name.c_str(), bad);
        ++g_failures;
      }
    for (size_t i = 1; i < bes.size(); ++i)
      for (bool train : paths(*bes[i], c.s)) {
        Outputs got;
        if (!run(*bes[i], p, got, train))
          continue;
        for (const auto& [name, data] : got)
          report(suite, path_name(*bes[i], train) + " " + describe(c.s, o, in), name,
                 compare(data, ref.at(name)), tol_for(bes[i]->name(), false));
      }
  }
}

// Gradients against central differences of the float64 loss at the device's (exact) inputs.
void fd_suite(const std::vector<std::unique_ptr<Backend>>& bes) {
  const Shape s = shape(1, 70, 1, 2);
  Problem p;
  Options o;
  InputSpec in;
  in.initial_state = in.d_final_state = true;
  in.seed = 99;
  if (!setup(p, s, o, in, bes))
    return;
  cpu::Inputs x = p.to_cpu();
  const std::vector<double> w_o = download(p.d_o, DType::bf16), w_ht = download(p.dht, DType::f32);
  struct Input {
    const char* grad;
    std::vector<double>* x;
  };
  const Input inputs[] = {{"dq", &x.q}, {"dk", &x.k},       {"dv", &x.v},
                          {"dg", &x.g}, {"dbeta", &x.beta}, {"dh0", &x.h0}};
  std::mt19937 rng(5);
  std::map<std::string, std::vector<size_t>> idx;
  std::map<std::string, std::vector<double>> fd;
  for (const Input& i : inputs) {
    std::uniform_int_distribution<size_t> pick(0, i.x->size() - 1);
    for (int n = 0; n < 24; ++n) {
      const size_t j = pick(rng);
      const double x0 = (*i.x)[j], eps = 1e-5;
      (*i.x)[j] = x0 + eps;
      const double lp = cpu::loss(x, w_o, w_ht);
      (*i.x)[j] = x0 - eps;
      const double lm = cpu::loss(x, w_o, w_ht);
      (*i.x)[j] = x0;
      idx[i.grad].push_back(j);
      fd[i.grad].push_back((lp - lm) / (2 * eps));
    }
  }
  for (const auto& be : bes)
    for (bool train : paths(*be, s)) {
      Outputs got;
      if (!run(*be, p, got, train))
        continue;
      for (const Input& i : inputs) {
        std::vector<double> sampled;
        for (size_t j : idx[i.grad])
          sampled.push_back(got[i.grad][j]);
        report("fd", path_name(*be, train) + " " + describe(s, o, in), i.grad,
               compare(sampled, fd[i.grad]), tol_for(be->name(), true));
      }
    }
}

void determinism_suite(const Shape& s, const std::vector<std::unique_ptr<Backend>>& bes) {
  Problem p;
  Options o;
  InputSpec in;
  in.initial_state = in.d_final_state = true;
  if (!setup(p, s, o, in, bes))
    return;
  for (size_t i = 1; i < bes.size(); ++i)
    for (bool train : paths(*bes[i], s)) {
      Outputs a, b;
      if (!run(*bes[i], p, a, train) || !run(*bes[i], p, b, train))
        continue;
      for (const auto& [name, data] : a) {
        const bool same = data.size() == b[name].size() &&
                          std::memcmp(data.data(), b[name].data(), data.size() * 8) == 0;
        g_failures += !same;
        std::printf("%-11s %-44s %-6s %s\n", "determinism",
                    (path_name(*bes[i], train) + " " + describe(s, o, in)).c_str(), name.c_str(),
                    same ? "bit-identical ok" : "DIFFERS FAIL");
      }
    }
}

// Packed lengths for the varlen cases: `n` lengths from 1 to `max_len`, with single tokens and
// lengths around the 64-token chunk among them.
std::vector<int> ragged(int n, int max_len, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(1, max_len);
  const int fixed[] = {1, 64, 65, 63, 1, 130, 2};
  std::vector<int> v;
  for (int i = 0; i < n; ++i)
    v.push_back(i < 7 && fixed[i] <= max_len ? fixed[i] : len(rng));
  return v;
}

// One long sequence among `n` short ones (1 to `max_short` tokens), at position `at`.
std::vector<int> long_among_short(int long_len, int n, int max_short, int at, unsigned seed) {
  std::vector<int> v = ragged(n, max_short, seed);
  v.insert(v.begin() + at, long_len);
  return v;
}

Shape varlen_shape(const std::vector<int>& lens, int hk, int hv) {
  int T = 0;
  for (int l : lens)
    T += l;
  Shape s = shape(1, T, hk, hv);
  s.sequences = int(lens.size());
  return s;
}

// Fills all of dst from src, starting at src's element `at` (of elem_bytes each).
std::string copy_slice(DeviceBuffer& dst, const DeviceBuffer& src, size_t at, size_t elem_bytes) {
  if (!dst.bytes())
    return {};
  const cudaError_t e = cudaMemcpy(dst.get(), static_cast<const char*>(src.get()) + at * elem_bytes,
                                   dst.bytes(), cudaMemcpyDeviceToDevice);
  return e == cudaSuccess ? std::string() : cudaGetErrorString(e);
}

// `fused` on sequence i of the packed problem alone, as a dense batch-1 run: its outputs.
bool dense_run_of(const Backend& be, const Problem& packed, int i, const InputSpec& spec,
                  bool train, Outputs& got) {
  const Shape& ps = packed.shape;
  const int t0 = packed.cu_host[i], t1 = packed.cu_host[i + 1];
  const Shape s = shape(1, t1 - t0, ps.key_heads, ps.value_heads);
  InputSpec in = spec;
  in.seq_lens.clear();
  Problem p;
  std::string e = p.init(s, packed.opt, in);
  const size_t qk = size_t(ps.key_heads) * 128, vd = size_t(ps.value_heads) * 128;
  const size_t st = size_t(ps.value_heads) * 128 * 128;
  for (auto [dst, src, at, eb] : {std::tuple{&p.q, &packed.q, t0 * qk, 2},
                                  {&p.k, &packed.k, t0 * qk, 2},
                                  {&p.v, &packed.v, t0 * vd, 2},
                                  {&p.d_o, &packed.d_o, t0 * vd, 2},
                                  {&p.g, &packed.g, size_t(t0) * ps.value_heads, 4},
                                  {&p.beta, &packed.beta, size_t(t0) * ps.value_heads, 2},
                                  {&p.h0, &packed.h0, i * st, 4},
                                  {&p.dht, &packed.dht, i * st, 4}})
    if (e.empty())
      e = copy_slice(*dst, *src, at, size_t(eb));
  if (e.empty())
    e = p.ensure_workspace(
        std::max(be.workspace_bytes(s, Pass::fwd), be.workspace_bytes(s, Pass::bwd)));
  if (e.empty())
    e = p.ensure_saved(be.saved_bytes(s));
  if (!e.empty()) {
    std::printf("ERROR dense run of sequence %d: %s\n", i, e.c_str());
    ++g_failures;
    return false;
  }
  return run(be, p, got, train);
}

// The rows [t0, t1) of a [T, ...] output, or state i of an [N, ...] one.
std::vector<double> part(const std::vector<double>& x, size_t units, size_t from, size_t to) {
  const size_t per = x.size() / units;
  return {x.begin() + ptrdiff_t(from * per), x.begin() + ptrdiff_t(to * per)};
}

void varlen_suite(const std::vector<std::vector<int>>& cases, int hk, int hv, bool oracle,
                  const std::vector<std::unique_ptr<Backend>>& bes) {
  for (const std::vector<int>& lens : cases) {
    const Shape s = varlen_shape(lens, hk, hv);
    Problem p;
    Options o;
    InputSpec in;
    in.initial_state = in.d_final_state = true;
    in.seq_lens = lens;
    in.seed = uint64_t(s.seq_len) * 17 + s.sequences;
    for (const auto& be : bes) // chunked must refuse packed sequences, not compute them
      if (be->name() == "chunked") {
        const std::string why = be->unsupported(DeviceInfo{9, 0, 132}, s);
        g_failures += why.empty();
        std::printf("%-11s chunked refuses %s: %s\n", "varlen", describe(s, o, in).c_str(),
                    why.empty() ? "FAIL" : why.c_str());
      }
    if (!setup(p, s, o, in, bes))
      continue;
    Outputs ref;
    if (oracle)
      ref = cpu_outputs(p);
    else if (!run(*bes.front(), p, ref, true))
      continue;
    for (const auto& be : bes) {
      if (be->name() == "chunked" || (!oracle && be == bes.front()))
        continue;
      for (bool train : paths(*be, s)) {
        Outputs got;
        if (!run(*be, p, got, train))
          continue;
        for (const auto& [name, data] : got)
          report("varlen",
                 path_name(*be, train) + " " + describe(s, o, in) +
                     (oracle ? " vs cpu" : " vs reference"),
                 name, compare(data, ref.at(name)), tol_for(be->name(), false));
        if (be->name() != "fused" || s.sequences > 64)
          continue;
        if (fused::split_segments(s) > 1) { // the dense runs cut other segments
          std::printf("%-11s %-44s split into %d segments: no bit comparison with dense runs\n",
                      "varlen", (path_name(*be, train) + " " + describe(s, o, in)).c_str(),
                      fused::split_segments(s));
          continue;
        }
        // Each sequence alone, dense: the same chunks, so the same bits.
        const size_t T = size_t(s.seq_len), N = size_t(s.sequences);
        size_t differ = 0;
        for (int i = 0; i < s.sequences; ++i) {
          Outputs one;
          if (!dense_run_of(*be, p, i, in, train, one))
            break;
          const size_t t0 = p.cu_host[i], t1 = p.cu_host[i + 1];
          for (const auto& [name, data] : one) {
            const bool state = name == "ht" || name == "dh0";
            const std::vector<double> mine =
                state ? part(got[name], N, i, i + 1) : part(got[name], T, t0, t1);
            differ += mine.size() != data.size() ||
                      std::memcmp(mine.data(), data.data(), data.size() * 8) != 0;
          }
        }
        g_failures += differ != 0;
        std::printf("%-11s %-44s every output of every sequence as its dense run: %s\n", "varlen",
                    (path_name(*be, train) + " " + describe(s, o, in)).c_str(),
                    differ ? "DIFFERS FAIL" : "bit-identical ok");
      }
    }
  }
}

// The input checks: each bad input is reported by input_error, and a clean run reports nothing.
void checks_suite(const std::vector<std::unique_ptr<Backend>>& bes) {
  const Backend* fused = nullptr;
  for (const auto& be : bes)
    if (be->name() == "fused")
      fused = be.get();
  if (!fused)
    return;
  auto expect = [](const char* what, const std::string& why, const char* needle) {
    const bool ok = why.find(needle) != std::string::npos;
    g_failures += !ok;
    std::printf("%-11s %-44s %s: %s\n", "checks", what, ok ? "ok" : "FAIL",
                why.empty() ? "(no error)" : why.c_str());
  };
  const Shape s = shape(1, 130, 1, 2);
  Problem p;
  Options o;
  InputSpec in;
  if (!setup(p, s, o, in, bes))
    return;
  // A positive gate: g[70, head 1] = 0.5.
  const float pos = 0.5f;
  cudaMemcpy(p.g.as<float>() + 70 * 2 + 1, &pos, 4, cudaMemcpyHostToDevice);
  std::string e = run_pass(*fused, p, Run::fwd, nullptr);
  expect("fused fwd, one g > 0", e.empty() ? fused->input_error(p.workspace.get(), nullptr) : e,
         "g must be <= 0");
  e = run_pass(*fused, p, Run::bwd_recompute, nullptr);
  expect("fused bwd recompute, one g > 0",
         e.empty() ? fused->input_error(p.workspace.get(), nullptr) : e, "g must be <= 0");
  const float nan = NAN;
  cudaMemcpy(p.g.as<float>() + 70 * 2 + 1, &nan, 4, cudaMemcpyHostToDevice);
  e = run_pass(*fused, p, Run::fwd, nullptr);
  expect("fused fwd, one g NaN", e.empty() ? fused->input_error(p.workspace.get(), nullptr) : e,
         "g must be <= 0");
  const float neg = -0.25f;
  cudaMemcpy(p.g.as<float>() + 70 * 2 + 1, &neg, 4, cudaMemcpyHostToDevice);
  e = run_pass(*fused, p, Run::fwd, nullptr);
  const std::string clean = e.empty() ? fused->input_error(p.workspace.get(), nullptr) : e;
  g_failures += !clean.empty();
  std::printf("%-11s %-44s %s\n", "checks", "fused fwd, g <= 0 again: no error",
              clean.empty() ? "ok" : ("FAIL " + clean).c_str());
  // A context never written, then one from other options.
  p.poison_saved();
  e = run_pass(*fused, p, Run::bwd, nullptr);
  expect("fused bwd, context never written",
         e.empty() ? fused->input_error(p.workspace.get(), nullptr) : e, "not written");
  e = run_pass(*fused, p, Run::fwd_train, nullptr);
  p.opt.l2norm_qk = false;
  if (e.empty())
    e = run_pass(*fused, p, Run::bwd, nullptr);
  expect("fused bwd, context of other options",
         e.empty() ? fused->input_error(p.workspace.get(), nullptr) : e, "another shape");
  p.opt.l2norm_qk = true;
  // Bad offsets: sequence 1 ends before it starts.
  const Shape vs = varlen_shape({50, 30, 50}, 1, 2);
  Problem q;
  InputSpec vin;
  vin.seq_lens = {50, 30, 50};
  if (!setup(q, vs, o, vin, bes))
    return;
  const int32_t bad[] = {0, 90, 80, 130};
  cudaMemcpy(q.cu_seqlens.get(), bad, sizeof bad, cudaMemcpyHostToDevice);
  for (const auto& be : bes) {
    if (!be->unsupported(DeviceInfo{9, 0, 132}, vs).empty())
      continue;
    for (Run r : {Run::fwd, Run::bwd_recompute}) {
      e = run_pass(*be, q, r, nullptr);
      expect((be->name() + (r == Run::fwd ? " fwd" : " bwd") + ", bad cu_seqlens").c_str(),
             e.empty() ? be->input_error(q.workspace.get(), nullptr) : e, "cu_seqlens");
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  DeviceInfo dev;
  std::string name;
  if (!device_info(dev, name).empty()) {
    std::fprintf(stderr, "gdn-gpu-tests: no CUDA device (skipping)\n");
    return 77;
  }
  std::printf("gdn-gpu-tests on %s (sm_%d%d)%s\n", name.c_str(), dev.major, dev.minor,
              quick ? " --quick" : "");
  std::vector<std::unique_ptr<Backend>> bes;
  for (auto& b : all_backends())
    if (b->unsupported(dev, shape(1, 64, 1, 1)).empty())
      bes.push_back(std::move(b));

  if (quick) {
    oracle_suite({{shape(1, 64, 1, 1), true, false}, {shape(1, 100, 1, 2), true, true}}, bes);
    // (1,70,4,100): 200 chunked scan CTAs, more than an H200's 132 SMs, so chunked's scans take
    // their one-stage path, and 100 value heads fill 3/4 of the SMs, so fused's scans take 128
    // value columns per CTA; (1,130,1,4) takes fused's 64-column path.
    // (1,4100,1,1): 65 chunks, one value head: fused splits it into 4 segments.
    agreement_suite({{shape(1, 130, 1, 4), true, true},
                     {shape(1, 70, 4, 100), true, true},
                     {shape(1, 4100, 1, 1), true, true}},
                    bes, "agreement");
    determinism_suite(shape(1, 130, 1, 2), bes);
    // The second: 4 segments, cutting the 3000-token sequence twice.
    varlen_suite({{1, 65, 3, 130, 64, 1, 7}, {3000, 5, 70, 64, 1, 1000, 33}}, 1, 1, true, bes);
    checks_suite(bes);
  } else {
    oracle_suite({{shape(1, 64, 1, 1), true, false},
                  {shape(2, 200, 2, 4), true, true},
                  {shape(1, 1000, 2, 8), true, true},
                  {shape(1, 130, 2, 2), false, true},
                  {shape(1, 4097, 1, 2), true, false},
                  // split into 4 segments of 16 chunks; gates of about -2.6 a chunk put the
                  // segment passes' gate horizon (fused_algorithm.cuh) 7 chunks in
                  {shape(1, 4097, 1, 2), true, true, 0.05f}},
                 bes);
    agreement_suite({{shape(2, 4097, 4, 8), true, true},
                     {shape(3, 777, 2, 2), true, true},
                     {shape(1, 2048, 4, 16), true, false},
                     {shape(2, 1000, 4, 4), false, false},
                     {shape(2, 300, 16, 64), true, true}, // chunked one-stage, fused 128 columns
                     // fused's backward scans side by side at 128 columns (2 x 48 CTAs; the
                     // 64-column grid, 2 x 96, would not fit one wave of an H200)
                     {shape(1, 300, 4, 48), true, true},
                     {shape(1, 8200, 2, 4), true, true},    // fused: 8 segments
                     {shape(2, 5000, 1, 3), false, true},   // fused: 4 segments per batch row
                     {shape(1, 16384, 16, 32), true, true}, // fused: 4 segments, 128 columns
                     // fused's bwd_intra: 195 work items of one value head each for 132 SMs, so
                     // a CTA's second item streams in during its first one's tail
                     {shape(3, 4100, 1, 1), true, true}},
                    bes, "agreement");
    fd_suite(bes);
    agreement_suite({{shape(1, 1000, 2, 4), true, true, 30.f}, // log decay down to ~ -100
                     {shape(1, 4500, 1, 2), true, true, 30.f}, // the same, split
                     {shape(1, 16384, 1, 2), true, true, 0.f}, // no decay, 16K tokens, split
                     // split, slow decay: the gate horizon mid-segment, and beyond it (exact)
                     {shape(1, 8200, 2, 4), true, true, 0.05f},
                     {shape(1, 8200, 2, 4), true, true, 0.01f}},
                    bes, "stability");
    determinism_suite(shape(2, 1000, 2, 4), bes);
    determinism_suite(shape(1, 8200, 2, 4), bes); // split
    varlen_suite({{1, 65, 3, 130, 64, 1, 7}, ragged(40, 300, 1)}, 2, 4, true, bes);
    varlen_suite({ragged(16, 2000, 2), {4096, 1, 4095}}, 4, 16, false, bes);
    varlen_suite({ragged(16, 500, 7)}, 16, 64, false, bes); // sequence groups, no split
    // Split packed rows: one sequence alone, a long one among short ones (first, in the middle).
    varlen_suite({{5000}, long_among_short(6000, 60, 100, 0, 5)}, 1, 2, true, bes);
    varlen_suite({long_among_short(12000, 200, 150, 90, 6), {4000, 4000, 4001}}, 4, 16, false, bes);
    varlen_suite({ragged(1000, 40, 3), ragged(10000, 3, 4)}, 1, 2, false, bes);
    checks_suite(bes);
  }
  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "PASSED", g_failures);
  return g_failures ? 1 : 0;
}
