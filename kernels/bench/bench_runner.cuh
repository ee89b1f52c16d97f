// gdn-bench's one runner (bench_runner.cu) over an op (BenchOp): the op sets up each shape and
// checks and times our backends there; the runner does the rest for every op alike: the options,
// the device, the timing of a mode, the peers through the Python driver on the very same inputs
// and their check, and the report (bench_report.h) with its JSON and plot.
#pragma once

#include "bench_options.h"
#include "bench_report.h"
#include "harness.h"

#include <functional>
#include <map>
#include <ostream>
#include <string>
#include <vector>

namespace qr::gdn {

// What a run has while it goes: the options, the device, the stream and timer, and what the
// report will show.
struct RunContext {
  const BenchOptions& o;
  const OpInfo& op;
  DeviceInfo dev;
  Stream stream = nullptr;
  RunTimer timer;
  std::ostream& err;
  std::vector<CheckRow> checks;
  std::vector<BenchResult> results;
  bool failed = false;

  RunContext(const BenchOptions& opts, const OpInfo& info, std::ostream& e)
      : o(opts), op(info), err(e) {}
  // "PREFIX: " for progress lines on `err`.
  std::ostream& say() { return err << op.prefix << ": "; }
  // Times one mode of ours: `iters` eager runs of `enqueue` with the L2 flushed before each, then
  // the same captured once into a CUDA graph and replayed. Returns why the eager runs failed;
  // a graph that cannot be captured or replayed is said in out.graph_error.
  std::string time_mode(const std::string& mode, const std::function<std::string()>& enqueue,
                        ModeResult& out);
  // A row of the correctness table for `res`, whose worst error it updates.
  void check(BenchResult& res, const std::string& path, const std::string& shape,
             const std::string& output, const Error& e, bool ok);
};

// The reference outputs at one shape, for the peers' check.
struct ShapeReference {
  std::map<std::string, std::vector<double>> outputs;
  std::string error; // why there are none
};

class BenchOp {
public:
  virtual ~BenchOp() = default;
  virtual const OpInfo& info() const = 0;
  // After the device is known: builds our backends (said on ctx.err when one is missing).
  virtual void start(RunContext& ctx) = 0;
  // Shape `si`: its inputs, written for the driver as the tensor files STEM (unless `stem` is
  // empty; `input_error` says why they could not be), the reference, then each of our selected
  // backends checked against it and timed (ctx.results, ctx.checks).
  virtual void run_shape(RunContext& ctx, size_t si, const std::string& stem,
                         std::string& input_error, ShapeReference& ref) = 0;
  // Every output and gradient a peer must bring back.
  virtual std::vector<std::string> peer_outputs(const BenchOptions& o) const = 0;
  // What FLA's pinned run must show it ran ("Triton kernels"), and the note when the driver starts.
  virtual std::string fla_kernels() const = 0;
  virtual std::string driver_note() const = 0;
  // The op's part of the report: its FLOP and byte model, its peaks, the recommendation's words.
  virtual void describe(ReportSpec& spec, const BenchOptions& o) const = 0;
};

// Parses `args` for `op`, runs it and reports. The process exit code: 0 ok, 2 bad arguments or one
// of our backends failed its check, 77 no CUDA device.
int run_bench(BenchOp& op, const std::vector<std::string>& args,
              const RecipeShapeResolver& resolver, std::ostream& out, std::ostream& err);

// The ops (gdn_bench.cu, conv_bench.cu).
std::unique_ptr<BenchOp> make_gdn_op();
std::unique_ptr<BenchOp> make_conv_op();

} // namespace qr::gdn
