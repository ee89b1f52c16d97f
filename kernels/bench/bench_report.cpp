// See bench_report.h.
#include "bench_report.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>

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
