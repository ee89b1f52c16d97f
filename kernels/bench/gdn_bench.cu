// gdn-bench (see gdn_bench.h and docs/gdn-bench.md): argument parsing, the correctness check of
// each backend against `reference`, event timing with the L2 flushed, and the table / JSON output.
#include "common.cuh"
#include "conv_bench.h"
#include "fla_json.h"
#include "gdn_bench.h"
#include "harness.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

namespace qr::gdn {
namespace {

struct NamedShape {
  std::string name;
  Shape shape;
};

// fwd: inference forward; fwd-train: the forward of a training step, which also keeps the
// backend's saved context; bwd: the backward from that context; bwd-recompute: the self-contained
// backward; fwdbwd: fwd-train then bwd, a training step's GDN.
std::vector<std::string> all_modes() {
  return {"fwd", "fwd-train", "bwd", "bwd-recompute", "fwdbwd"};
}

struct Config {
  std::vector<NamedShape> shapes;
  std::vector<std::string> backends; // empty: all
  std::vector<std::string> modes = all_modes();
  int warmup = 3, iters = 20;
  bool check_only = false, l2norm = true, states = false;
  int varlen = 0;     // > 0: pack each shape's tokens into this many equal sequences (cu_seqlens)
  bool graph = false; // time CUDA-graph replays (warm L2), as gdn_fla_bench.py times FLA
  double tol = 2e-2;
  uint64_t seed = 1;
  std::string json;
  std::string fla_json; // gdn_fla_bench.py's results.json; implies --compare-fla
  bool compare_fla = false;
};

const char* kUsage = R"(usage: gdn-bench [options]
Checks each GatedDeltaNet backend against `reference` (relative L2 error of o, final state, dq, dk,
dv, dg, dbeta, d initial state; NaN check) and times the ones that pass.
  --recipe NAME[,NAME]     shapes of compiled recipes (micro batch, seq_length, GDN heads, dims)
  --shape B,T,Hk,Hv,D      a shape: batch, tokens, key heads, value heads, head dim (repeatable)
  --backend all|NAME[,..]  backends to run (reference, chunked, fused); default all
  --mode MODE[,MODE]       passes to time, default all: fwd (inference), fwd-train (also keeps the
                           context for the backward), bwd (from that context), bwd-recompute
                           (self-contained), fwdbwd (fwd-train + bwd, a training step)
  --warmup N               untimed runs per pass (default 3)
  --iters N                timed runs per pass (default 20); the L2 is flushed before each
  --graph                  time CUDA-graph replays of each mode's passes instead, without the L2
                           flush, the way gdn_fla_bench.py times FLA (like for like with FLA)
  --check                  run only the correctness check against reference, no timing
  --tol X                  largest relative L2 error a backend may show (default 0.02)
  --initial-state          also feed an initial state and a final-state gradient
  --varlen N               pack each (batch-1) shape's T tokens into N sequences of near-equal
                           length (cu_seqlens; per-sequence states)
  --no-l2norm              no q/k l2 normalisation inside the kernel (q, k drawn N(0, 1/D))
  --seed N                 input seed (default 1)
  --json FILE              also write the results as JSON
  --compare-fla            print FLA's times beside ours, as ratios (needs --fla-json)
  --fla-json FILE          results.json of shared/tools/gdn_fla_bench.py (--out DIR) from the same
                           GPU, ideally the same run; FLA's CUDA-graph medians are compared
  --op gdn|conv            what to bench: the GDN backends (default) or the short convolution
                           (`--op conv --help` lists its options)
  --help                   this text
Default shapes: qwen35_35b (4,4096,16,32,128) and qwen35_397b (1,4096,16,64,128).
Exit codes: 0 ok, 2 bad arguments or a failed check, 77 no CUDA device.
)";

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, sep);)
    if (!item.empty())
      out.push_back(item);
  return out;
}

bool parse_int(const std::string& s, long long lo, long long hi, long long& out) {
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (s.empty() || *end != '\0' || v < lo || v > hi)
    return false;
  out = v;
  return true;
}

Shape make_shape(int b, int t, int hk, int hv, int d) {
  return {b, t, hk, hv, d, d};
}

std::string shape_text(const Shape& s) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "B%d T%d Hk%d Hv%d D%d", s.batch, s.seq_len, s.key_heads,
                s.value_heads, s.head_dim_k);
  return buf;
}

// Returns an error text, empty on success.
std::string parse(const std::vector<std::string>& args, const RecipeShapeResolver& resolver,
                  Config& cfg, bool& help) {
  bool default_modes = true;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](std::string& v) {
      if (i + 1 >= args.size())
        return false;
      v = args[++i];
      return true;
    };
    std::string v;
    long long n = 0;
    if (a == "--help" || a == "-h") {
      help = true;
    } else if (a == "--check") {
      cfg.check_only = true;
    } else if (a == "--graph") {
      cfg.graph = true;
    } else if (a == "--initial-state") {
      cfg.states = true;
    } else if (a == "--varlen") {
      if (!value(v) || !parse_int(v, 1, 1 << 24, n))
        return "--varlen needs a positive sequence count";
      cfg.varlen = int(n);
    } else if (a == "--no-l2norm") {
      cfg.l2norm = false;
    } else if (a == "--recipe") {
      if (!value(v))
        return "--recipe needs a name";
      for (const std::string& name : split(v, ',')) {
        RecipeShape r{};
        std::string error;
        if (!resolver || !resolver(name, r, error))
          return "--recipe " + name + ": " + (error.empty() ? "unknown recipe" : error);
        cfg.shapes.push_back(
            {name, make_shape(r.batch, r.seq_len, r.key_heads, r.value_heads, r.head_dim)});
      }
    } else if (a == "--shape") {
      const std::vector<std::string> f = value(v) ? split(v, ',') : std::vector<std::string>{};
      long long d[5];
      bool ok = f.size() == 5;
      for (size_t j = 0; ok && j < 5; ++j)
        ok = parse_int(f[j], 1, 1 << 24, d[j]);
      if (!ok)
        return "--shape needs B,T,Hk,Hv,D (positive integers)";
      const Shape s = make_shape(int(d[0]), int(d[1]), int(d[2]), int(d[3]), int(d[4]));
      if (!s.valid())
        return "--shape: Hv must be a multiple of Hk";
      cfg.shapes.push_back({"custom", s});
    } else if (a == "--backend") {
      if (!value(v))
        return "--backend needs a value";
      cfg.backends = v == "all" ? std::vector<std::string>{} : split(v, ',');
    } else if (a == "--mode") {
      if (!value(v))
        return "--mode needs a value";
      if (default_modes)
        cfg.modes.clear();
      default_modes = false;
      const std::vector<std::string> known = all_modes();
      for (const std::string& m : split(v, ',')) {
        if (m != "all" && std::find(known.begin(), known.end(), m) == known.end())
          return "--mode: unknown mode '" + m +
                 "' (fwd, fwd-train, bwd, bwd-recompute, fwdbwd or all)";
        for (const std::string& add : m == "all" ? known : std::vector<std::string>{m})
          if (std::find(cfg.modes.begin(), cfg.modes.end(), add) == cfg.modes.end())
            cfg.modes.push_back(add);
      }
      if (cfg.modes.empty())
        return "--mode needs a value";
    } else if (a == "--warmup" || a == "--iters" || a == "--seed") {
      if (!value(v) || !parse_int(v, a == "--iters" ? 1 : 0, 1 << 30, n))
        return a + (a == "--iters" ? " needs a positive integer" : " needs a non-negative integer");
      if (a == "--warmup")
        cfg.warmup = int(n);
      else if (a == "--iters")
        cfg.iters = int(n);
      else
        cfg.seed = uint64_t(n);
    } else if (a == "--tol") {
      char* end = nullptr;
      if (!value(v) || (cfg.tol = std::strtod(v.c_str(), &end), *end != '\0') || !(cfg.tol > 0))
        return "--tol needs a positive number";
    } else if (a == "--json") {
      if (!value(v))
        return "--json needs a file name";
      cfg.json = v;
    } else if (a == "--compare-fla") {
      cfg.compare_fla = true;
    } else if (a == "--fla-json") {
      if (!value(v))
        return "--fla-json needs a file name";
      cfg.fla_json = v;
      cfg.compare_fla = true;
    } else {
      return "unknown argument '" + a + "' (see --help)";
    }
  }
  if (cfg.compare_fla && cfg.fla_json.empty())
    return "--compare-fla needs --fla-json FILE (the results.json of gdn_fla_bench.py)";
  if (cfg.shapes.empty())
    cfg.shapes = {{"qwen35_35b", make_shape(4, 4096, 16, 32, 128)},
                  {"qwen35_397b", make_shape(1, 4096, 16, 64, 128)}};
  for (NamedShape& ns : cfg.shapes) {
    if (!cfg.varlen)
      break;
    if (ns.shape.batch != 1 || ns.shape.seq_len < cfg.varlen)
      return "--varlen: shape " + ns.name + " needs batch 1 and at least " +
             std::to_string(cfg.varlen) + " tokens";
    ns.shape.sequences = cfg.varlen;
    ns.name += "+N" + std::to_string(cfg.varlen);
  }
  return {};
}

struct Peaks {
  double tflops = 0, gbps = 0; // nominal dense bf16 tensor rate and DRAM bandwidth
};

Peaks nominal_peaks(const DeviceInfo& d) {
  int clock_khz = 0, mem_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  // dense bf16 FLOP per clock per SM: A100 2048, H100/H200 4096, B200 8192
  const double per_sm = d.major >= 10 ? 8192 : d.major == 9 ? 4096 : 2048;
  return {d.sm_count * per_sm * clock_khz * 1e3 / 1e12, 2.0 * mem_khz * 1e3 * bus_bits / 8 / 1e9};
}

struct CheckRow {
  std::string backend, output;
  Error err;
  bool pass;
};

struct TimeRow {
  std::string backend, shape_name, mode;
  Shape shape;
  double median = 0, min = 0, max = 0, tflops = 0, gbps = 0, pct_flop = 0, pct_bw = 0;
};

// Runs fwd and bwd of `be` on poisoned outputs and reads back every output: the training path
// (forward keeping the context, poisoned first, and the backward from it) or the recompute path.
std::string run_and_read(const Backend& be, Problem& p, cudaStream_t st, bool train,
                         std::map<std::string, std::vector<double>>& got) {
  for (bool bwd : {false, true}) {
    if (std::string e = p.poison_outputs(); !e.empty())
      return e;
    if (std::string e = train && !bwd ? p.poison_saved() : std::string(); !e.empty())
      return e;
    const Run r =
        bwd ? (train ? Run::bwd : Run::bwd_recompute) : (train ? Run::fwd_train : Run::fwd);
    if (std::string e = run_pass(be, p, r, st); !e.empty())
      return e;
    QR_CUDA_TRY(cudaStreamSynchronize(st));
    for (const Output& o : bwd ? backward_outputs() : forward_outputs())
      got[o.name] = download(p.*o.buf, o.type);
  }
  return {};
}

// One mode's passes captured once into a CUDA graph, replayed for timing.
struct GraphExec {
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  GraphExec() = default;
  GraphExec(const GraphExec&) = delete;
  GraphExec& operator=(const GraphExec&) = delete;
  ~GraphExec() {
    if (exec)
      cudaGraphExecDestroy(exec);
    if (graph)
      cudaGraphDestroy(graph);
  }
  template <class F>
  std::string capture(cudaStream_t st, F&& enqueue) {
    QR_CUDA_TRY(cudaStreamBeginCapture(st, cudaStreamCaptureModeRelaxed));
    const std::string e = enqueue();
    const cudaError_t end = cudaStreamEndCapture(st, &graph);
    if (!e.empty())
      return e;
    QR_CUDA_TRY(end);
    QR_CUDA_TRY(cudaGraphInstantiate(&exec, graph, 0));
    return {};
  }
};

std::string json_escape(const std::string& s) {
  std::string o;
  for (char c : s)
    o += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return o;
}

} // namespace

int bench_main(const std::vector<std::string>& args, const RecipeShapeResolver& resolver,
               std::ostream& out, std::ostream& err) {
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i] == "--op") { // --op conv hands the other arguments to conv_bench_main
      if (i + 1 >= args.size() || (args[i + 1] != "gdn" && args[i + 1] != "conv")) {
        err << "gdn-bench: --op must be gdn or conv\n";
        return 2;
      }
      std::vector<std::string> rest(args.begin(), args.begin() + i);
      rest.insert(rest.end(), args.begin() + i + 2, args.end());
      if (args[i + 1] == "conv")
        return conv::conv_bench_main(rest, out, err);
      return bench_main(rest, resolver, out, err);
    }
  Config cfg;
  bool help = false;
  if (std::string e = parse(args, resolver, cfg, help); !e.empty()) {
    err << "gdn-bench: " << e << "\n";
    return 2;
  }
  if (help) {
    out << kUsage;
    return 0;
  }
  FlaResults fla;
  if (!cfg.fla_json.empty())
    if (std::string e = read_fla_results(cfg.fla_json, fla); !e.empty()) {
      err << "gdn-bench: --fla-json " << cfg.fla_json << ": " << e << "\n";
      return 2;
    }
  DeviceInfo dev;
  std::string dev_name;
  if (std::string e = device_info(dev, dev_name); !e.empty()) {
    err << "gdn-bench: no CUDA device (skipping)\n";
    return 77;
  }
  std::vector<std::unique_ptr<Backend>> backends = all_backends();
  for (const std::string& want : cfg.backends)
    if (std::none_of(backends.begin(), backends.end(),
                     [&](const auto& b) { return b->name() == want; })) {
      err << "gdn-bench: unknown backend '" << want << "' (reference, chunked, fused)\n";
      return 2;
    }
  auto selected = [&](const Backend& b) {
    return cfg.backends.empty() ||
           std::find(cfg.backends.begin(), cfg.backends.end(), b.name()) != cfg.backends.end();
  };
  const Peaks peaks = nominal_peaks(dev);
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  out << "gdn-bench " << when << " on " << dev_name << " (sm_" << dev.major << dev.minor << ", "
      << dev.sm_count << " SMs; nominal peaks " << int(peaks.tflops) << " TFLOP/s dense bf16, "
      << int(peaks.gbps) << " GB/s)\n";

  cudaStream_t st = nullptr;
  if (cudaStreamCreate(&st) != cudaSuccess) {
    err << "gdn-bench: cudaStreamCreate failed\n";
    return 2;
  }
  RunTimer timer;
  if (std::string e = timer.init(st); !e.empty()) {
    err << "gdn-bench: setup failed: " << e << "\n";
    return 2;
  }

  std::vector<CheckRow> checks;
  std::vector<TimeRow> times;
  std::string contexts; // saved-context sizes, printed after the times
  bool failed = false;
  for (const NamedShape& ns : cfg.shapes) {
    const std::string label = ns.name + " (" + shape_text(ns.shape) + ")";
    Problem p;
    Options opt;
    opt.l2norm_qk = cfg.l2norm;
    InputSpec spec;
    spec.initial_state = spec.d_final_state = cfg.states;
    spec.seed = cfg.seed;
    spec.qk_scale = cfg.l2norm ? 1.f : 1.f / std::sqrt(float(ns.shape.head_dim_k));
    for (int i = 0; i < ns.shape.sequences; ++i) // near-equal lengths, the longer ones first
      spec.seq_lens.push_back(ns.shape.seq_len / ns.shape.sequences +
                              (i < ns.shape.seq_len % ns.shape.sequences));
    err << "gdn-bench: " << label << ": preparing inputs\n";
    size_t ws = 0, ctx = 0; // for the selected backends and the oracle, which always runs
    for (const auto& b : backends)
      if (b->unsupported(dev, ns.shape).empty() && (selected(*b) || b == backends.front())) {
        ws = std::max(
            {ws, b->workspace_bytes(ns.shape, Pass::fwd), b->workspace_bytes(ns.shape, Pass::bwd)});
        ctx = std::max(ctx, b->saved_bytes(ns.shape));
      }
    if (std::string e = p.init(ns.shape, opt, spec);
        !e.empty() || !(e = p.ensure_workspace(ws)).empty() || !(e = p.ensure_saved(ctx)).empty()) {
      err << "gdn-bench: " << label << ": " << e << "\n";
      failed = true;
      continue;
    }
    // Correctness: reference first (NaN check only), then each selected backend against it.
    std::map<std::string, std::vector<double>> ref;
    const Backend& oracle = *backends.front();
    std::string oracle_error = oracle.unsupported(dev, ns.shape);
    if (oracle_error.empty()) {
      err << "gdn-bench: " << label << ": running reference\n";
      oracle_error = run_and_read(oracle, p, st, true, ref);
    }
    for (const auto& [name, data] : ref)
      if (size_t bad = count_non_finite(data); bad && oracle_error.empty())
        oracle_error = name + " has " + std::to_string(bad) + " non-finite values";
    for (const auto& be : backends) {
      if (!selected(*be))
        continue;
      if (std::string why = be->unsupported(dev, ns.shape); !why.empty()) {
        err << "gdn-bench: " << label << ": " << be->name() << " skipped: " << why << "\n";
        continue;
      }
      bool pass = oracle_error.empty();
      if (!pass) {
        checks.push_back({be->name(), "reference: " + oracle_error, {}, false});
      } else if (be.get() != &oracle) {
        err << "gdn-bench: " << label << ": checking " << be->name() << "\n";
        // Both paths of a backend that keeps a context: training, then recompute.
        for (bool train : {true, false}) {
          if (!train && !be->saved_bytes(ns.shape))
            continue;
          const std::string path = be->name() + (train ? "" : " recompute");
          std::map<std::string, std::vector<double>> got;
          if (std::string e = run_and_read(*be, p, st, train, got); !e.empty()) {
            checks.push_back({path, "run: " + e, {}, false});
            pass = false;
            continue;
          }
          for (const auto& [name, data] : got) {
            const Error e2 = compare(data, ref[name]);
            const bool ok = e2.ok(cfg.tol);
            checks.push_back({path + " @ " + label, name, e2, ok});
            pass = pass && ok;
          }
        }
      } else {
        checks.push_back({be->name() + " @ " + label, "all (NaN check)", {}, true});
      }
      if (!pass) {
        failed = true;
        err << "gdn-bench: " << label << ": " << be->name() << " FAILED its check; not timed\n";
        continue;
      }
      if (cfg.check_only)
        continue;
      const bool has_context = be->saved_bytes(ns.shape) > 0;
      if (has_context) {
        char note[160];
        std::snprintf(note, sizeof note, "%-10s %-28s %8.1f MB kept from fwd-train for bwd\n",
                      be->name().c_str(), ns.name.c_str(), be->saved_bytes(ns.shape) / 1e6);
        contexts += note;
      }
      for (const std::string& mode : cfg.modes) {
        if (!has_context && (mode == "fwd-train" || mode == "bwd-recompute"))
          continue; // the same passes as fwd and bwd
        err << "gdn-bench: " << label << ": timing " << be->name() << " " << mode << "\n";
        const bool f = mode == "fwd" || mode == "fwd-train" || mode == "fwdbwd";
        const bool b = !f || mode == "fwdbwd";
        const Run fwd_run = mode == "fwd" ? Run::fwd : Run::fwd_train;
        const Run bwd_run = mode == "bwd-recompute" ? Run::bwd_recompute : Run::bwd;
        std::vector<float> ms;
        // The backward from a context reads what the last training forward left.
        std::string e = mode == "bwd" ? run_pass(*be, p, Run::fwd_train, st) : std::string();
        auto enqueue = [&]() {
          std::string r = f ? run_pass(*be, p, fwd_run, st) : std::string();
          return r.empty() && b ? run_pass(*be, p, bwd_run, st) : r;
        };
        GraphExec graph;
        if (e.empty() && cfg.graph)
          e = graph.capture(st, enqueue);
        if (e.empty())
          e = timer.time(
              cfg.warmup, cfg.iters, !cfg.graph,
              [&] {
                return cfg.graph ? cuda_error(cudaGraphLaunch(graph.exec, st), "graph") : enqueue();
              },
              ms);
        if (!e.empty()) {
          err << "gdn-bench: " << label << ": " << be->name() << " " << mode << ": " << e << "\n";
          failed = true;
          break;
        }
        std::sort(ms.begin(), ms.end());
        TimeRow r{be->name(), ns.name, mode, ns.shape};
        r.median =
            ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
        r.min = ms.front();
        r.max = ms.back();
        const double flops =
            (f ? model_flops(ns.shape, Pass::fwd) : 0) + (b ? model_flops(ns.shape, Pass::bwd) : 0);
        const double bytes = (f ? model_bytes(ns.shape, Pass::fwd, cfg.states) : 0) +
                             (b ? model_bytes(ns.shape, Pass::bwd, cfg.states) : 0);
        r.tflops = flops / (r.median * 1e-3) / 1e12;
        r.gbps = bytes / (r.median * 1e-3) / 1e9;
        r.pct_flop = 100 * r.tflops / peaks.tflops;
        r.pct_bw = 100 * r.gbps / peaks.gbps;
        times.push_back(r);
      }
    }
  }

  char line[512];
  out << "\ncorrectness against reference (relative L2 error |x - ref| / |ref|, tolerance "
      << cfg.tol << ")\n";
  std::snprintf(line, sizeof line, "%-46s %-16s %11s %11s %9s %s\n", "backend @ shape", "output",
                "rel_l2", "max_abs", "nonfinite", "result");
  out << line;
  for (const CheckRow& c : checks) {
    std::snprintf(line, sizeof line, "%-46s %-16s %11.3e %11.3e %9zu %s\n", c.backend.c_str(),
                  c.output.c_str(), c.err.rel_l2, c.err.max_abs, c.err.non_finite,
                  c.pass ? "ok" : "FAIL");
    out << line;
  }
  if (!times.empty()) {
    out << "\ntimes ("
        << (cfg.graph ? "CUDA-graph replays, L2 not flushed" : "L2 flushed before each run")
        << "; median of " << cfg.iters << " after " << cfg.warmup << " warm-up)\n";
    std::snprintf(line, sizeof line, "%-10s %-28s %-13s %10s %19s %9s %9s %7s %6s\n", "backend",
                  "shape", "mode", "median ms", "min-max ms", "TFLOP/s", "GB/s", "%FLOP", "%BW");
    out << line;
    for (const TimeRow& r : times) {
      const std::string shape =
          r.shape_name + " " + std::to_string(r.shape.batch) + "x" +
          std::to_string(r.shape.seq_len) + "x" + std::to_string(r.shape.key_heads) + "/" +
          std::to_string(r.shape.value_heads) + "x" + std::to_string(r.shape.head_dim_k);
      char range[40];
      std::snprintf(range, sizeof range, "%.3f-%.3f", r.min, r.max);
      std::snprintf(line, sizeof line,
                    "%-10s %-28s %-13s %10.3f %19s %9.1f %9.0f %6.1f%% %5.1f%%\n",
                    r.backend.c_str(), shape.c_str(), r.mode.c_str(), r.median, range, r.tflops,
                    r.gbps, r.pct_flop, r.pct_bw);
      out << line;
    }
  }
  if (!contexts.empty())
    out << "\nsaved context (the training forward's tensors the backward reads)\n" << contexts;
  struct FlaRow {
    const TimeRow* ours;
    std::string fla_shape;
    double fla_ms, ratio;
  };
  std::vector<FlaRow> fla_rows;
  for (const TimeRow& r : times) {
    const Shape& sh = r.shape;
    const FlaTiming* f = cfg.compare_fla ? fla.find(sh.batch, sh.seq_len, sh.key_heads,
                                                    sh.value_heads, sh.head_dim_k)
                                         : nullptr;
    if (!f || r.backend == "reference")
      continue;
    const double ms = r.mode == "fwd" || r.mode == "fwd-train" ? f->fwd_ms
                      : r.mode == "fwdbwd"                     ? f->fwdbwd_ms
                      : f->fwdbwd_ms > 0 && f->fwd_ms > 0      ? f->fwdbwd_ms - f->fwd_ms
                                                               : -1;
    if (ms > 0)
      fla_rows.push_back({&r, f->name, ms, r.median / ms});
  }
  if (cfg.compare_fla) {
    out << "\nagainst FLA (" << cfg.fla_json << ": " << fla.env
        << "; CUDA-graph medians, bwd = fwdbwd - fwd); ratio = ours / FLA, below 1 is faster\n";
    std::snprintf(line, sizeof line, "%-10s %-28s %-13s %10s %-8s %10s %8s\n", "backend", "shape",
                  "mode", "ours ms", "FLA", "FLA ms", "ratio");
    out << line;
    for (const FlaRow& f : fla_rows) {
      std::snprintf(line, sizeof line, "%-10s %-28s %-13s %10.3f %-8s %10.3f %8.3f\n",
                    f.ours->backend.c_str(), f.ours->shape_name.c_str(), f.ours->mode.c_str(),
                    f.ours->median, f.fla_shape.c_str(), f.fla_ms, f.ratio);
      out << line;
    }
    if (fla_rows.empty())
      out << "(no timed shape matches a shape in " << cfg.fla_json << ")\n";
  }
  if (!cfg.json.empty()) {
    std::ofstream j(cfg.json);
    j << "{\n \"date\": \"" << when << "\",\n \"timing\": \"" << (cfg.graph ? "graph" : "flushed")
      << "\",\n \"device\": \"" << json_escape(dev_name)
      << "\",\n \"sm\": " << dev.major * 10 + dev.minor << ",\n \"peak_tflops\": " << peaks.tflops
      << ",\n \"peak_gbps\": " << peaks.gbps << ",\n \"tolerance\": " << cfg.tol
      << ",\n \"checks\": [";
    for (size_t i = 0; i < checks.size(); ++i)
      j << (i ? ",\n  " : "\n  ") << "{\"backend\": \"" << json_escape(checks[i].backend)
        << "\", \"output\": \"" << json_escape(checks[i].output)
        << "\", \"rel_l2\": " << checks[i].err.rel_l2 << ", \"max_abs\": " << checks[i].err.max_abs
        << ", \"non_finite\": " << checks[i].err.non_finite
        << ", \"pass\": " << (checks[i].pass ? "true" : "false") << "}";
    j << "\n ],\n \"times\": [";
    for (size_t i = 0; i < times.size(); ++i) {
      const TimeRow& r = times[i];
      j << (i ? ",\n  " : "\n  ") << "{\"backend\": \"" << r.backend << "\", \"shape\": \""
        << r.shape_name << "\", \"B\": " << r.shape.batch << ", \"T\": " << r.shape.seq_len
        << ", \"Hk\": " << r.shape.key_heads << ", \"Hv\": " << r.shape.value_heads
        << ", \"D\": " << r.shape.head_dim_k << ", \"mode\": \"" << r.mode
        << "\", \"median_ms\": " << r.median << ", \"min_ms\": " << r.min
        << ", \"max_ms\": " << r.max << ", \"tflops\": " << r.tflops << ", \"gbps\": " << r.gbps
        << ", \"pct_peak_flop\": " << r.pct_flop << ", \"pct_peak_bw\": " << r.pct_bw << "}";
    }
    j << "\n ],\n \"fla\": [";
    for (size_t i = 0; i < fla_rows.size(); ++i)
      j << (i ? ",\n  " : "\n  ") << "{\"backend\": \"" << fla_rows[i].ours->backend
        << "\", \"shape\": \"" << fla_rows[i].ours->shape_name << "\", \"mode\": \""
        << fla_rows[i].ours->mode << "\", \"fla_shape\": \"" << fla_rows[i].fla_shape
        << "\", \"ours_ms\": " << fla_rows[i].ours->median << ", \"fla_ms\": " << fla_rows[i].fla_ms
        << ", \"ratio\": " << fla_rows[i].ratio << "}";
    j << "\n ]\n}\n";
    if (!j) {
      err << "gdn-bench: could not write " << cfg.json << "\n";
      failed = true;
    }
  }
  cudaStreamDestroy(st);
  return failed ? 2 : 0;
}

} // namespace qr::gdn
