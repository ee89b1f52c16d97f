// gdn-bench (see gdn_bench.h and docs/gdn-bench.md): argument parsing, the correctness check of
// each backend against `reference`, timing (CUDA-graph replays, and eager runs with the L2
// flushed), memory, the peers (FLA, FlashQLA, cuDNN) through the Python driver on the very same
// inputs, and the tables, recommendation, JSON and plot.
#include "common.cuh"
#include "conv_bench.h"
#include "gdn_bench.h"
#include "harness.h"
#include "peers.h"
#include "report.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <map>
#include <sstream>
#include <unistd.h>

namespace qr::gdn {
namespace {

namespace fs = std::filesystem;

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

// The Python backends the driver runs, in table order.
const std::vector<std::string> kPeers = {"fla", "flash_qla", "transformer_engine"};

bool is_peer(const std::string& b) {
  return std::find(kPeers.begin(), kPeers.end(), b) != kPeers.end();
}

struct Config {
  std::vector<NamedShape> shapes;
  std::vector<std::string> backends; // empty: all
  std::vector<std::string> modes = all_modes();
  std::vector<int> seq_lens; // each shape at each of these T
  int warmup = 3, iters = 20;
  int peers_budget = 0; // seconds the peers' first calls may take; 0: no limit
  bool check_only = false, l2norm = true, states = false;
  int varlen = 0; // > 0: pack each shape's tokens into this many equal sequences (cu_seqlens)
  double tol = 2e-2;
  float gate_scale = 1.f; // g = gate_scale logsigmoid(N(0, 1))
  uint64_t seed = 1;
  std::string json, plot;
  std::string baseline = "fla";
  std::string python = "python3";
#ifdef QR_GDN_PEERS_DRIVER
  std::string driver = QR_GDN_PEERS_DRIVER;
#else
  std::string driver;
#endif
};

const char* kUsage = R"(usage: gdn-bench [options]
Checks each GatedDeltaNet backend against `reference` (relative L2 error of o, final state, dq, dk,
dv, dg, dbeta, d initial state; NaN check), times the ones that pass (CUDA-graph replay medians,
and eager runs with the L2 flushed before each), measures their memory, and recommends a backend.
  --recipe NAME[,NAME]     shapes of compiled recipes (micro batch, seq_length, GDN heads, dims)
  --shape B,T,Hk,Hv,D      a shape: batch, tokens, key heads, value heads, head dim (repeatable)
  --seq-lens T[,T..]       every shape at each of these sequence lengths (the plot is then a line
                           plot of time against T)
  --backend all|NAME[,..]  backends to run, default all: ours (reference, chunked, fused) and the
                           peers, run by the Python driver on the same input tensors: fla (FLA's
                           Triton kernels, pinned: FLA_FLASH_QLA=0, no TileLang), flash_qla
                           (FlashQLA), transformer_engine (cuDNN frontend's GDN, which Transformer
                           Engine runs); a peer that cannot run says why on its row
  --baseline NAME          the backend the ratios are taken against (default fla)
  --mode MODE[,MODE]       passes to time, default all: fwd (inference), fwd-train (also keeps the
                           context for the backward), bwd (from that context), bwd-recompute
                           (self-contained; ours only), fwdbwd (fwd-train + bwd, a training step)
  --warmup N               untimed runs per pass (default 3)
  --iters N                timed runs per pass and method (default 20)
  --check                  run only the correctness check against reference, no timing
  --tol X                  largest relative L2 error a backend may show (default 0.02)
  --initial-state          also feed an initial state and a final-state gradient
  --varlen N               pack each (batch-1) shape's T tokens into N sequences of near-equal
                           length (cu_seqlens; per-sequence states), for every backend: the peers
                           get the same offsets and states (chunked refuses packed sequences)
  --no-l2norm              no q/k l2 normalisation inside the kernel (q, k drawn N(0, 1/D))
  --gate-scale X           gates g = X logsigmoid(N(0, 1)), about -0.8 X a token (default 1; 0
                           means no decay): smaller X is slower decay
  --seed N                 input seed (default 1)
  --json FILE              also write the results as JSON
  --plot FILE.png|FILE.svg bars per backend and shape for fwd and fwdbwd (matplotlib, through the
                           driver)
  --peers-budget S         seconds the peers' imports and first calls (compiling, autotuning)
                           may take before the driver stops them (default 0: no limit)
  --python EXE             the Python that runs the driver (default python3)
  --peers-driver FILE      the driver (default: kernels/bench/peers/gdn_peers.py of this source tree)
  --op gdn|conv            what to bench: the GDN backends (default) or the short convolution
                           (`--op conv --help` lists its options)
  --help                   this text
Default shapes: qwen35_35b (4,4096,16,32,128) and qwen35_397b (1,4096,16,64,128).
Exit codes: 0 ok, 2 bad arguments or one of our backends failed its check, 77 no CUDA device.
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
                  const std::vector<std::string>& ours, Config& cfg, bool& help) {
  bool default_modes = true, baseline_given = false;
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
    } else if (a == "--seq-lens") {
      if (!value(v) || split(v, ',').empty())
        return "--seq-lens needs T[,T...] (positive integers)";
      for (const std::string& t : split(v, ',')) {
        if (!parse_int(t, 1, 1 << 24, n))
          return "--seq-lens: '" + t + "' is not a positive integer";
        cfg.seq_lens.push_back(int(n));
      }
    } else if (a == "--backend") {
      if (!value(v))
        return "--backend needs a value";
      cfg.backends = v == "all" ? std::vector<std::string>{} : split(v, ',');
      for (const std::string& b : cfg.backends)
        if (!is_peer(b) && std::find(ours.begin(), ours.end(), b) == ours.end())
          return "--backend: unknown backend '" + b +
                 "' (reference, chunked, fused, fla, flash_qla, transformer_engine or all)";
    } else if (a == "--baseline") {
      if (!value(v) || (!is_peer(v) && std::find(ours.begin(), ours.end(), v) == ours.end()))
        return "--baseline needs a backend name (reference, chunked, fused, fla, flash_qla, "
               "transformer_engine)";
      cfg.baseline = v;
      baseline_given = true;
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
    } else if (a == "--peers-budget") {
      if (!value(v) || !parse_int(v, 0, 1 << 30, n))
        return "--peers-budget needs a non-negative number of seconds";
      cfg.peers_budget = int(n);
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
    } else if (a == "--gate-scale") {
      char* end = nullptr;
      float x = 0.f;
      if (!value(v))
        return "--gate-scale needs a number in [0, 64]";
      if (x = std::strtof(v.c_str(), &end), v.empty() || *end != '\0' || !(x >= 0.f && x <= 64.f))
        return "--gate-scale: '" + v + "' is not a number in [0, 64]";
      cfg.gate_scale = x;
    } else if (a == "--json" || a == "--plot" || a == "--python" || a == "--peers-driver") {
      if (!value(v) || v.empty())
        return a + " needs a file name";
      (a == "--json"     ? cfg.json
       : a == "--plot"   ? cfg.plot
       : a == "--python" ? cfg.python
                         : cfg.driver) = v;
      if (a == "--plot" && !(v.size() > 4 && (v.compare(v.size() - 4, 4, ".png") == 0 ||
                                              v.compare(v.size() - 4, 4, ".svg") == 0)))
        return "--plot " + v + ": the plot is a .png or .svg file";
    } else {
      return "unknown argument '" + a + "' (see --help)";
    }
  }
  if (baseline_given && !cfg.backends.empty() &&
      std::find(cfg.backends.begin(), cfg.backends.end(), cfg.baseline) == cfg.backends.end())
    return "--baseline " + cfg.baseline + " is not among the --backend list";
  if (cfg.shapes.empty())
    cfg.shapes = {{"qwen35_35b", make_shape(4, 4096, 16, 32, 128)},
                  {"qwen35_397b", make_shape(1, 4096, 16, 64, 128)}};
  if (!cfg.seq_lens.empty()) {
    std::vector<NamedShape> each;
    for (const NamedShape& s : cfg.shapes)
      for (int t : cfg.seq_lens) {
        NamedShape c = s;
        c.shape.seq_len = t;
        each.push_back(c);
      }
    cfg.shapes = each;
  }
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

// One backend at one shape (BenchResult::shape indexes Config::shapes).
struct Result : BenchResult {
  size_t kernels = 0; // CUDA kernels of one training step (a peer's, from torch.profiler)
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

// The input tensors exactly as the device holds them, for the driver (peers::gdn_input_layout:
// packed, the offsets our backends get and one state per sequence).
std::string write_inputs(const Problem& p, const NamedShape& ns, const std::string& stem) {
  const Shape& s = ns.shape;
  const peers::ShapeInfo info{ns.name,       s.batch,      s.seq_len,  s.key_heads,
                              s.value_heads, s.head_dim_k, s.sequences};
  const std::map<std::string, const DeviceBuffer*> buffers = {
      {"q", &p.q},   {"k", &p.k},       {"v", &p.v},
      {"g", &p.g},   {"beta", &p.beta}, {"do", &p.d_o},
      {"h0", &p.h0}, {"dht", &p.dht},   {"cu_seqlens", &p.cu_seqlens}};
  const std::vector<peers::TensorLayout> layout =
      peers::gdn_input_layout(info, p.h0.bytes() && p.dht.bytes());
  std::vector<DeviceTensor> items;
  for (const peers::TensorLayout& t : layout)
    items.push_back({t.name.c_str(), buffers.at(t.name), t.dtype.c_str(), t.shape});
  char extra[96];
  std::snprintf(extra, sizeof extra, "\"scale\": %.9g, \"l2norm\": %s", p.opt.effective_scale(s),
                p.opt.l2norm_qk ? "true" : "false");
  return write_device_tensors(stem, info, items, extra);
}

// What a user does to run `backend` in a Megatron-Bridge recipe.
std::string how_to_select(const std::string& backend) {
  if (backend == "fla")
    return "set model.gdn_kernel_backend=fla, with FLA_FLASH_QLA=0 or without flash-qla "
           "installed (FLA >= 0.6 dispatches to FlashQLA when it is)";
  if (backend == "flash_qla")
    return "set model.gdn_kernel_backend=fla and pip install flash-qla (FLA >= 0.6 dispatches to "
           "it on Hopper and Blackwell)";
  if (backend == "transformer_engine")
    return "set model.gdn_kernel_backend=transformer_engine (Transformer Engine >= 2.19 with "
           "nvidia-cudnn-frontend >= 1.29)";
  return "";
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
  std::vector<std::unique_ptr<Backend>> backends = all_backends();
  std::vector<std::string> ours;
  for (const auto& b : backends)
    ours.push_back(b->name());
  Config cfg;
  bool help = false;
  if (std::string e = parse(args, resolver, ours, cfg, help); !e.empty()) {
    err << "gdn-bench: " << e << "\n";
    return 2;
  }
  if (help) {
    out << kUsage;
    return 0;
  }
  auto selected = [&](const std::string& name) {
    return cfg.backends.empty() ||
           std::find(cfg.backends.begin(), cfg.backends.end(), name) != cfg.backends.end();
  };
  std::vector<std::string> peer_list;
  for (const std::string& p : kPeers)
    if (selected(p))
      peer_list.push_back(p);
  if ((!peer_list.empty() || !cfg.plot.empty()) && access(cfg.driver.c_str(), R_OK) != 0) {
    err << "gdn-bench: --peers-driver " << (cfg.driver.empty() ? "(none)" : cfg.driver)
        << ": not readable; give the path of kernels/bench/peers/gdn_peers.py\n";
    return 2;
  }
  DeviceInfo dev;
  std::string dev_name;
  if (std::string e = device_info(dev, dev_name); !e.empty()) {
    err << "gdn-bench: no CUDA device (skipping)\n";
    return 77;
  }
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
  // The driver's files: the inputs of every shape, the peers' outputs, peers.json.
  ScratchDir scratch;
  if ((!peer_list.empty() || (!cfg.plot.empty() && cfg.json.empty())) &&
      !make_scratch_dir(scratch, "gdn-bench", err))
    return 2;
  const std::string work = scratch.dir;

  std::vector<CheckRow> checks;
  std::vector<Result> results;
  std::vector<std::map<std::string, std::vector<double>>> refs(cfg.shapes.size());
  std::vector<std::string> oracle_errors(cfg.shapes.size());
  std::vector<std::string> input_dirs(cfg.shapes.size());
  bool failed = false;
  for (size_t si = 0; si < cfg.shapes.size(); ++si) {
    const NamedShape& ns = cfg.shapes[si];
    const std::string label = ns.name + " (" + shape_text(ns.shape) + ")";
    Problem p;
    Options opt;
    opt.l2norm_qk = cfg.l2norm;
    InputSpec spec;
    spec.initial_state = spec.d_final_state = cfg.states;
    spec.seed = cfg.seed;
    spec.g_scale = cfg.gate_scale;
    spec.qk_scale = cfg.l2norm ? 1.f : 1.f / std::sqrt(float(ns.shape.head_dim_k));
    for (int i = 0; i < ns.shape.sequences; ++i) // near-equal lengths, the longer ones first
      spec.seq_lens.push_back(ns.shape.seq_len / ns.shape.sequences +
                              (i < ns.shape.seq_len % ns.shape.sequences));
    err << "gdn-bench: " << label << ": preparing inputs\n";
    size_t ws = 0, ctx = 0; // for the selected backends and the oracle, which always runs
    for (const auto& b : backends)
      if (b->unsupported(dev, ns.shape).empty() && (selected(b->name()) || b == backends.front())) {
        ws = std::max(
            {ws, b->workspace_bytes(ns.shape, Pass::fwd), b->workspace_bytes(ns.shape, Pass::bwd)});
        ctx = std::max(ctx, b->saved_bytes(ns.shape));
      }
    if (std::string e = p.init(ns.shape, opt, spec);
        !e.empty() || !(e = p.ensure_workspace(ws)).empty() || !(e = p.ensure_saved(ctx)).empty()) {
      err << "gdn-bench: " << label << ": " << e << "\n";
      failed = true;
      oracle_errors[si] = e;
      continue;
    }
    if (!peer_list.empty()) {
      input_dirs[si] = work + "/shape" + std::to_string(si);
      std::error_code ec;
      fs::create_directories(input_dirs[si], ec);
      if (std::string e = write_inputs(p, ns, input_dirs[si] + "/inputs"); !e.empty()) {
        err << "gdn-bench: " << label << ": writing the inputs for the peers: " << e << "\n";
        failed = true;
        input_dirs[si].clear();
      }
    }
    // Correctness: reference first (NaN check only), then each selected backend against it.
    std::map<std::string, std::vector<double>>& ref = refs[si];
    const Backend& oracle = *backends.front();
    std::string& oracle_error = oracle_errors[si];
    oracle_error = oracle.unsupported(dev, ns.shape);
    if (oracle_error.empty()) {
      err << "gdn-bench: " << label << ": running reference\n";
      oracle_error = run_and_read(oracle, p, st, true, ref);
    }
    for (const auto& [name, data] : ref)
      if (size_t bad = count_non_finite(data); bad && oracle_error.empty())
        oracle_error = name + " has " + std::to_string(bad) + " non-finite values";
    for (const auto& be : backends) {
      if (!selected(be->name()))
        continue;
      Result res;
      res.backend = be->name();
      res.shape = si;
      res.runs = be.get() == &oracle ? "ours, the fp32 oracle" : "ours";
      if (std::string why = be->unsupported(dev, ns.shape); !why.empty()) {
        err << "gdn-bench: " << label << ": " << be->name() << " skipped: " << why << "\n";
        res.status = "unavailable";
        res.reason = why;
        results.push_back(res);
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
            if (e2.rel_l2 > res.worst_rel_l2) {
              res.worst_rel_l2 = e2.rel_l2;
              res.worst_output = name;
            }
          }
        }
      } else {
        checks.push_back({be->name() + " @ " + label, "all (NaN check)", {}, true});
      }
      if (!pass) {
        failed = true;
        err << "gdn-bench: " << label << ": " << be->name() << " FAILED its check; not timed\n";
        res.status = "failed check";
        results.push_back(res);
        continue;
      }
      // Memory: the context the training forward keeps, and everything a training step holds
      // beyond its inputs (outputs, context, scratch, gradients), like the peers' peak.
      const size_t saved = be->saved_bytes(ns.shape);
      res.saved_bytes = double(saved);
      res.peak_bytes = double(p.o.bytes() + p.ht.bytes() + saved +
                              std::max(be->workspace_bytes(ns.shape, Pass::fwd),
                                       be->workspace_bytes(ns.shape, Pass::bwd)) +
                              p.dq.bytes() + p.dk.bytes() + p.dv.bytes() + p.dg.bytes() +
                              p.dbeta.bytes() + p.dh0.bytes());
      const bool has_context = saved > 0;
      for (const std::string& mode : cfg.check_only ? std::vector<std::string>{} : cfg.modes) {
        if (!has_context && (mode == "fwd-train" || mode == "bwd-recompute"))
          continue; // the same passes as fwd and bwd
        err << "gdn-bench: " << label << ": timing " << be->name() << " " << mode << "\n";
        const bool f = mode == "fwd" || mode == "fwd-train" || mode == "fwdbwd";
        const bool b = !f || mode == "fwdbwd";
        const Run fwd_run = mode == "fwd" ? Run::fwd : Run::fwd_train;
        const Run bwd_run = mode == "bwd-recompute" ? Run::bwd_recompute : Run::bwd;
        // The backward from a context reads what the last training forward left.
        std::string e = mode == "bwd" ? run_pass(*be, p, Run::fwd_train, st) : std::string();
        auto enqueue = [&]() {
          std::string r = f ? run_pass(*be, p, fwd_run, st) : std::string();
          return r.empty() && b ? run_pass(*be, p, bwd_run, st) : r;
        };
        std::vector<float> eager_ms, graph_ms;
        if (e.empty())
          e = timer.time(cfg.warmup, cfg.iters, true, enqueue, eager_ms);
        GraphExec graph;
        if (e.empty())
          e = graph.capture(st, enqueue);
        if (e.empty())
          e = timer.time(
              cfg.warmup, cfg.iters, false,
              [&] { return cuda_error(cudaGraphLaunch(graph.exec, st), "graph"); }, graph_ms);
        if (!e.empty()) {
          err << "gdn-bench: " << label << ": " << be->name() << " " << mode << ": " << e << "\n";
          failed = true;
          res.status = "error";
          res.reason = mode + ": " + e;
          break;
        }
        res.modes.push_back({mode, stats_of(graph_ms), stats_of(eager_ms), ""});
      }
      results.push_back(res);
    }
    if (peer_list.empty())
      ref.clear(); // kept only for the peers' check
  }

  // The peers: one driver run over every shape's inputs, then their outputs against reference.
  if (!peer_list.empty()) {
    std::vector<std::string> argv = {cfg.python, cfg.driver, "gdn", "--out", work + "/peers"};
    std::string backend_arg, mode_arg;
    for (const std::string& b : peer_list)
      backend_arg += (backend_arg.empty() ? "" : ",") + b;
    for (const std::string& m : cfg.modes)
      if (m != "bwd-recompute")
        mode_arg += (mode_arg.empty() ? "" : ",") + m;
    argv.insert(argv.end(), {"--backend", backend_arg});
    if (!mode_arg.empty())
      argv.insert(argv.end(), {"--modes", mode_arg});
    argv.insert(argv.end(), {"--warmup", std::to_string(cfg.warmup), "--iters",
                             std::to_string(cfg.check_only ? 1 : cfg.iters), "--prepare-timeout",
                             std::to_string(cfg.peers_budget)});
    std::vector<peers::Row> rows;
    bool keep_files = false;
    const std::string why = run_peers_driver(argv, input_dirs, work, "gdn-bench", backend_arg,
                                             "FlashQLA compiles for about 2 minutes per new shape",
                                             err, rows, keep_files);
    if (keep_files)
      scratch.dir.clear();
    for (const std::string& b : peer_list)
      for (size_t si = 0; si < cfg.shapes.size(); ++si) {
        Result res;
        res.backend = b;
        res.peer = true;
        res.shape = si;
        const NamedShape& ns = cfg.shapes[si];
        const std::string label = ns.name + " (" + shape_text(ns.shape) + ")";
        const peers::Row* row =
            find_row(rows, b, ns.name, ns.shape.batch, ns.shape.seq_len, ns.shape.value_heads);
        if (!row) {
          res.status = "error";
          res.reason = why.empty() ? "no row from the driver" : why;
          results.push_back(res);
          continue;
        }
        take_row(res, *row, "Triton kernels");
        res.kernels = row->kernels.size();
        if (res.status == "ok") {
          std::map<std::string, std::vector<double>> got;
          const std::string e = oracle_errors[si].empty() ? peers::read_tensors(row->outputs, got)
                                                          : "reference: " + oracle_errors[si];
          // Every output and gradient a peer computes must come back (dh0 only with a state).
          std::vector<std::string> need = {"o", "ht", "dq", "dk", "dv", "dg", "dbeta"};
          if (cfg.states)
            need.push_back("dh0");
          if (!check_peer_outputs(e, got, need, refs[si], cfg.tol, res,
                                  [&](const std::string& output, const Error& er, bool ok) {
                                    checks.push_back({b + " @ " + label, output, er, ok});
                                  })) {
            res.status = "failed check";
            err << "gdn-bench: " << label << ": " << b << " FAILED its check against reference\n";
          }
          for (const peers::ModeTimes& t : row->times)
            res.modes.push_back({t.mode, t.graph, t.eager, t.graph_error});
          sort_modes(res.modes, all_modes()); // fwd, fwd-train, bwd, fwdbwd
        }
        results.push_back(res);
      }
  }

  sort_results(results, kPeers, ours);
  auto baseline_of = [&](size_t si) { return qr::gdn::baseline_of(results, cfg.baseline, si); };

  char line[640];
  out << "\ncorrectness against reference (relative L2 error |x - ref| / |ref|, tolerance "
      << cfg.tol << ")\n";
  std::snprintf(line, sizeof line, "%-52s %-16s %11s %11s %9s %s\n", "backend @ shape", "output",
                "rel_l2", "max_abs", "nonfinite", "result");
  out << line;
  for (const CheckRow& c : checks) {
    std::snprintf(line, sizeof line, "%-52s %-16s %11.3e %11.3e %9zu %s\n", c.backend.c_str(),
                  c.output.c_str(), c.err.rel_l2, c.err.max_abs, c.err.non_finite,
                  c.pass ? "ok" : "FAIL");
    out << line;
  }
  if (!cfg.check_only) {
    out << "\ntimes: graph = CUDA-graph replay median (GPU time), eager = median of eager runs "
           "with the L2 flushed before each (our C++ launches, or the peer's Python); "
        << cfg.iters << " runs after " << cfg.warmup << " warm-up; x " << cfg.baseline
        << " = graph time / " << cfg.baseline << "'s\n";
    std::snprintf(line, sizeof line, "%-18s %-30s %-13s %10s %10s %8s %9s %9s %7s %6s\n", "backend",
                  "shape", "mode", "graph ms", "eager ms",
                  ("x " + cfg.baseline).substr(0, 8).c_str(), "TFLOP/s", "GB/s", "%FLOP", "%BW");
    out << line;
    for (const Result& r : results) {
      const NamedShape& ns = cfg.shapes[r.shape];
      const Shape& sh = ns.shape;
      const std::string shape = ns.name + " " + std::to_string(sh.batch) + "x" +
                                std::to_string(sh.seq_len) + "x" + std::to_string(sh.key_heads) +
                                "/" + std::to_string(sh.value_heads) + "x" +
                                std::to_string(sh.head_dim_k);
      const Result* base = baseline_of(r.shape);
      for (const ModeResult& m : r.modes) {
        const bool f = m.mode == "fwd" || m.mode == "fwd-train" || m.mode == "fwdbwd";
        const bool b = !f || m.mode == "fwdbwd";
        const double flops =
            (f ? model_flops(sh, Pass::fwd) : 0) + (b ? model_flops(sh, Pass::bwd) : 0);
        const double bytes = (f ? model_bytes(sh, Pass::fwd, cfg.states) : 0) +
                             (b ? model_bytes(sh, Pass::bwd, cfg.states) : 0);
        const double t = m.graph.median > 0 ? m.graph.median : m.eager.median;
        const double tflops = flops / (t * 1e-3) / 1e12, gbps = bytes / (t * 1e-3) / 1e9;
        std::snprintf(line, sizeof line,
                      "%-18s %-30s %-13s %10s %10s %8s %9.1f %9.0f %6.1f%% %5.1f%%\n",
                      r.backend.c_str(), shape.c_str(), m.mode.c_str(),
                      ms_text(m.graph.median).c_str(), ms_text(m.eager.median).c_str(),
                      ratio_text(m.graph.median, base ? base->graph_ms(m.mode) : -1).c_str(),
                      tflops, gbps, 100 * tflops / peaks.tflops, 100 * gbps / peaks.gbps);
        out << line;
        if (!m.graph_error.empty())
          out << "  (no graph replay: " << one_line(m.graph_error) << ")\n";
      }
    }
  }

  // Per backend and shape: the figures a person compares, then why a row has none.
  out << "\nper backend (graph medians; saved = bytes a training forward keeps for the backward; "
         "peak = a training step's memory beyond its inputs; err = the largest relative L2 error "
         "of any output or gradient against reference)\n";
  std::snprintf(line, sizeof line, "%-18s %-18s %-13s %9s %9s %9s %8s %9s %9s %9s  %s\n", "backend",
                "shape", "status", "fwd ms", "fwdbwd ms",
                ("x " + cfg.baseline).substr(0, 9).c_str(), "eager fb", "saved MB", "peak MB",
                "err", "how it ran / why not");
  out << line;
  for (size_t si = 0; si < cfg.shapes.size(); ++si) {
    const Result* base = baseline_of(si);
    for (const Result& r : results) {
      if (r.shape != si)
        continue;
      const ModeResult* fb = r.mode("fwdbwd");
      char err_text[32] = "-";
      if (r.worst_rel_l2 >= 0)
        std::snprintf(err_text, sizeof err_text, "%.1e", r.worst_rel_l2);
      const std::string note = result_note(r, "");
      // The note can be long (versions, kernel names): outside the fixed-size line.
      std::snprintf(line, sizeof line, "%-18s %-18s %-13s %9s %9s %9s %8s %9s %9s %9s  ",
                    r.backend.c_str(),
                    (cfg.seq_lens.empty() ? cfg.shapes[si].name.substr(0, 12)
                                          : cfg.shapes[si].name.substr(0, 11) + " T" +
                                                std::to_string(cfg.shapes[si].shape.seq_len))
                        .c_str(),
                    r.status.c_str(), ms_text(r.graph_ms("fwd")).c_str(),
                    ms_text(r.graph_ms("fwdbwd")).c_str(),
                    ratio_text(r.graph_ms("fwdbwd"), base ? base->graph_ms("fwdbwd") : -1).c_str(),
                    ms_text(fb ? fb->eager.median : -1).c_str(), mb(r.saved_bytes).c_str(),
                    mb(r.peak_bytes).c_str(), err_text);
      out << line << one_line(note) << "\n";
    }
  }

  // Where a peer's training step goes, for comparing kernel by kernel with ours (docs/gdn-bench.md
  // has ours per kernel from ncu).
  print_peer_kernel_times(out, results, [&](const Result& r) {
    const NamedShape& ns = cfg.shapes[r.shape];
    return ns.name + " (" + shape_text(ns.shape) + ")";
  });

  // The recommendation: the fastest training step that passed its check, and the fastest of the
  // backends a recipe can select (ours cannot be selected by Megatron-Core).
  std::vector<Recommendation> recs;
  if (!cfg.check_only) {
    out << "\n";
    for (size_t si = 0; si < cfg.shapes.size(); ++si) {
      const NamedShape& ns = cfg.shapes[si];
      const auto [best, best_peer] = fastest_of(results, si, "reference");
      const Result* base = baseline_of(si);
      auto against = [&](const Result& r) { return against_text(r, base, cfg.baseline); };
      std::string text = "recommendation for " + ns.name + " (" + shape_text(ns.shape) + "): ";
      if (!best) {
        text += "no backend ran a training step here";
      } else {
        text += "fastest here: " + best->backend + ", " + against(*best);
        if (best->peer)
          text += "; " + how_to_select(best->backend);
        else if (best_peer)
          text += " (ours: no recipe selects it); of the recipe's choices " + best_peer->backend +
                  ", " + against(*best_peer) + ": " + how_to_select(best_peer->backend);
        else
          text += " (ours: no recipe selects it; no peer ran)";
      }
      // A peer that was asked for but has no training step here may be the fastest: say so.
      std::string untimed;
      for (const Result& r : results)
        if (r.shape == si && r.peer && (r.status != "ok" || r.graph_ms("fwdbwd") <= 0))
          untimed += (untimed.empty() ? "" : ", ") + r.backend + " (" + r.status + ")";
      if (!untimed.empty())
        text += "; not timed here, see their rows: " + untimed;
      out << text << "\n";
      recs.push_back({ns.name, ns.shape.seq_len, text, best ? best->backend : "",
                      best_peer ? best_peer->backend : ""});
    }
  }

  std::string json_path = cfg.json;
  if (json_path.empty() && !cfg.plot.empty())
    json_path = work + "/bench.json";
  if (!json_path.empty()) {
    std::ostringstream j;
    j.precision(6);
    j << "{\n \"schema\": \"qwen-recipe gdn-bench 2\",\n \"date\": \"" << when
      << "\",\n \"device\": " << peers::json_string(dev_name)
      << ",\n \"sm\": " << dev.major * 10 + dev.minor << ",\n \"peak_tflops\": " << peaks.tflops
      << ",\n \"peak_gbps\": " << peaks.gbps << ",\n \"tolerance\": " << cfg.tol
      << ",\n \"warmup\": " << cfg.warmup << ",\n \"iters\": " << cfg.iters
      << ",\n \"baseline\": " << peers::json_string(cfg.baseline) << ",\n \"checks\": [";
    for (size_t i = 0; i < checks.size(); ++i)
      j << (i ? ",\n  " : "\n  ") << "{\"backend\": " << peers::json_string(checks[i].backend)
        << ", \"output\": " << peers::json_string(checks[i].output)
        << ", \"rel_l2\": " << (std::isfinite(checks[i].err.rel_l2) ? checks[i].err.rel_l2 : -1)
        << ", \"max_abs\": " << (std::isfinite(checks[i].err.max_abs) ? checks[i].err.max_abs : -1)
        << ", \"non_finite\": " << checks[i].err.non_finite
        << ", \"pass\": " << (checks[i].pass ? "true" : "false") << "}";
    j << "\n ],\n \"backends\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      const NamedShape& ns = cfg.shapes[r.shape];
      const Result* base = baseline_of(r.shape);
      j << (i ? ",\n  " : "\n  ") << "{\"backend\": " << peers::json_string(r.backend)
        << ", \"kind\": \"" << (r.peer ? "peer" : "ours")
        << "\", \"shape\": " << peers::json_string(ns.name) << ", \"B\": " << ns.shape.batch
        << ", \"T\": " << ns.shape.seq_len << ", \"Hk\": " << ns.shape.key_heads
        << ", \"Hv\": " << ns.shape.value_heads << ", \"D\": " << ns.shape.head_dim_k;
      json_result_status(j, r);
      j << ", \"kernels\": " << r.kernels;
      json_result_times(j, r, base, false);
    }
    j << "\n ],\n \"recommendations\": ";
    json_recommendations(j, recs, "fastest_selectable");
    j << "\n}\n";
    if (!write_json_and_plot(json_path, j.str(), cfg.python, cfg.driver, cfg.plot, "gdn-bench",
                             err))
      failed = true;
  }
  cudaStreamDestroy(st);
  return failed ? 2 : 0;
}

} // namespace qr::gdn
