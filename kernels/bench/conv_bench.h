// gdn-bench --op conv: the short convolution's device problem, checked against the fp64 CPU
// reference (docs/gdn/bench.md, "Short convolution"); the op the runner runs is in conv_bench.cu.
// ConvProblem is also the device test problem of conv-gpu-tests.
#pragma once

#include "conv.h"
#include "harness.h"

#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace qr::gdn::conv {

// Dense random inputs, except that x and dx may have rows padded to C + x_pad elements (a strided
// view, as when x is a slice of in_proj's output).
struct ConvProblem {
  Shape shape;
  bool bias = false;
  int x_pad = 0;
  DeviceBuffer x, weight, bias_buf, a, b, A_log, dt_bias, dq, dk, dv, dg, dbeta; // inputs
  DeviceBuffer q, k, v, g, beta;                                                 // forward
  DeviceBuffer dx, dweight, dbias, da, db, dA_log, ddt_bias;                     // backward
  DeviceBuffer workspace;

  std::string init(const Shape& s, bool with_bias, uint64_t seed, int pad = 0);
  FwdArgs fwd_args() const;
  BwdArgs bwd_args() const;
  std::string poison(bool bwd); // NaN into the outputs of the pass
  std::string ensure_workspace(size_t bytes);
  // The inputs (and the output gradients) exactly as the device holds them, as float64.
  cpu::Inputs to_cpu() const;
  cpu::OutGrads grads_to_cpu() const;
  // Named outputs of a pass, read back densely as float64.
  std::map<std::string, std::vector<double>> read(bool bwd) const;
};

// The CPU reference's outputs under the same names as ConvProblem::read.
std::map<std::string, std::vector<double>> reference_outputs(const cpu::Forward& f);
std::map<std::string, std::vector<double>> reference_outputs(const cpu::Grads& g);

// Runs a pass on poisoned outputs and reads them back; error text, empty on success.
std::string run_and_read(const Backend& be, ConvProblem& p, bool bwd, Stream st,
                         std::map<std::string, std::vector<double>>& got);

} // namespace qr::gdn::conv
