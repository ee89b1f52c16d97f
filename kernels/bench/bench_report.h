// What gdn-bench reports, for both ops (the runner, bench_runner.cu, fills it), in plain C++ so
// that the CPU tests cover it (test/gdn/test_bench_report.cpp): the figures' text and JSON, a
// backend's result at one shape, the peers driver's run and rows, every table, the
// recommendations, the JSON document, and its atomic write then the plot.
#pragma once

#include "bench_options.h"
#include "peers.h"

#include <algorithm>
#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

namespace qr::gdn {

using ModeResult = peers::ModeTimes;

peers::Stats stats_of(std::vector<float> ms);
// {"median": .., "min": .., "max": ..}, or null when not measured.
void json_stats(std::ostream& j, const peers::Stats& s);
std::string mb(double bytes);
std::string ms_text(double ms);
std::string ratio_text(double ms, double base);
std::string one_line(std::string s);
std::string versions_text(const std::vector<std::pair<std::string, std::string>>& v);
// A peer's training step per kernel (peers::Row::kernel_times): GPU time, share and launches.
void print_kernel_times(std::ostream& out, const std::string& title,
                        const std::vector<peers::KernelTime>& times);
void json_kernel_times(std::ostream& j, const std::vector<peers::KernelTime>& times);

// One backend at one shape: what the tables, the recommendation and the JSON say about it. Each
// bench extends it with what only it reports.
struct BenchResult {
  std::string backend;
  bool peer = false;
  size_t shape = 0;          // index into the bench's shapes
  std::string status = "ok"; // ok, unavailable, error, failed check
  std::string reason, runs, pinned;
  std::vector<std::pair<std::string, std::string>> versions;
  std::vector<peers::KernelTime> kernel_times; // a peer's training step per kernel
  std::vector<ModeResult> modes;
  double saved_bytes = -1, peak_bytes = -1, first_call_s = -1;
  double worst_rel_l2 = -1;
  std::string worst_output;
  size_t kernels = 0;         // gdn: CUDA kernels of a peer's training step (torch.profiler)
  double own_kernels_ms = -1; // conv: GPU time of a peer's own conv kernels in one training step

  const ModeResult* mode(const std::string& m) const;
  double graph_ms(const std::string& m) const;
};

// The row of the driver's results for `backend` at a shape, or null.
const peers::Row* find_row(const std::vector<peers::Row>& rows, const std::string& backend,
                           const std::string& shape_name, int batch, int seq_len, int value_heads);
// Takes what `row` says into `res`; an fla row that ran but cannot show it ran FLA's own
// `fla_kernels` becomes an error.
void take_row(BenchResult& res, const peers::Row& row, const std::string& fla_kernels);
// The driver writes modes in its order; keep the bench's.
void sort_modes(std::vector<ModeResult>& modes, const std::vector<std::string>& order);

// Starts the peers driver (argv, plus --inputs for each written input directory) and reads its
// peers.json under WORK/peers. Returns why there are no rows (empty on success); `keep_files`
// becomes true when the driver failed, since what its workers left is all there is to go on.
// `prefix` starts the lines on `err` ("gdn-bench", "gdn-bench --op conv"), `note` ends the first.
std::string run_peers_driver(std::vector<std::string> argv,
                             const std::vector<std::string>& input_dirs, const std::string& work,
                             const std::string& prefix, const std::string& backend_arg,
                             const std::string& note, std::ostream& err,
                             std::vector<peers::Row>& rows, bool& keep_files);

// A temporary folder for the driver's files (the inputs of every shape, the peers' outputs,
// peers.json), removed at the end unless `dir` was cleared to keep it.
struct ScratchDir {
  std::string dir;
  ScratchDir() = default;
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  ~ScratchDir();
};
// Creates `scratch.dir` under the system's temporary folder; false (said on `err` after `prefix`)
// when it cannot.
bool make_scratch_dir(ScratchDir& scratch, const std::string& prefix, std::ostream& err);

// By shape, then the peers (in `peer_order`) before ours (in `our_order`), as the tables read best.
template <class R>
void sort_results(std::vector<R>& results, const std::vector<std::string>& peer_order,
                  const std::vector<std::string>& our_order) {
  auto rank = [&](const R& r) {
    const auto it = std::find(peer_order.begin(), peer_order.end(), r.backend);
    return it != peer_order.end()
               ? size_t(it - peer_order.begin())
               : peer_order.size() +
                     size_t(std::find(our_order.begin(), our_order.end(), r.backend) -
                            our_order.begin());
  };
  std::stable_sort(results.begin(), results.end(), [&](const R& x, const R& y) {
    return x.shape != y.shape ? x.shape < y.shape : rank(x) < rank(y);
  });
}

// The baseline's result at shape `si` when it ran, else null.
template <class R>
const R* baseline_of(const std::vector<R>& results, const std::string& baseline, size_t si) {
  for (const R& r : results)
    if (r.shape == si && r.backend == baseline && r.status == "ok")
      return &r;
  return nullptr;
}

// At shape `si`, of the results that passed and timed a training step (leaving out backend
// `skip`): the fastest, and the fastest peer; null where none.
template <class R>
std::pair<const R*, const R*> fastest_of(const std::vector<R>& results, size_t si,
                                         const std::string& skip) {
  const R *best = nullptr, *best_peer = nullptr;
  for (const R& r : results) {
    if (r.shape != si || r.status != "ok" || r.backend == skip || r.graph_ms("fwdbwd") <= 0)
      continue;
    if (!best || r.graph_ms("fwdbwd") < best->graph_ms("fwdbwd"))
      best = &r;
    if (r.peer && (!best_peer || r.graph_ms("fwdbwd") < best_peer->graph_ms("fwdbwd")))
      best_peer = &r;
  }
  return {best, best_peer};
}

// The listing of each peer's training step per kernel; `label(r)` names its shape.
template <class R, class Label>
void print_peer_kernel_times(std::ostream& out, const std::vector<R>& results, Label label) {
  bool header = false;
  for (const R& r : results) {
    if (!r.peer || r.status != "ok" || r.kernel_times.empty())
      continue;
    if (!header)
      out << "\nper kernel, a peer's training step (torch.profiler in the driver: GPU time, share "
             "and launches per step, averaged over a few eager steps)\n";
    header = true;
    print_kernel_times(out, r.backend + " @ " + label(r), r.kernel_times);
  }
}

// The per-backend table's note: how it ran (or why not), how it was pinned, `extra`, and for a
// peer its versions.
std::string result_note(const BenchResult& r, const std::string& extra);
// "0.62 of BASE (fwd+bwd 1.234 ms)", or "fwd+bwd 1.234 ms" for the baseline itself or none.
std::string against_text(const BenchResult& r, const BenchResult* base,
                         const std::string& baseline);

// The members of a backend's JSON object from "status" to "max_rel_l2_output".
void json_result_status(std::ostream& j, const BenchResult& r);
// The members from "kernel_times" to "times" and the object's close; `graph_errors`: whether each
// mode says why it has no graph replay.
void json_result_times(std::ostream& j, const BenchResult& r, const BenchResult* base,
                       bool graph_errors);

struct Recommendation {
  std::string shape;
  int seq_len = 0;
  std::string text, fastest, second; // second: the bench's other pick, JSON key `second_key`
  std::string contract;              // gdn: the contract the shape ran at; conv: empty
};
// The "recommendations" array.
void json_recommendations(std::ostream& j, const std::vector<Recommendation>& recs,
                          const std::string& second_key);

// Writes `text` to `json_path` atomically, then with a `plot` directory has the driver plot it.
// Returns false (said on `err` after `prefix`) when either failed.
bool write_json_and_plot(const std::string& json_path, const std::string& text,
                         const std::string& python, const std::string& driver,
                         const std::string& plot, const std::string& prefix, std::ostream& err);

// One row of the correctness table: a backend's output at a shape against the reference, or
// (`note` set) why there are no figures (a run that failed, a pass skipped).
struct CheckRow {
  std::string backend, shape, output;
  double rel_l2 = 0, max_abs = 0;
  size_t non_finite = 0;
  bool pass = false;
  std::string note;
};

// What the report needs to know of the run beside its rows: the op and its options, the device,
// the model of an op's FLOPs and bytes per shape and mode (flops null: the op has no FLOP model),
// and the words for ours and the peers in the recommendation.
struct ReportSpec {
  const OpInfo* op = nullptr;
  const BenchOptions* opts = nullptr;
  std::string date, device;
  int sm = 0, sm_count = 0;
  double peak_tflops = 0, peak_gbps = 0;
  std::function<double(const NamedShape&, const std::string&mode)> flops, bytes;
  std::string oracle;                                        // left out of the recommendation
  std::function<std::string(const std::string&)> how_to_get; // how a user runs a peer
  std::string ours_note, peers_label, second_key;            // recommendation wording, JSON key
};

// The header line, before any work.
void print_header(std::ostream& out, const ReportSpec& spec);
// The correctness, times and per-backend tables, the peers' per-kernel listing and the
// recommendations (returned for the JSON), from results sorted by sort_results.
std::vector<Recommendation> print_report(std::ostream& out, const ReportSpec& spec,
                                         const std::vector<CheckRow>& checks,
                                         const std::vector<BenchResult>& results);
// The JSON document (docs/gdn/bench.md, "JSON and exit codes").
std::string report_json(const ReportSpec& spec, const std::vector<CheckRow>& checks,
                        const std::vector<BenchResult>& results,
                        const std::vector<Recommendation>& recs);

} // namespace qr::gdn
