// GPU correctness suite of the short convolution (conv.h); exits 77 without a device.
//
//   oracle:      each path (fused; cudnn when built) against the fp64 CPU reference, forward and
//                backward, over edge shapes: one token, tiles of 256 tokens cut mid-way, D 64 /
//                128 / 256, a conv bias, x and dx as strided views (rows padded)
//   agreement:   fused against cudnn at a larger shape
//   determinism: two fused backward runs give bit-identical outputs
// Outputs are poisoned with NaN before each run; errors are relative L2 norms per output.
// `--quick` runs a small subset (CTest).
#include "conv_bench.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <cuda_runtime.h>

using namespace qr::gdn;

namespace {

constexpr double kTol = 1e-2; // bf16 outputs: ~3e-3 expected

int g_failures = 0;

void report(const std::string& suite, const std::string& what, const std::string& out,
            const Error& e, double tol) {
  const bool ok = e.ok(tol);
  g_failures += !ok;
  std::printf("%-11s %-44s %-9s rel_l2 %.3e  max_abs %.3e  nonfinite %zu  (tol %.0e) %s\n",
              suite.c_str(), what.c_str(), out.c_str(), e.rel_l2, e.max_abs, e.non_finite, tol,
              ok ? "ok" : "FAIL");
  std::fflush(stdout);
}

struct Case {
  Shape s;
  bool bias;
  int pad;
};

std::string describe(const Case& c) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "B%d T%d Hk%d Hv%d D%d%s%s", c.s.batch, c.s.seq_len, c.s.key_heads,
                c.s.value_heads, c.s.head_dim_k, c.bias ? " bias" : "", c.pad ? " strided" : "");
  return buf;
}

Shape shape(int b, int t, int hk, int hv, int d) {
  return {b, t, hk, hv, d, d};
}

bool prepare(conv::ConvProblem& p, const Case& c, const std::vector<const conv::Backend*>& bes) {
  size_t ws = 0;
  for (const conv::Backend* b : bes)
    ws = std::max({ws, b->workspace_bytes(c.s, Pass::fwd), b->workspace_bytes(c.s, Pass::bwd)});
  std::string e = p.init(c.s, c.bias, 7, c.pad);
  if (e.empty())
    e = p.ensure_workspace(ws);
  if (!e.empty()) {
    std::printf("ERROR setup %s: %s\n", describe(c).c_str(), e.c_str());
    ++g_failures;
    return false;
  }
  return true;
}

void oracle_suite(const std::vector<Case>& cases, const std::vector<const conv::Backend*>& bes) {
  for (const Case& c : cases) {
    conv::ConvProblem p;
    if (!prepare(p, c, bes))
      continue;
    const conv::cpu::Inputs in = p.to_cpu();
    const auto ref_f = conv::reference_outputs(conv::cpu::forward(in));
    const auto ref_b = conv::reference_outputs(conv::cpu::backward(in, p.grads_to_cpu()));
    for (const conv::Backend* be : bes)
      for (bool bwd : {false, true}) {
        if (std::string why = be->unsupported_bwd(p.bwd_args()); bwd && !why.empty()) {
          std::printf("%-11s %-44s backward skipped: %s\n", "oracle",
                      (be->name() + " " + describe(c)).c_str(), why.c_str());
          continue;
        }
        std::map<std::string, std::vector<double>> got;
        if (std::string e = conv::run_and_read(*be, p, bwd, nullptr, got); !e.empty()) {
          std::printf("ERROR %s %s: %s\n", be->name().c_str(), describe(c).c_str(), e.c_str());
          ++g_failures;
          continue;
        }
        for (const auto& [name, data] : got)
          report("oracle", be->name() + " " + describe(c), name,
                 compare(data, (bwd ? ref_b : ref_f).at(name)), kTol);
      }
  }
}

void agreement_suite(const Case& c, const conv::Backend& fused, const conv::Backend& cudnn) {
  conv::ConvProblem p;
  if (!prepare(p, c, {&fused, &cudnn}))
    return;
  for (bool bwd : {false, true}) {
    std::map<std::string, std::vector<double>> a, b;
    std::string e = conv::run_and_read(cudnn, p, bwd, nullptr, a);
    if (e.empty())
      e = conv::run_and_read(fused, p, bwd, nullptr, b);
    if (!e.empty()) {
      std::printf("ERROR agreement %s: %s\n", describe(c).c_str(), e.c_str());
      ++g_failures;
      return;
    }
    for (const auto& [name, data] : b)
      report("agreement", "fused vs cudnn " + describe(c), name, compare(data, a.at(name)),
             2 * kTol);
  }
}

void determinism_suite(const Case& c, const conv::Backend& be) {
  conv::ConvProblem p;
  if (!prepare(p, c, {&be}))
    return;
  for (bool bwd : {false, true}) {
    std::map<std::string, std::vector<double>> a, b;
    std::string e = conv::run_and_read(be, p, bwd, nullptr, a);
    if (e.empty())
      e = conv::run_and_read(be, p, bwd, nullptr, b);
    if (!e.empty()) {
      std::printf("ERROR determinism: %s\n", e.c_str());
      ++g_failures;
      return;
    }
    for (const auto& [name, data] : a) {
      const bool same = data.size() == b[name].size() &&
                        std::memcmp(data.data(), b[name].data(), data.size() * 8) == 0;
      g_failures += !same;
      std::printf("%-11s %-44s %-9s %s\n", "determinism", (be.name() + " " + describe(c)).c_str(),
                  name.c_str(), same ? "bit-identical ok" : "DIFFERS FAIL");
    }
  }
}

} // namespace

int main(int argc, char** argv) {
  const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
  DeviceInfo dev;
  std::string name;
  if (!device_info(dev, name).empty()) {
    std::fprintf(stderr, "conv-gpu-tests: no CUDA device (skipping)\n");
    return 77;
  }
  std::printf("conv-gpu-tests on %s (sm_%d%d)%s%s\n", name.c_str(), dev.major, dev.minor,
              quick ? " --quick" : "", conv::have_cudnn() ? "" : " (built without cuDNN)");
  const std::unique_ptr<conv::Backend> fused = conv::make_fused_backend();
  const std::unique_ptr<conv::Backend> cudnn = conv::make_cudnn_backend();
  std::vector<const conv::Backend*> bes = {fused.get()};
  if (cudnn)
    bes.push_back(cudnn.get());

  if (quick) {
    oracle_suite({{shape(1, 300, 1, 2, 128), true, 0}, {shape(2, 37, 2, 2, 64), false, 8}}, bes);
    determinism_suite({shape(1, 600, 2, 4, 128), true, 0}, *fused);
  } else {
    oracle_suite({{shape(1, 1, 1, 1, 128), false, 0},
                  {shape(1, 3, 1, 2, 64), true, 0},
                  {shape(2, 300, 2, 4, 128), false, 0},
                  {shape(2, 300, 2, 4, 128), true, 0},
                  {shape(1, 513, 1, 2, 128), true, 16},
                  {shape(3, 100, 1, 3, 64), false, 0},
                  {shape(1, 260, 1, 1, 256), true, 0},
                  {shape(1, 1024, 4, 8, 128), false, 0}},
                 bes);
    if (cudnn)
      agreement_suite({shape(2, 2048, 4, 8, 128), false, 0}, *fused, *cudnn);
    determinism_suite({shape(2, 1000, 2, 4, 128), true, 0}, *fused);
  }
  std::printf("%s: %d failure(s)\n", g_failures ? "FAILED" : "PASSED", g_failures);
  return g_failures ? 1 : 0;
}
