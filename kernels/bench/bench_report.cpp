// See bench_report.h.
#include "bench_report.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace qr::gdn {

peers::Stats stats_of(std::vector<float> ms) {
  peers::Stats s;
  if (ms.empty())
    return s;
  std::sort(ms.begin(), ms.end());
  s.median = ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
  s.min = ms.front();
  s.max = ms.back();
  return s;
}

void json_stats(std::ostream& j, const peers::Stats& s) {
  if (s.median <= 0) {
    j << "null";
    return;
  }
  j << "{\"median\": " << s.median << ", \"min\": " << s.min << ", \"max\": " << s.max << "}";
}

std::string mb(double bytes) {
  if (bytes < 0)
    return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.1f", bytes / 1e6);
  return b;
}

std::string ms_text(double ms) {
  if (ms <= 0)
    return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", ms);
  return b;
}

std::string ratio_text(double ms, double base) {
  if (ms <= 0 || base <= 0)
    return "-";
  char b[32];
  std::snprintf(b, sizeof b, "%.2f", ms / base);
  return b;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r' || c == '\t')
      c = ' ';
  return s;
}

std::string versions_text(const std::vector<std::pair<std::string, std::string>>& v) {
  std::string t;
  for (const auto& [dist, ver] : v)
    t += (t.empty() ? "" : ", ") + dist + " " + ver;
  return t.empty() ? "no versions found" : t;
}

void print_kernel_times(std::ostream& out, const std::string& title,
                        const std::vector<peers::KernelTime>& times) {
  double total = 0;
  for (const peers::KernelTime& k : times)
    total += k.us;
  out << title << ": " << times.size() << " kernels, " << ms_text(total / 1e3)
      << " ms of GPU time\n";
  char line[64];
  for (const peers::KernelTime& k : times) {
    std::snprintf(line, sizeof line, "  %9.1f us %5.1f%% %5.1f x  ", k.us,
                  total > 0 ? 100 * k.us / total : 0.0, k.calls);
    out << line << one_line(k.name).substr(0, 100) << "\n";
  }
}

void json_kernel_times(std::ostream& j, const std::vector<peers::KernelTime>& times) {
  j << "[";
  for (size_t k = 0; k < times.size(); ++k)
    j << (k ? ", " : "") << "{\"name\": " << peers::json_string(times[k].name)
      << ", \"calls\": " << times[k].calls << ", \"us\": " << times[k].us << "}";
  j << "]";
}

const ModeResult* BenchResult::mode(const std::string& m) const {
  for (const ModeResult& r : modes)
    if (r.mode == m)
      return &r;
  return nullptr;
}

double BenchResult::graph_ms(const std::string& m) const {
  const ModeResult* r = mode(m);
  return r ? r->graph.median : -1;
}

const peers::Row* find_row(const std::vector<peers::Row>& rows, const std::string& backend,
                           const std::string& shape_name, int batch, int seq_len, int value_heads) {
  const peers::Row* row = nullptr;
  for (const peers::Row& r : rows)
    if (r.backend == backend && r.shape.name == shape_name && r.shape.seq_len == seq_len &&
        r.shape.batch == batch && r.shape.value_heads == value_heads)
      row = &r;
  return row;
}

void take_row(BenchResult& res, const peers::Row& row, const std::string& fla_kernels) {
  res.status = row.status;
  res.reason = row.reason;
  res.runs = row.runs;
  res.pinned = row.pinned;
  res.versions = row.versions;
  res.kernel_times = row.kernel_times;
  res.saved_bytes = row.saved_bytes;
  res.peak_bytes = row.peak_bytes;
  res.first_call_s = row.first_call_s;
  if (res.backend == "fla" && res.status == "ok" && !row.pinned_verified) {
    res.status = "error";
    res.reason = "could not verify that FLA ran its " + fla_kernels + ": " + row.pinned;
  }
  if (res.backend == "flash_qla" && res.status == "ok" && !row.pinned_verified) {
    res.status = "error";
    res.reason = "could not verify that FLA's dispatch ran FlashQLA: " + row.pinned;
  }
}

void sort_modes(std::vector<ModeResult>& modes, const std::vector<std::string>& order) {
  std::stable_sort(modes.begin(), modes.end(), [&](const ModeResult& x, const ModeResult& y) {
    return std::find(order.begin(), order.end(), x.mode) <
           std::find(order.begin(), order.end(), y.mode);
  });
}

std::string run_peers_driver(std::vector<std::string> argv,
                             const std::vector<std::string>& input_dirs, const std::string& work,
                             const std::string& prefix, const std::string& backend_arg,
                             const std::string& note, std::ostream& err,
                             std::vector<peers::Row>& rows, bool& keep_files) {
  bool any_inputs = false;
  for (const std::string& d : input_dirs)
    if (!d.empty()) {
      argv.insert(argv.end(), {"--inputs", d});
      any_inputs = true;
    }
  if (!any_inputs)
    return "no inputs were written";
  err << prefix << ": starting the peers driver (" << backend_arg << "); " << note << "\n";
  std::string why, spawn_error;
  const int rc = peers::run_process(argv, spawn_error);
  if (rc != 0)
    why = rc < 0 ? spawn_error
                 : "the driver exited with code " + std::to_string(rc) + " (see stderr)";
  else
    why = peers::read_results(work + "/peers/peers.json", rows);
  if (!why.empty()) {
    err << prefix << ": the peers driver failed; its files are kept in " << work << "\n";
    keep_files = true;
  }
  return why;
}

ScratchDir::~ScratchDir() {
  std::error_code ec;
  if (!dir.empty())
    std::filesystem::remove_all(dir, ec);
}

bool make_scratch_dir(ScratchDir& scratch, const std::string& prefix, std::ostream& err) {
  std::string tmpl = (std::filesystem::temp_directory_path() / "qr-gdn-bench-XXXXXX").string();
  if (!mkdtemp(tmpl.data())) {
    err << prefix << ": cannot create a temporary folder under "
        << std::filesystem::temp_directory_path() << "\n";
    return false;
  }
  scratch.dir = tmpl;
  return true;
}

std::string result_note(const BenchResult& r, const std::string& extra) {
  std::string note = r.status == "ok" || r.status == "failed check" ? r.runs : r.reason;
  if (!r.pinned.empty())
    note += "; " + r.pinned;
  note += extra;
  if (r.peer)
    note += " [" + versions_text(r.versions) + "]";
  return note;
}

std::string against_text(const BenchResult& r, const BenchResult* base,
                         const std::string& baseline) {
  char b[96];
  if (base && base != &r)
    std::snprintf(b, sizeof b, "%.2f of %s (fwd+bwd %.3f ms)",
                  r.graph_ms("fwdbwd") / base->graph_ms("fwdbwd"), baseline.c_str(),
                  r.graph_ms("fwdbwd"));
  else
    std::snprintf(b, sizeof b, "fwd+bwd %.3f ms", r.graph_ms("fwdbwd"));
  return b;
}

void json_result_status(std::ostream& j, const BenchResult& r) {
  j << ", \"status\": " << peers::json_string(r.status)
    << ", \"reason\": " << peers::json_string(r.reason)
    << ", \"runs\": " << peers::json_string(r.runs)
    << ", \"pinned\": " << peers::json_string(r.pinned) << ", \"versions\": {";
  for (size_t v = 0; v < r.versions.size(); ++v)
    j << (v ? ", " : "") << peers::json_string(r.versions[v].first) << ": "
      << peers::json_string(r.versions[v].second);
  j << "}, \"saved_bytes\": " << r.saved_bytes << ", \"peak_bytes\": " << r.peak_bytes
    << ", \"max_rel_l2\": " << r.worst_rel_l2
    << ", \"max_rel_l2_output\": " << peers::json_string(r.worst_output);
}

void json_result_times(std::ostream& j, const BenchResult& r, const BenchResult* base,
                       bool graph_errors) {
  j << ", \"kernel_times\": ";
  json_kernel_times(j, r.kernel_times);
  j << ", \"first_call_s\": " << r.first_call_s << ", \"times\": {";
  for (size_t m = 0; m < r.modes.size(); ++m) {
    const ModeResult& mr = r.modes[m];
    j << (m ? ", " : "") << "\"" << mr.mode << "\": {\"graph_ms\": ";
    json_stats(j, mr.graph);
    j << ", \"eager_ms\": ";
    json_stats(j, mr.eager);
    const double bm = base ? base->graph_ms(mr.mode) : -1;
    j << ", \"ratio_to_baseline\": " << (bm > 0 && mr.graph.median > 0 ? mr.graph.median / bm : -1);
    if (graph_errors)
      j << ", \"graph_error\": " << peers::json_string(mr.graph_error);
    j << "}";
  }
  j << "}}";
}

void json_recommendations(std::ostream& j, const std::vector<Recommendation>& recs,
                          const std::string& second_key) {
  j << "[";
  for (size_t i = 0; i < recs.size(); ++i)
    j << (i ? ",\n  " : "\n  ") << "{\"shape\": " << peers::json_string(recs[i].shape)
      << ", \"T\": " << recs[i].seq_len << ", \"fastest\": " << peers::json_string(recs[i].fastest)
      << ", \"" << second_key << "\": " << peers::json_string(recs[i].second)
      << (recs[i].contract.empty() ? "" : ", \"contract\": " + peers::json_string(recs[i].contract))
      << ", \"text\": " << peers::json_string(recs[i].text) << "}";
  j << "\n ]";
}

bool write_json_and_plot(const std::string& json_path, const std::string& text,
                         const std::string& python, const std::string& driver,
                         const std::string& plot, const std::string& prefix, std::ostream& err) {
  const std::string tmp = json_path + ".tmp";
  std::ofstream f(tmp);
  f << text;
  f.close();
  if (!f || std::rename(tmp.c_str(), json_path.c_str()) != 0) {
    err << prefix << ": could not write " << json_path << "\n";
    std::remove(tmp.c_str());
    return false;
  }
  if (plot.empty())
    return true;
  std::string spawn_error;
  const int rc =
      peers::run_process({python, driver, "plot", "--json", json_path, "--out", plot}, spawn_error);
  if (rc != 0) {
    err << prefix << ": --plot " << plot << ": "
        << (rc < 0 ? spawn_error : "the driver's plot failed (see above)") << "\n";
    return false;
  }
  return true;
}

} // namespace qr::gdn

namespace qr::gdn {
namespace {

bool is_gdn(const ReportSpec& spec) {
  return spec.op->op == "gdn";
}

// A shape as the tables name it: the name, then (with --seq-lens) its T.
std::string shape_column(const ReportSpec& spec, const NamedShape& ns, size_t width) {
  if (spec.opts->seq_lens.empty())
    return ns.name.substr(0, width);
  return ns.name.substr(0, width - 7) + " T" + std::to_string(ns.shape.seq_len);
}

double json_number(double x) {
  return std::isfinite(x) ? x : -1;
}

} // namespace

void print_header(std::ostream& out, const ReportSpec& spec) {
  const BenchOptions& o = *spec.opts;
  out << spec.op->prefix << " " << spec.date << " on " << spec.device << " (sm_" << spec.sm << ", "
      << spec.sm_count << " SMs; nominal ";
  if (spec.flops)
    out << "peaks " << int(spec.peak_tflops) << " TFLOP/s dense bf16, ";
  out << int(spec.peak_gbps) << " GB/s)" << (o.bias ? ", with conv bias" : "") << "\n";
  if (is_gdn(spec))
    out << "contract " << contract_name(o.contract) << " (" << o.contract_source
        << "): " << contract_text(o.contract) << (o.l2norm ? "" : "; no L2 norm (--no-l2norm)")
        << "\n";
}

std::vector<Recommendation> print_report(std::ostream& out, const ReportSpec& spec,
                                         const std::vector<CheckRow>& checks,
                                         const std::vector<BenchResult>& results) {
  const BenchOptions& o = *spec.opts;
  const std::string xbase = ("x " + o.baseline).substr(0, 9);
  char line[640];
  out << "\ncorrectness against reference (relative L2 error |x - ref| / |ref|, tolerance " << o.tol
      << ")\n";
  std::snprintf(line, sizeof line, "%-20s %-30s %-16s %11s %11s %9s %s\n", "backend", "shape",
                "output", "rel_l2", "max_abs", "nonfinite", "result");
  out << line;
  for (const CheckRow& c : checks) {
    if (!c.note.empty())
      std::snprintf(line, sizeof line, "%-20s %-30s %-16s %s\n", c.backend.c_str(), c.shape.c_str(),
                    c.output.c_str(), one_line(c.note).c_str());
    else
      std::snprintf(line, sizeof line, "%-20s %-30s %-16s %11.3e %11.3e %9zu %s\n",
                    c.backend.c_str(), c.shape.c_str(), c.output.c_str(), c.rel_l2, c.max_abs,
                    c.non_finite, c.pass ? "ok" : "FAIL");
    out << line;
  }
  auto base_of = [&](size_t si) { return baseline_of(results, o.baseline, si); };
  if (!o.check_only) {
    out << "\ntimes: graph = CUDA-graph replay median (GPU time), eager = median of eager runs "
           "with the L2 flushed before each (our C++ launches, or the peer's Python); "
        << o.iters << " runs after " << o.warmup << " warm-up; " << xbase << " = graph time / "
        << o.baseline
        << "'s; GB/s from the fewest bytes (inputs read once, outputs written once)\n";
    std::snprintf(line, sizeof line, "%-20s %-24s %-13s %10s %10s %9s %9s %9s %7s %6s\n", "backend",
                  "shape", "mode", "graph ms", "eager ms", xbase.c_str(), "TFLOP/s", "GB/s",
                  "%FLOP", "%BW");
    out << line;
    for (const BenchResult& r : results) {
      const NamedShape& ns = o.shapes[r.shape];
      const BenchResult* base = base_of(r.shape);
      for (const ModeResult& m : r.modes) {
        const double t = m.graph.median > 0 ? m.graph.median : m.eager.median;
        const double tflops = spec.flops && t > 0 ? spec.flops(ns, m.mode) / (t * 1e-3) / 1e12 : 0;
        const double gbps = t > 0 ? spec.bytes(ns, m.mode) / (t * 1e-3) / 1e9 : 0;
        char flop_text[32] = "-", flop_share[32] = "-";
        if (spec.flops) {
          std::snprintf(flop_text, sizeof flop_text, "%.1f", tflops);
          std::snprintf(flop_share, sizeof flop_share, "%.1f%%", 100 * tflops / spec.peak_tflops);
        }
        std::snprintf(line, sizeof line, "%-20s %-24s %-13s %10s %10s %9s %9s %9.0f %7s %5.1f%%\n",
                      r.backend.c_str(), shape_column(spec, ns, 24).c_str(), m.mode.c_str(),
                      ms_text(m.graph.median).c_str(), ms_text(m.eager.median).c_str(),
                      ratio_text(m.graph.median, base ? base->graph_ms(m.mode) : -1).c_str(),
                      flop_text, gbps, flop_share, 100 * gbps / spec.peak_gbps);
        out << line;
        if (!m.graph_error.empty())
          out << "  (no graph replay: " << one_line(m.graph_error) << ")\n";
      }
    }
  }

  // Per backend and shape: the figures a person compares, then why a row has none.
  out << "\nper backend"
      << (is_gdn(spec) ? std::string(" at contract ") + contract_name(o.contract) + " (" +
                             o.contract_source + ")"
                       : std::string())
      << " (graph medians; saved = bytes a training forward keeps for the backward; peak = a "
         "training step's memory beyond its inputs; err = the largest relative L2 error of any "
         "output or gradient against reference)\n";
  std::snprintf(line, sizeof line, "%-20s %-18s %-13s %9s %9s %9s %8s %9s %9s %9s  %s\n", "backend",
                "shape", "status", "fwd ms", "fwdbwd ms", xbase.c_str(), "eager fb", "saved MB",
                "peak MB", "err", "how it ran / why not");
  out << line;
  for (const BenchResult& r : results) {
    const BenchResult* base = base_of(r.shape);
    const ModeResult* fb = r.mode("fwdbwd");
    char err_text[32] = "-";
    if (r.worst_rel_l2 >= 0)
      std::snprintf(err_text, sizeof err_text, "%.1e", r.worst_rel_l2);
    char own[96] = "";
    if (r.own_kernels_ms >= 0)
      std::snprintf(own, sizeof own, "; its conv kernels %.3f ms of a profiled training step",
                    r.own_kernels_ms);
    // The note can be long (versions, kernel names): outside the fixed-size line.
    std::snprintf(line, sizeof line, "%-20s %-18s %-13s %9s %9s %9s %8s %9s %9s %9s  ",
                  r.backend.c_str(), shape_column(spec, o.shapes[r.shape], 18).c_str(),
                  r.status.c_str(), ms_text(r.graph_ms("fwd")).c_str(),
                  ms_text(r.graph_ms("fwdbwd")).c_str(),
                  ratio_text(r.graph_ms("fwdbwd"), base ? base->graph_ms("fwdbwd") : -1).c_str(),
                  ms_text(fb ? fb->eager.median : -1).c_str(), mb(r.saved_bytes).c_str(),
                  mb(r.peak_bytes).c_str(), err_text);
    out << line << one_line(result_note(r, own)) << "\n";
  }

  // Where a peer's training step goes, for comparing kernel by kernel with ours.
  print_peer_kernel_times(out, results, [&](const BenchResult& r) {
    const NamedShape& ns = o.shapes[r.shape];
    return ns.name + " (" + shape_text(ns) + ")";
  });

  // The recommendation, per shape at the run's contract: the fastest training step that passed
  // its check, and the fastest peer (ours is no choice a recipe can make).
  std::vector<Recommendation> recs;
  if (o.check_only)
    return recs;
  out << "\n";
  const std::string contract = is_gdn(spec) ? contract_name(o.contract) : "";
  for (size_t si = 0; si < o.shapes.size(); ++si) {
    const NamedShape& ns = o.shapes[si];
    const auto [best, best_peer] = fastest_of(results, si, spec.oracle);
    const BenchResult* base = base_of(si);
    auto against = [&](const BenchResult& r) { return against_text(r, base, o.baseline); };
    std::string text = "recommendation for " + ns.name + " (" + shape_text(ns) +
                       (contract.empty() ? "" : ", contract " + contract) + "): ";
    if (!best) {
      text += "no backend ran a training step here";
    } else {
      text += "fastest here: " + best->backend + ", " + against(*best);
      if (best->peer)
        text += "; " + spec.how_to_get(best->backend);
      else if (best_peer)
        text += " (" + spec.ours_note + "); " + spec.peers_label + " " + best_peer->backend + ", " +
                against(*best_peer) + ": " + spec.how_to_get(best_peer->backend);
      else
        text += " (" + spec.ours_note + "; no peer ran)";
    }
    // A peer that was asked for but has no training step here may be the fastest: say so.
    std::string untimed;
    for (const BenchResult& r : results)
      if (r.shape == si && r.peer && (r.status != "ok" || r.graph_ms("fwdbwd") <= 0))
        untimed += (untimed.empty() ? "" : ", ") + r.backend + " (" + r.status + ")";
    if (!untimed.empty())
      text += "; not timed here, see their rows: " + untimed;
    out << text << "\n";
    recs.push_back({ns.name, ns.shape.seq_len, text, best ? best->backend : "",
                    best_peer ? best_peer->backend : "", contract});
  }
  return recs;
}

std::string report_json(const ReportSpec& spec, const std::vector<CheckRow>& checks,
                        const std::vector<BenchResult>& results,
                        const std::vector<Recommendation>& recs) {
  const BenchOptions& o = *spec.opts;
  const bool gdn = is_gdn(spec);
  std::ostringstream j;
  j.precision(6);
  j << "{\n \"schema\": \"" << (gdn ? "qwen-recipe gdn-bench 3" : "qwen-recipe gdn-bench conv 2")
    << "\",\n \"op\": " << peers::json_string(spec.op->op)
    << ",\n \"date\": " << peers::json_string(spec.date)
    << ",\n \"device\": " << peers::json_string(spec.device) << ",\n \"sm\": " << spec.sm;
  if (spec.flops)
    j << ",\n \"peak_tflops\": " << spec.peak_tflops;
  j << ",\n \"peak_gbps\": " << spec.peak_gbps;
  if (gdn)
    j << ",\n \"contract\": " << peers::json_string(contract_name(o.contract))
      << ",\n \"contract_source\": " << peers::json_string(o.contract_source)
      << ",\n \"l2norm_in_kernel\": " << (o.l2norm_in_kernel() ? "true" : "false");
  else
    j << ",\n \"bias\": " << (o.bias ? "true" : "false");
  j << ",\n \"tolerance\": " << o.tol << ",\n \"warmup\": " << o.warmup
    << ",\n \"iters\": " << o.iters << ",\n \"baseline\": " << peers::json_string(o.baseline)
    << ",\n \"checks\": [";
  for (size_t i = 0; i < checks.size(); ++i) {
    const CheckRow& c = checks[i];
    j << (i ? ",\n  " : "\n  ") << "{\"backend\": " << peers::json_string(c.backend)
      << ", \"shape\": " << peers::json_string(c.shape)
      << ", \"output\": " << peers::json_string(c.output)
      << ", \"rel_l2\": " << (c.note.empty() ? json_number(c.rel_l2) : -1)
      << ", \"max_abs\": " << (c.note.empty() ? json_number(c.max_abs) : -1)
      << ", \"non_finite\": " << c.non_finite << ", \"pass\": " << (c.pass ? "true" : "false")
      << ", \"note\": " << peers::json_string(c.note) << "}";
  }
  j << "\n ],\n \"backends\": [";
  for (size_t i = 0; i < results.size(); ++i) {
    const BenchResult& r = results[i];
    const NamedShape& ns = o.shapes[r.shape];
    const Shape& s = ns.shape;
    j << (i ? ",\n  " : "\n  ") << "{\"backend\": " << peers::json_string(r.backend)
      << ", \"kind\": \"" << (r.peer ? "peer" : "ours")
      << "\", \"shape\": " << peers::json_string(ns.name) << ", \"B\": " << s.batch
      << ", \"T\": " << s.seq_len << ", \"Hk\": " << s.key_heads << ", \"Hv\": " << s.value_heads
      << ", \"D\": " << s.head_dim_k;
    if (gdn) {
      j << ", \"N\": " << s.sequences << ", \"repeat\": " << ns.repeat << ", \"seq_lens\": [";
      for (size_t k = 0; k < ns.seq_lens.size(); ++k)
        j << (k ? ", " : "") << ns.seq_lens[k];
      j << "]";
    } else {
      j << ", \"C\": " << 2 * s.key_heads * s.head_dim_k + s.value_heads * s.head_dim_v;
    }
    json_result_status(j, r);
    if (gdn)
      j << ", \"kernels\": " << r.kernels;
    else
      j << ", \"own_kernels_ms\": " << r.own_kernels_ms;
    json_result_times(j, r, baseline_of(results, o.baseline, r.shape), true);
  }
  j << "\n ],\n \"recommendations\": ";
  json_recommendations(j, recs, spec.second_key);
  j << "\n}\n";
  return j.str();
}

} // namespace qr::gdn
