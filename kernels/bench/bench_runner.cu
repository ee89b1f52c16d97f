// See bench_runner.cuh and gdn_bench.h.
#include "bench_runner.cuh"
#include "common.cuh"
#include "gdn_bench.h"
#include "report.cuh"

#include <ctime>
#include <filesystem>
#include <unistd.h>

namespace qr::gdn {
namespace {

// Nominal dense bf16 tensor rate and DRAM bandwidth of device 0.
void nominal_peaks(const DeviceInfo& d, double& tflops, double& gbps) {
  int clock_khz = 0, mem_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  // dense bf16 FLOP per clock per SM: A100 2048, H100/H200 4096, B200 8192
  const double per_sm = d.major >= 10 ? 8192 : d.major == 9 ? 4096 : 2048;
  tflops = d.sm_count * per_sm * clock_khz * 1e3 / 1e12;
  gbps = 2.0 * mem_khz * 1e3 * bus_bits / 8 / 1e9;
}

std::string join(const std::vector<std::string>& v) {
  std::string t;
  for (const std::string& s : v)
    t += (t.empty() ? "" : ",") + s;
  return t;
}

// The peers: one driver run over every shape's inputs, then their outputs against the reference.
void run_peers(RunContext& ctx, const BenchOp& op, const std::vector<std::string>& peer_list,
               const std::vector<std::string>& input_dirs, const std::vector<ShapeReference>& refs,
               ScratchDir& scratch) {
  const BenchOptions& o = ctx.o;
  std::vector<std::string> modes;
  for (const std::string& m : o.modes)
    if (m != "bwd-recompute") // ours only
      modes.push_back(m);
  std::vector<std::string> argv = {
      o.python, o.driver, ctx.op.op, "--out", scratch.dir + "/peers", "--backend", join(peer_list)};
  if (!modes.empty())
    argv.insert(argv.end(), {"--modes", join(modes)});
  argv.insert(argv.end(), {"--warmup", std::to_string(o.warmup), "--iters",
                           std::to_string(o.check_only ? 1 : o.iters), "--prepare-timeout",
                           std::to_string(o.peers_budget)});
  std::vector<peers::Row> rows;
  bool keep_files = false;
  const std::string why =
      run_peers_driver(argv, input_dirs, scratch.dir, ctx.op.prefix, join(peer_list),
                       op.driver_note(), ctx.err, rows, keep_files);
  if (keep_files)
    scratch.dir.clear();
  const std::vector<std::string> need = op.peer_outputs(o);
  for (const std::string& b : peer_list)
    for (size_t si = 0; si < o.shapes.size(); ++si) {
      BenchResult res;
      res.backend = b;
      res.peer = true;
      res.shape = si;
      const NamedShape& ns = o.shapes[si];
      const std::string label = ns.name + " (" + shape_text(ns) + ")";
      const peers::Row* row =
          find_row(rows, b, ns.name, ns.shape.batch, ns.shape.seq_len, ns.shape.value_heads);
      if (!row) {
        res.status = "error";
        res.reason = why.empty() ? "no row from the driver" : why;
        ctx.results.push_back(res);
        continue;
      }
      take_row(res, *row, op.fla_kernels());
      res.kernels = row->kernels.size();
      res.own_kernels_ms = row->own_kernels_ms;
      if (res.status == "ok") {
        std::map<std::string, std::vector<double>> got;
        const std::string e = !refs[si].error.empty() ? "reference: " + refs[si].error
                                                      : peers::read_tensors(row->outputs, got);
        if (!check_peer_outputs(e, got, need, refs[si].outputs, o.tol, res,
                                [&](const std::string& output, const Error& er, bool ok) {
                                  CheckRow c{b,          ns.name,       output, er.rel_l2,
                                             er.max_abs, er.non_finite, ok,     ""};
                                  ctx.checks.push_back(c);
                                })) {
          res.status = "failed check";
          ctx.say() << label << ": " << b << " FAILED its check against reference\n";
        }
        for (const peers::ModeTimes& t : row->times)
          res.modes.push_back({t.mode, t.graph, t.eager, t.graph_error});
        sort_modes(res.modes, ctx.op.modes);
      }
      ctx.results.push_back(res);
    }
}

} // namespace

std::string RunContext::time_mode(const std::string& mode,
                                  const std::function<std::string()>& enqueue, ModeResult& out) {
  std::vector<float> eager_ms, graph_ms;
  if (std::string e = timer.time(o.warmup, o.iters, true, enqueue, eager_ms); !e.empty())
    return e;
  GraphExec graph;
  std::string graph_error = graph.capture(stream, enqueue);
  if (graph_error.empty())
    graph_error = timer.time(
        o.warmup, o.iters, false,
        [&] { return cuda_error(cudaGraphLaunch(graph.exec, stream), "graph"); }, graph_ms);
  if (!graph_error.empty()) {
    cudaGetLastError(); // a library that cannot be captured leaves its error; the eager times stand
    graph_ms.clear();
  }
  out = {mode, stats_of(graph_ms), stats_of(eager_ms), graph_error};
  return {};
}

void RunContext::check(BenchResult& res, const std::string& path, const std::string& shape,
                       const std::string& output, const Error& e, bool ok) {
  checks.push_back({path, shape, output, e.rel_l2, e.max_abs, e.non_finite, ok, ""});
  if (e.rel_l2 > res.worst_rel_l2) {
    res.worst_rel_l2 = e.rel_l2;
    res.worst_output = output;
  }
}

int run_bench(BenchOp& op, const std::vector<std::string>& args,
              const RecipeShapeResolver& resolver, std::ostream& out, std::ostream& err) {
  const OpInfo& info = op.info();
  BenchOptions o;
#ifdef QR_GDN_PEERS_DRIVER
  o.driver = QR_GDN_PEERS_DRIVER;
#endif
  bool help = false;
  if (std::string e = parse_bench_options(info, args, resolver, o, help); !e.empty()) {
    err << info.prefix << ": " << e << "\n";
    return 2;
  }
  if (help) {
    out << info.usage;
    return 0;
  }
  std::vector<std::string> peer_list;
  for (const std::string& p : info.peers)
    if (o.selected(p))
      peer_list.push_back(p);
  if ((!peer_list.empty() || !o.plot.empty()) && access(o.driver.c_str(), R_OK) != 0) {
    err << info.prefix << ": --peers-driver " << (o.driver.empty() ? "(none)" : o.driver)
        << ": not readable; give the path of kernels/bench/peers/gdn_peers.py\n";
    return 2;
  }
  RunContext ctx(o, info, err);
  std::string dev_name;
  if (std::string e = device_info(ctx.dev, dev_name); !e.empty()) {
    err << info.prefix << ": no CUDA device (skipping)\n";
    return 77;
  }
  ReportSpec spec;
  spec.op = &info;
  spec.opts = &o;
  spec.device = dev_name;
  spec.sm = ctx.dev.major * 10 + ctx.dev.minor;
  spec.sm_count = ctx.dev.sm_count;
  nominal_peaks(ctx.dev, spec.peak_tflops, spec.peak_gbps);
  op.describe(spec, o);
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  spec.date = when;
  print_header(out, spec);

  cudaStream_t st = nullptr;
  if (cudaStreamCreate(&st) != cudaSuccess) {
    err << info.prefix << ": cudaStreamCreate failed\n";
    return 2;
  }
  ctx.stream = st;
  if (std::string e = ctx.timer.init(st); !e.empty()) {
    err << info.prefix << ": setup failed: " << e << "\n";
    cudaStreamDestroy(st);
    return 2;
  }
  op.start(ctx);
  // The driver's files: the inputs of every shape, the peers' outputs, peers.json.
  ScratchDir scratch;
  if ((!peer_list.empty() || (!o.plot.empty() && o.json.empty())) &&
      !make_scratch_dir(scratch, info.prefix, err)) {
    cudaStreamDestroy(st);
    return 2;
  }
  std::vector<ShapeReference> refs(o.shapes.size());
  std::vector<std::string> input_dirs(o.shapes.size());
  for (size_t si = 0; si < o.shapes.size(); ++si) {
    std::string stem, input_error;
    if (!peer_list.empty()) {
      input_dirs[si] = scratch.dir + "/shape" + std::to_string(si);
      std::error_code ec;
      std::filesystem::create_directories(input_dirs[si], ec);
      stem = input_dirs[si] + "/inputs";
    }
    op.run_shape(ctx, si, stem, input_error, refs[si]);
    if (!stem.empty() && !input_error.empty()) {
      ctx.say() << o.shapes[si].name << ": writing the inputs for the peers: " << input_error
                << "\n";
      ctx.failed = true;
      input_dirs[si].clear();
    }
    if (peer_list.empty())
      refs[si] = {}; // kept only for the peers' check
  }
  if (!peer_list.empty())
    run_peers(ctx, op, peer_list, input_dirs, refs, scratch);

  sort_results(ctx.results, info.peers, info.ours);
  const std::vector<Recommendation> recs = print_report(out, spec, ctx.checks, ctx.results);
  std::string json_path = o.json;
  if (json_path.empty() && !o.plot.empty())
    json_path = scratch.dir + "/bench.json";
  if (!json_path.empty() &&
      !write_json_and_plot(json_path, report_json(spec, ctx.checks, ctx.results, recs), o.python,
                           o.driver, o.plot, info.prefix, err))
    ctx.failed = true;
  cudaStreamDestroy(st);
  return ctx.failed ? 2 : 0;
}

int bench_main(const std::vector<std::string>& args, const RecipeShapeResolver& resolver,
               std::ostream& out, std::ostream& err) {
  std::vector<std::string> rest;
  std::string op_name = "gdn";
  for (size_t i = 0; i < args.size(); ++i) {
    if (args[i] != "--op") {
      rest.push_back(args[i]);
      continue;
    }
    if (i + 1 >= args.size() || (args[i + 1] != "gdn" && args[i + 1] != "conv")) {
      err << "gdn-bench: --op must be gdn or conv\n";
      return 2;
    }
    op_name = args[++i];
  }
  const std::unique_ptr<BenchOp> op = op_name == "conv" ? make_conv_op() : make_gdn_op();
  return run_bench(*op, rest, resolver, out, err);
}

} // namespace qr::gdn
