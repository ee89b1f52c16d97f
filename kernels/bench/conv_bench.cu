// gdn-bench --op conv (conv_bench.h): device problem, check against the fp64 CPU reference,
// timing (CUDA-graph replays, and eager runs with the L2 flushed), memory, the peers (FLA's
// causal_conv1d, causal-conv1d) through the Python driver on the very same inputs, and the
// tables, recommendation, JSON and plot.
#include "common.cuh"
#include "conv_bench.h"
#include "peers.h"
#include "report.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <sstream>
#include <type_traits>
#include <unistd.h>

namespace qr::gdn::conv {
namespace {

__device__ __forceinline__ uint64_t mix64(uint64_t x) { // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// out[i] = shift + scale N(0, 1), or log(U(lo = shift, hi = scale)) when log_uniform.
template <class T>
__global__ void fill_kernel(T* out, size_t n, uint64_t seed, float scale, float shift,
                            bool log_uniform) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const float u1 = ((mix64(seed ^ mix64(2 * i)) >> 40) + 0.5f) * (1.f / 16777216.f);
    const float u2 = ((mix64(seed ^ mix64(2 * i + 1)) >> 40) + 0.5f) * (1.f / 16777216.f);
    const float x = log_uniform ? logf(shift + (scale - shift) * u1)
                                : shift + scale * sqrtf(-2.f * logf(u1)) * cospif(2.f * u2);
    if constexpr (std::is_same_v<T, float>)
      out[i] = x;
    else
      out[i] = __float2bfloat16(x);
  }
}

template <class T>
std::string fill(DeviceBuffer& b, size_t n, uint64_t seed, float scale, float shift = 0,
                 bool log_uniform = false) {
  if (std::string e = b.alloc(n * sizeof(T)); !e.empty())
    return e;
  fill_kernel<T><<<1024, 256>>>(b.as<T>(), n, seed, scale, shift, log_uniform);
  QR_CUDA_TRY(cudaGetLastError());
  return {};
}

// Rows of `len` elements `stride` apart, compacted.
std::vector<double> rows(const std::vector<double>& v, size_t n_rows, size_t len, size_t stride) {
  if (stride == len)
    return v;
  std::vector<double> out(n_rows * len);
  for (size_t r = 0; r < n_rows; ++r)
    std::copy_n(v.begin() + r * stride, len, out.begin() + r * len);
  return out;
}

} // namespace

std::string ConvProblem::init(const Shape& s, bool with_bias, uint64_t seed, int pad) {
  shape = s;
  bias = with_bias;
  x_pad = pad;
  const size_t tok = size_t(s.batch) * s.seq_len, C = channels(s), Hv = s.value_heads;
  const size_t nqk = tok * s.key_heads * s.head_dim_k, nv = tok * Hv * s.head_dim_v;
  const uint64_t sd = seed * 1000 + 500;
  for (std::string e : {fill<bf16>(x, tok * (C + pad), sd + 1, 1.f),
                        fill<bf16>(weight, C * kWidth, sd + 2, 0.5f),
                        with_bias ? fill<bf16>(bias_buf, C, sd + 3, 0.3f) : bias_buf.alloc(0),
                        fill<bf16>(a, tok * Hv, sd + 4, 1.f),
                        fill<bf16>(b, tok * Hv, sd + 5, 1.f),
                        fill<float>(A_log, Hv, sd + 6, 16.f, 1.f, true), // log U(1, 16) as Qwen
                        fill<float>(dt_bias, Hv, sd + 7, 0.5f),
                        fill<bf16>(dq, nqk, sd + 8, 1.f),
                        fill<bf16>(dk, nqk, sd + 9, 1.f),
                        fill<bf16>(dv, nv, sd + 10, 1.f),
                        fill<float>(dg, tok * Hv, sd + 11, 1.f),
                        fill<bf16>(dbeta, tok * Hv, sd + 12, 1.f),
                        q.alloc(nqk * 2),
                        k.alloc(nqk * 2),
                        v.alloc(nv * 2),
                        g.alloc(tok * Hv * 4),
                        beta.alloc(tok * Hv * 2),
                        dx.alloc(tok * (C + pad) * 2),
                        dweight.alloc(C * kWidth * 4),
                        dbias.alloc(with_bias ? C * 4 : 0),
                        da.alloc(tok * Hv * 2),
                        db.alloc(tok * Hv * 2),
                        dA_log.alloc(Hv * 4),
                        ddt_bias.alloc(Hv * 4)})
    if (!e.empty())
      return e;
  QR_CUDA_TRY(cudaDeviceSynchronize());
  return {};
}

FwdArgs ConvProblem::fwd_args() const {
  const Shape& s = shape;
  const int64_t row = channels(s) + x_pad;
  FwdArgs f;
  f.shape = s;
  f.x = {x.as<const bf16_t>(), row * s.seq_len, row, 0};
  f.weight = weight.as<const bf16_t>();
  f.bias = bias ? bias_buf.as<const bf16_t>() : nullptr;
  f.a = dense<const bf16_t>(a.as<bf16_t>(), s, s.value_heads, 1);
  f.b = dense<const bf16_t>(b.as<bf16_t>(), s, s.value_heads, 1);
  f.A_log = A_log.as<const float>();
  f.dt_bias = dt_bias.as<const float>();
  f.q = dense<bf16_t>(q.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  f.k = dense<bf16_t>(k.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  f.v = dense<bf16_t>(v.as<bf16_t>(), s, s.value_heads, s.head_dim_v);
  f.g = dense<float>(g.as<float>(), s, s.value_heads, 1);
  f.beta = dense<bf16_t>(beta.as<bf16_t>(), s, s.value_heads, 1);
  return f;
}

BwdArgs ConvProblem::bwd_args() const {
  const FwdArgs f = fwd_args();
  const Shape& s = shape;
  const int64_t row = channels(s) + x_pad;
  BwdArgs a2;
  a2.shape = s;
  a2.x = f.x;
  a2.weight = f.weight;
  a2.bias = f.bias;
  a2.a = f.a;
  a2.b = f.b;
  a2.A_log = f.A_log;
  a2.dt_bias = f.dt_bias;
  a2.dq = dense<const bf16_t>(dq.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  a2.dk = dense<const bf16_t>(dk.as<bf16_t>(), s, s.key_heads, s.head_dim_k);
  a2.dv = dense<const bf16_t>(dv.as<bf16_t>(), s, s.value_heads, s.head_dim_v);
  a2.dg = dense<const float>(dg.as<float>(), s, s.value_heads, 1);
  a2.dbeta = dense<const bf16_t>(dbeta.as<bf16_t>(), s, s.value_heads, 1);
  a2.dx = {dx.as<bf16_t>(), row * s.seq_len, row, 0};
  a2.dweight = dweight.as<float>();
  a2.dbias = bias ? dbias.as<float>() : nullptr;
  a2.da = dense<bf16_t>(da.as<bf16_t>(), s, s.value_heads, 1);
  a2.db = dense<bf16_t>(db.as<bf16_t>(), s, s.value_heads, 1);
  a2.dA_log = dA_log.as<float>();
  a2.ddt_bias = ddt_bias.as<float>();
  return a2;
}

std::string ConvProblem::poison(bool bwd) {
  const std::vector<DeviceBuffer*> fwd_outs = {&q, &k, &v, &g, &beta};
  const std::vector<DeviceBuffer*> bwd_outs = {&dx, &dweight, &dbias, &da, &db, &dA_log, &ddt_bias};
  for (DeviceBuffer* b : bwd ? bwd_outs : fwd_outs)
    if (b->bytes())
      QR_CUDA_TRY(cudaMemset(b->get(), 0xff, b->bytes())); // NaN in bf16 and fp32
  return {};
}

std::string ConvProblem::ensure_workspace(size_t bytes) {
  return bytes <= workspace.bytes() ? std::string() : workspace.alloc(bytes);
}

cpu::Inputs ConvProblem::to_cpu() const {
  const size_t tok = size_t(shape.batch) * shape.seq_len, C = channels(shape);
  cpu::Inputs in;
  in.shape = shape;
  in.x = rows(download(x, DType::bf16), tok, C, C + x_pad);
  in.weight = download(weight, DType::bf16);
  in.bias = download(bias_buf, DType::bf16);
  in.a = download(a, DType::bf16);
  in.b = download(b, DType::bf16);
  in.A_log = download(A_log, DType::f32);
  in.dt_bias = download(dt_bias, DType::f32);
  return in;
}

cpu::OutGrads ConvProblem::grads_to_cpu() const {
  return {download(dq, DType::bf16), download(dk, DType::bf16), download(dv, DType::bf16),
          download(dg, DType::f32), download(dbeta, DType::bf16)};
}

std::map<std::string, std::vector<double>> ConvProblem::read(bool bwd) const {
  std::map<std::string, std::vector<double>> m;
  if (!bwd) {
    m["q"] = download(q, DType::bf16);
    m["k"] = download(k, DType::bf16);
    m["v"] = download(v, DType::bf16);
    m["g"] = download(g, DType::f32);
    m["beta"] = download(beta, DType::bf16);
    return m;
  }
  const size_t tok = size_t(shape.batch) * shape.seq_len, C = channels(shape);
  m["dx"] = rows(download(dx, DType::bf16), tok, C, C + x_pad);
  m["dweight"] = download(dweight, DType::f32);
  if (bias)
    m["dbias"] = download(dbias, DType::f32);
  m["da"] = download(da, DType::bf16);
  m["db"] = download(db, DType::bf16);
  m["dA_log"] = download(dA_log, DType::f32);
  m["ddt_bias"] = download(ddt_bias, DType::f32);
  return m;
}

std::map<std::string, std::vector<double>> reference_outputs(const cpu::Forward& f) {
  return {{"q", f.q}, {"k", f.k}, {"v", f.v}, {"g", f.g}, {"beta", f.beta}};
}

std::map<std::string, std::vector<double>> reference_outputs(const cpu::Grads& g) {
  std::map<std::string, std::vector<double>> m = {{"dx", g.dx},         {"dweight", g.dweight},
                                                  {"da", g.da},         {"db", g.db},
                                                  {"dA_log", g.dA_log}, {"ddt_bias", g.ddt_bias}};
  if (!g.dbias.empty())
    m["dbias"] = g.dbias;
  return m;
}

std::string run_and_read(const Backend& be, ConvProblem& p, bool bwd, Stream st,
                         std::map<std::string, std::vector<double>>& got) {
  if (std::string e = p.poison(bwd); !e.empty())
    return e;
  std::string e = bwd ? be.run_bwd(p.bwd_args(), p.workspace.get(), st)
                      : be.run_fwd(p.fwd_args(), p.workspace.get(), st);
  if (!e.empty())
    return e;
  QR_CUDA_TRY(cudaStreamSynchronize(st));
  got = p.read(bwd);
  return {};
}

namespace {

const char* kConvUsage = R"(usage: gdn-bench --op conv [options]
Checks the short convolution's paths against the fp64 CPU reference (relative L2 error of q, k, v,
g, beta and of dx, dweight, dbias, da, db, dA_log, ddt_bias; NaN check), then times the ones that
pass (CUDA-graph replay medians, and eager runs with the L2 flushed before each): fwd, bwd (from
the inputs; every path recomputes) and fwdbwd (fwd then bwd, a training step).
  --shape B,T,Hk,Hv,D      a shape (repeatable); default qwen35_35b (4,4096,16,32,128) and
                           qwen35_397b (1,4096,16,64,128)
  --backend all|NAME[,..]  paths to run, default all: ours, cudnn (cuDNN conv + separate kernels)
                           and fused (one kernel per pass), and the peers, run by the Python driver
                           on the same input tensors: fla (FLA's Triton causal_conv1d, pinned:
                           FLA_DISABLE_BACKEND_DISPATCH=1) and causal_conv1d (Dao-AILab's
                           causal-conv1d), each with the split, l2norm and gates in PyTorch; a
                           peer that cannot run says why on its row
  --baseline NAME          the path the ratios are taken against (default fla)
  --bias                   with a conv bias (Qwen has none)
  --warmup N, --iters N    untimed and timed runs per pass and method (default 3, 20)
  --check                  only the correctness check
  --tol X                  largest relative L2 error (default 0.01)
  --seed N                 input seed (default 1)
  --json FILE              also write the results as JSON
  --plot FILE.png|FILE.svg bars per path and shape for fwd and fwdbwd (matplotlib, through the
                           driver)
  --peers-budget S         seconds the peers' imports and first calls (autotuning) may take
                           before the driver stops them (default 0: no limit)
  --python EXE             the Python that runs the driver (default python3)
  --peers-driver FILE      the driver (default: kernels/bench/peers/gdn_peers.py of this source tree)
Exit codes: 0 ok, 2 bad arguments or one of our paths failed its check, 77 no CUDA device.
)";

// The Python paths the driver runs, in table order, then ours.
const std::vector<std::string> kPeers = {"fla", "causal_conv1d"};
const std::vector<std::string> kOurs = {"cudnn", "fused"};
const std::vector<std::string> kModes = {"fwd", "bwd", "fwdbwd"};

bool is_peer(const std::string& b) {
  return std::find(kPeers.begin(), kPeers.end(), b) != kPeers.end();
}
bool is_ours(const std::string& b) {
  return std::find(kOurs.begin(), kOurs.end(), b) != kOurs.end();
}

struct Cfg {
  std::vector<std::pair<std::string, Shape>> shapes;
  std::vector<std::string> backends; // empty: all
  bool bias = false, check_only = false;
  int warmup = 3, iters = 20, peers_budget = 0;
  double tol = 1e-2;
  uint64_t seed = 1;
  std::string baseline = "fla", json, plot, python = "python3";
#ifdef QR_GDN_PEERS_DRIVER
  std::string driver = QR_GDN_PEERS_DRIVER;
#else
  std::string driver;
#endif
  bool selected(const std::string& b) const {
    return backends.empty() || std::find(backends.begin(), backends.end(), b) != backends.end();
  }
};

std::vector<std::string> split_csv(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    out.push_back(item);
  return out;
}

bool to_int(const std::string& s, long long lo, long long& v) {
  char* end = nullptr;
  v = std::strtoll(s.c_str(), &end, 10);
  return !s.empty() && *end == '\0' && v >= lo && v <= (1 << 30);
}

std::string parse(const std::vector<std::string>& args, Cfg& c, bool& help) {
  bool baseline_given = false;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    const bool has = i + 1 < args.size();
    long long n = 0;
    if (a == "--help" || a == "-h") {
      help = true;
    } else if (a == "--bias") {
      c.bias = true;
    } else if (a == "--check") {
      c.check_only = true;
    } else if (a == "--shape") {
      const std::vector<std::string> f = has ? split_csv(args[++i]) : std::vector<std::string>{};
      long long d[5];
      bool ok = f.size() == 5;
      for (size_t j = 0; ok && j < 5; ++j)
        ok = to_int(f[j], 1, d[j]);
      const Shape s{int(d[0]), int(d[1]), int(d[2]), int(d[3]), int(d[4]), int(d[4])};
      if (!ok || !s.valid())
        return "--shape needs B,T,Hk,Hv,D (positive integers, Hv a multiple of Hk)";
      c.shapes.push_back({"custom", s});
    } else if (a == "--backend") {
      if (!has)
        return "--backend needs a value";
      const std::string v = args[++i];
      c.backends = v == "all" ? std::vector<std::string>{} : split_csv(v);
      if (v != "all" && c.backends.empty())
        return "--backend needs a value";
      for (const std::string& b : c.backends)
        if (!is_peer(b) && !is_ours(b))
          return "--backend: unknown path '" + b + "' (cudnn, fused, fla, causal_conv1d or all)";
    } else if (a == "--baseline") {
      if (!has || (!is_peer(args[i + 1]) && !is_ours(args[i + 1])))
        return "--baseline needs a path name (cudnn, fused, fla, causal_conv1d)";
      c.baseline = args[++i];
      baseline_given = true;
    } else if (a == "--warmup" || a == "--iters" || a == "--seed" || a == "--peers-budget") {
      if (!has || !to_int(args[++i], a == "--iters" ? 1 : 0, n))
        return a + " needs a number";
      if (a == "--warmup")
        c.warmup = int(n);
      else if (a == "--iters")
        c.iters = int(n);
      else if (a == "--seed")
        c.seed = uint64_t(n);
      else
        c.peers_budget = int(n);
    } else if (a == "--tol") {
      char* end = nullptr;
      if (!has || (c.tol = std::strtod(args[++i].c_str(), &end), *end != '\0') || !(c.tol > 0))
        return "--tol needs a positive number";
    } else if (a == "--json" || a == "--plot" || a == "--python" || a == "--peers-driver") {
      if (!has || args[i + 1].empty())
        return a + " needs a file name";
      const std::string v = args[++i];
      (a == "--json" ? c.json : a == "--plot" ? c.plot : a == "--python" ? c.python : c.driver) = v;
      if (a == "--plot" && !(v.size() > 4 && (v.compare(v.size() - 4, 4, ".png") == 0 ||
                                              v.compare(v.size() - 4, 4, ".svg") == 0)))
        return "--plot " + v + ": the plot is a .png or .svg file";
    } else {
      return "unknown argument '" + a + "' (see --op conv --help)";
    }
  }
  if (baseline_given && !c.selected(c.baseline))
    return "--baseline " + c.baseline + " is not among the --backend list";
  if (c.shapes.empty())
    c.shapes = {{"qwen35_35b", {4, 4096, 16, 32, 128, 128}},
                {"qwen35_397b", {1, 4096, 16, 64, 128, 128}}};
  return {};
}

// One path at one shape.
struct Result : BenchResult {
  double own_kernels_ms = -1; // a peer's: GPU time of its own kernels in one training step
};

double mode_bytes(const Shape& s, const std::string& mode, bool bias) {
  return (mode != "bwd" ? conv::model_bytes(s, Pass::fwd, bias) : 0) +
         (mode != "fwd" ? conv::model_bytes(s, Pass::bwd, bias) : 0);
}

// The inputs and output gradients exactly as the device holds them, for the driver.
std::string write_inputs(const ConvProblem& p, const std::string& name, const std::string& stem) {
  const Shape& s = p.shape;
  const int64_t B = s.batch, T = s.seq_len, Hk = s.key_heads, Hv = s.value_heads, D = s.head_dim_k,
                C = channels(s);
  std::vector<DeviceTensor> items = {
      {"x", &p.x, "bf16", {B, T, C}},         {"weight", &p.weight, "bf16", {C, kWidth}},
      {"a", &p.a, "bf16", {B, T, Hv}},        {"b", &p.b, "bf16", {B, T, Hv}},
      {"A_log", &p.A_log, "f32", {Hv}},       {"dt_bias", &p.dt_bias, "f32", {Hv}},
      {"dq", &p.dq, "bf16", {B, T, Hk, D}},   {"dk", &p.dk, "bf16", {B, T, Hk, D}},
      {"dv", &p.dv, "bf16", {B, T, Hv, D}},   {"dg", &p.dg, "f32", {B, T, Hv}},
      {"dbeta", &p.dbeta, "bf16", {B, T, Hv}}};
  if (p.bias)
    items.push_back({"bias", &p.bias_buf, "bf16", {C}});
  if (p.x_pad)
    return "the peers take a dense x";
  return write_device_tensors(
      stem, {name, s.batch, s.seq_len, s.key_heads, s.value_heads, s.head_dim_k}, items,
      std::string("\"op\": \"conv\", \"bias\": ") + (p.bias ? "true" : "false"));
}

// What a user installs or calls to run `backend` (a recipe does not choose the conv).
std::string how_to_get(const std::string& backend) {
  if (backend == "fla")
    return "pip install flash-linear-attention; fla.modules.causal_conv1d.causal_conv1d(x, "
           "weight, activation=\"silu\") (FLA's ShortConvolution)";
  if (backend == "causal_conv1d")
    return "pip install causal-conv1d (Megatron-Core's GatedDeltaNet calls its causal_conv1d_fn "
           "when it is installed)";
  return "";
}

} // namespace

int conv_bench_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  namespace fs = std::filesystem;
  Cfg cfg;
  bool help = false;
  if (std::string e = parse(args, cfg, help); !e.empty()) {
    err << "gdn-bench --op conv: " << e << "\n";
    return 2;
  }
  if (help) {
    out << kConvUsage;
    return 0;
  }
  std::vector<std::string> peer_list;
  for (const std::string& p : kPeers)
    if (cfg.selected(p))
      peer_list.push_back(p);
  if ((!peer_list.empty() || !cfg.plot.empty()) && access(cfg.driver.c_str(), R_OK) != 0) {
    err << "gdn-bench --op conv: --peers-driver " << (cfg.driver.empty() ? "(none)" : cfg.driver)
        << ": not readable; give the path of kernels/bench/peers/gdn_peers.py\n";
    return 2;
  }
  DeviceInfo dev;
  std::string dev_name;
  if (!device_info(dev, dev_name).empty()) {
    err << "gdn-bench: no CUDA device (skipping)\n";
    return 77;
  }
  std::vector<std::unique_ptr<Backend>> backends;
  if (cfg.selected("cudnn")) {
    if (auto b = make_cudnn_backend())
      backends.push_back(std::move(b));
    else
      err << "gdn-bench --op conv: built without cuDNN; the cudnn baseline is skipped\n";
  }
  if (cfg.selected("fused"))
    backends.push_back(make_fused_backend());
  int mem_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  const double peak_gbps = 2.0 * mem_khz * 1e3 * bus_bits / 8 / 1e9;
  char when[32];
  const std::time_t now = std::time(nullptr);
  std::strftime(when, sizeof when, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  out << "gdn-bench --op conv " << when << " on " << dev_name << " (sm_" << dev.major << dev.minor
      << ", " << dev.sm_count << " SMs; nominal " << int(peak_gbps) << " GB/s)"
      << (cfg.bias ? ", with conv bias" : "") << "\n";
  cudaStream_t st = nullptr;
  RunTimer timer;
  if (cudaStreamCreate(&st) != cudaSuccess || !timer.init(st).empty()) {
    err << "gdn-bench --op conv: setup failed\n";
    return 2;
  }
  // The driver's files: the inputs of every shape, the peers' outputs, peers.json.
  ScratchDir scratch;
  if ((!peer_list.empty() || (!cfg.plot.empty() && cfg.json.empty())) &&
      !make_scratch_dir(scratch, "gdn-bench --op conv", err))
    return 2;
  const std::string work = scratch.dir;

  bool failed = false;
  char line[640];
  std::vector<Result> results;
  std::ostringstream checks;
  struct CheckJson {
    std::string backend, shape, output;
    Error err;
    bool pass;
  };
  std::vector<CheckJson> check_rows;
  auto add_check = [&](const std::string& backend, const std::string& label,
                       const std::string& output, const Error& er, bool ok) {
    std::snprintf(line, sizeof line, "%-13s %-44s %-9s %11.3e %11.3e %9zu %s\n", backend.c_str(),
                  label.c_str(), output.c_str(), er.rel_l2, er.max_abs, er.non_finite,
                  ok ? "ok" : "FAIL");
    checks << line;
    check_rows.push_back({backend, label, output, er, ok});
  };
  // Kept for the peers' check: every shape's reference outputs, forward and backward.
  std::vector<std::map<std::string, std::vector<double>>> refs(cfg.shapes.size());
  std::vector<std::string> labels(cfg.shapes.size()), input_dirs(cfg.shapes.size());
  for (size_t si = 0; si < cfg.shapes.size(); ++si) {
    const auto& [sname, s] = cfg.shapes[si];
    char label[128];
    std::snprintf(label, sizeof label, "%s B%d T%d Hk%d Hv%d D%d (C %d)", sname.c_str(), s.batch,
                  s.seq_len, s.key_heads, s.value_heads, s.head_dim_k, channels(s));
    labels[si] = label;
    ConvProblem p;
    size_t ws = 0;
    for (const auto& b : backends)
      if (b->unsupported(dev, s).empty())
        ws = std::max({ws, b->workspace_bytes(s, Pass::fwd), b->workspace_bytes(s, Pass::bwd)});
    if (std::string e = p.init(s, cfg.bias, cfg.seed);
        !e.empty() || !(e = p.ensure_workspace(ws)).empty()) {
      err << "gdn-bench --op conv: " << label << ": " << e << "\n";
      failed = true;
      continue;
    }
    if (!peer_list.empty()) {
      input_dirs[si] = work + "/shape" + std::to_string(si);
      std::error_code ec;
      fs::create_directories(input_dirs[si], ec);
      if (std::string e = write_inputs(p, sname, input_dirs[si] + "/inputs"); !e.empty()) {
        err << "gdn-bench --op conv: " << label << ": writing the inputs for the peers: " << e
            << "\n";
        failed = true;
        input_dirs[si].clear();
      }
    }
    err << "gdn-bench --op conv: " << label << ": fp64 CPU reference\n";
    const cpu::Inputs in = p.to_cpu();
    std::map<std::string, std::vector<double>> ref[2] = {
        reference_outputs(cpu::forward(in)),
        reference_outputs(cpu::backward(in, p.grads_to_cpu()))};
    for (const auto& be : backends) {
      Result res;
      res.backend = be->name();
      res.shape = si;
      res.runs = "ours";
      if (std::string why = be->unsupported(dev, s); !why.empty()) {
        err << "gdn-bench --op conv: " << label << ": " << be->name() << " skipped: " << why
            << "\n";
        res.status = "unavailable";
        res.reason = why;
        results.push_back(res);
        continue;
      }
      bool pass = true;
      const std::string no_bwd = be->unsupported_bwd(p.bwd_args());
      for (bool bwd : {false, true}) {
        if (bwd && !no_bwd.empty()) {
          std::snprintf(line, sizeof line, "%-13s %-44s %-9s skipped: %s\n", be->name().c_str(),
                        label, "bwd", no_bwd.c_str());
          checks << line;
          continue;
        }
        std::map<std::string, std::vector<double>> got;
        if (std::string e = run_and_read(*be, p, bwd, st, got); !e.empty()) {
          std::snprintf(line, sizeof line, "%-13s %-44s %-9s run failed: %s\n", be->name().c_str(),
                        label, bwd ? "bwd" : "fwd", e.c_str());
          checks << line;
          pass = false;
          continue;
        }
        for (const auto& [name, data] : got) {
          const Error er = compare(data, ref[bwd][name]);
          const bool ok = er.ok(cfg.tol);
          pass = pass && ok;
          add_check(be->name(), label, name, er, ok);
          if (er.rel_l2 > res.worst_rel_l2) {
            res.worst_rel_l2 = er.rel_l2;
            res.worst_output = name;
          }
        }
      }
      if (!pass) {
        failed = true;
        err << "gdn-bench --op conv: " << label << ": " << be->name()
            << " FAILED its check; not timed\n";
        res.status = "failed check";
        results.push_back(res);
        continue;
      }
      // Memory: ours keeps nothing for the backward (it recomputes from the inputs); a training
      // step holds the outputs, the gradients and the scratch beyond its inputs, like the peers'
      // peak.
      res.saved_bytes = 0;
      res.peak_bytes =
          double(p.q.bytes() + p.k.bytes() + p.v.bytes() + p.g.bytes() + p.beta.bytes() +
                 p.dx.bytes() + p.dweight.bytes() + p.dbias.bytes() + p.da.bytes() + p.db.bytes() +
                 p.dA_log.bytes() + p.ddt_bias.bytes() +
                 std::max(be->workspace_bytes(s, Pass::fwd), be->workspace_bytes(s, Pass::bwd)));
      for (const std::string& mode : cfg.check_only ? std::vector<std::string>{} : kModes) {
        if (mode != "fwd" && !no_bwd.empty())
          continue;
        err << "gdn-bench --op conv: " << label << ": timing " << be->name() << " " << mode << "\n";
        auto enqueue = [&]() {
          std::string r =
              mode != "bwd" ? be->run_fwd(p.fwd_args(), p.workspace.get(), st) : std::string();
          return r.empty() && mode != "fwd" ? be->run_bwd(p.bwd_args(), p.workspace.get(), st) : r;
        };
        std::vector<float> eager_ms, graph_ms;
        if (std::string e = timer.time(cfg.warmup, cfg.iters, true, enqueue, eager_ms);
            !e.empty()) {
          err << "gdn-bench --op conv: " << label << ": " << be->name() << " " << mode << ": " << e
              << "\n";
          failed = true;
          res.status = "error";
          res.reason = mode + ": " + e;
          break;
        }
        // A path whose library cannot be captured still has its eager times.
        GraphExec graph;
        std::string graph_error = graph.capture(st, enqueue);
        if (graph_error.empty())
          graph_error = timer.time(
              cfg.warmup, cfg.iters, false,
              [&] { return cuda_error(cudaGraphLaunch(graph.exec, st), "graph"); }, graph_ms);
        if (!graph_error.empty()) {
          cudaGetLastError();
          graph_ms.clear();
        }
        res.modes.push_back({mode, stats_of(graph_ms), stats_of(eager_ms), graph_error});
      }
      results.push_back(res);
    }
    if (!peer_list.empty()) {
      refs[si] = std::move(ref[0]);
      refs[si].merge(ref[1]);
    }
  }

  // The peers: one driver run over every shape's inputs, then their outputs against the reference.
  if (!peer_list.empty()) {
    std::string backend_arg;
    for (const std::string& b : peer_list)
      backend_arg += (backend_arg.empty() ? "" : ",") + b;
    std::vector<std::string> argv = {cfg.python,
                                     cfg.driver,
                                     "conv",
                                     "--out",
                                     work + "/peers",
                                     "--backend",
                                     backend_arg,
                                     "--warmup",
                                     std::to_string(cfg.warmup),
                                     "--iters",
                                     std::to_string(cfg.check_only ? 1 : cfg.iters),
                                     "--prepare-timeout",
                                     std::to_string(cfg.peers_budget)};
    std::vector<peers::Row> rows;
    bool keep_files = false;
    const std::string why = run_peers_driver(
        argv, input_dirs, work, "gdn-bench --op conv", backend_arg,
        "FLA autotunes its conv kernels on the first calls", err, rows, keep_files);
    if (keep_files)
      scratch.dir.clear();
    // Every output and gradient the op has must come back (dbias only with a bias).
    std::vector<std::string> need = {"q",       "k",  "v",  "g",      "beta",    "dx",
                                     "dweight", "da", "db", "dA_log", "ddt_bias"};
    if (cfg.bias)
      need.push_back("dbias");
    for (const std::string& b : peer_list)
      for (size_t si = 0; si < cfg.shapes.size(); ++si) {
        Result res;
        res.backend = b;
        res.peer = true;
        res.shape = si;
        const Shape& s = cfg.shapes[si].second;
        const peers::Row* row =
            find_row(rows, b, cfg.shapes[si].first, s.batch, s.seq_len, s.value_heads);
        if (!row) {
          res.status = "error";
          res.reason = why.empty() ? "no row from the driver" : why;
          results.push_back(res);
          continue;
        }
        take_row(res, *row, "Triton causal_conv1d");
        res.own_kernels_ms = row->own_kernels_ms;
        if (res.status == "ok") {
          std::map<std::string, std::vector<double>> got;
          const std::string e = refs[si].empty() ? "no reference for this shape"
                                                 : peers::read_tensors(row->outputs, got);
          if (!check_peer_outputs(e, got, need, refs[si], cfg.tol, res,
                                  [&](const std::string& output, const Error& er, bool ok) {
                                    add_check(b, labels[si], output, er, ok);
                                  })) {
            res.status = "failed check";
            err << "gdn-bench --op conv: " << labels[si] << ": " << b
                << " FAILED its check against the reference\n";
          }
          for (const peers::ModeTimes& t : row->times)
            res.modes.push_back({t.mode, t.graph, t.eager, t.graph_error});
          sort_modes(res.modes, kModes);
        }
        results.push_back(res);
      }
  }

  sort_results(results, kPeers, kOurs);
  auto baseline_of = [&](size_t si) { return qr::gdn::baseline_of(results, cfg.baseline, si); };

  out << "\ncorrectness against the fp64 CPU reference (relative L2 error, tolerance " << cfg.tol
      << ")\n";
  std::snprintf(line, sizeof line, "%-13s %-44s %-9s %11s %11s %9s %s\n", "path", "shape", "output",
                "rel_l2", "max_abs", "nonfinite", "result");
  out << line << checks.str();
  const std::string xbase = ("x " + cfg.baseline).substr(0, 9);
  if (!cfg.check_only) {
    out << "\ntimes: graph = CUDA-graph replay median (GPU time), eager = median of eager runs "
           "with the L2 flushed before each (our C++ launches, or the peer's Python); "
        << cfg.iters << " runs after " << cfg.warmup << " warm-up; " << xbase << " = graph time / "
        << cfg.baseline
        << "'s; GB/s from the fewest bytes (inputs read once, outputs written once)\n";
    std::snprintf(line, sizeof line, "%-13s %-12s %-6s %10s %10s %9s %9s %6s\n", "path", "shape",
                  "mode", "graph ms", "eager ms", xbase.c_str(), "GB/s", "%BW");
    out << line;
    for (const Result& r : results) {
      const Result* base = baseline_of(r.shape);
      for (const ModeResult& m : r.modes) {
        const double t = m.graph.median > 0 ? m.graph.median : m.eager.median;
        const double gbps =
            t > 0 ? mode_bytes(cfg.shapes[r.shape].second, m.mode, cfg.bias) / (t * 1e-3) / 1e9 : 0;
        double base_ms = -1;
        if (base)
          base_ms = base->graph_ms(m.mode);
        std::snprintf(line, sizeof line, "%-13s %-12s %-6s %10s %10s %9s %9.0f %5.1f%%\n",
                      r.backend.c_str(), cfg.shapes[r.shape].first.substr(0, 12).c_str(),
                      m.mode.c_str(), ms_text(m.graph.median).c_str(),
                      ms_text(m.eager.median).c_str(), ratio_text(m.graph.median, base_ms).c_str(),
                      gbps, 100 * gbps / peak_gbps);
        out << line;
        if (!m.graph_error.empty())
          out << "  (no graph replay: " << one_line(m.graph_error) << ")\n";
      }
    }
  }

  out << "\nper path (graph medians; saved = bytes a training forward keeps for the backward; "
         "peak = a training step's memory beyond its inputs; err = the largest relative L2 error "
         "of any output or gradient against the reference)\n";
  std::snprintf(line, sizeof line, "%-13s %-12s %-12s %9s %9s %9s %9s %9s %9s  %s\n", "path",
                "shape", "status", "fwd ms", "fwdbwd ms", xbase.c_str(), "saved MB", "peak MB",
                "err", "how it ran / why not");
  out << line;
  for (const Result& r : results) {
    const Result* base = baseline_of(r.shape);
    char err_text[32] = "-";
    if (r.worst_rel_l2 >= 0)
      std::snprintf(err_text, sizeof err_text, "%.1e", r.worst_rel_l2);
    char own[96] = "";
    if (r.own_kernels_ms >= 0)
      std::snprintf(own, sizeof own, "; its conv kernels %.3f ms of a profiled training step",
                    r.own_kernels_ms);
    const std::string note = result_note(r, own);
    std::snprintf(line, sizeof line, "%-13s %-12s %-12s %9s %9s %9s %9s %9s %9s  ",
                  r.backend.c_str(), cfg.shapes[r.shape].first.substr(0, 12).c_str(),
                  r.status.c_str(), ms_text(r.graph_ms("fwd")).c_str(),
                  ms_text(r.graph_ms("fwdbwd")).c_str(),
                  ratio_text(r.graph_ms("fwdbwd"), base ? base->graph_ms("fwdbwd") : -1).c_str(),
                  mb(r.saved_bytes).c_str(), mb(r.peak_bytes).c_str(), err_text);
    out << line << one_line(note) << "\n";
  }

  // Where a peer's training step goes: its conv kernels and the PyTorch rest of the op.
  print_peer_kernel_times(out, results, [&](const Result& r) { return labels[r.shape]; });

  // The recommendation: the fastest training step that passed its check, and the fastest peer.
  std::vector<Recommendation> recs;
  if (!cfg.check_only) {
    out << "\n";
    for (size_t si = 0; si < cfg.shapes.size(); ++si) {
      const auto [best, best_peer] = fastest_of(results, si, "");
      const Result* base = baseline_of(si);
      auto against = [&](const Result& r) { return against_text(r, base, cfg.baseline); };
      std::string text = "recommendation for " + cfg.shapes[si].first + " (conv): ";
      if (!best) {
        text += "no path ran a training step here";
      } else {
        text += "fastest here: " + best->backend + ", " + against(*best);
        if (best->peer)
          text += "; " + how_to_get(best->backend);
        else if (best_peer)
          text += " (ours); of the peers " + best_peer->backend + ", " + against(*best_peer) +
                  ": " + how_to_get(best_peer->backend);
        else
          text += " (ours; no peer ran)";
      }
      out << text << "\n";
      recs.push_back({cfg.shapes[si].first, cfg.shapes[si].second.seq_len, text,
                      best ? best->backend : "", best_peer ? best_peer->backend : ""});
    }
  }

  std::string json_path = cfg.json;
  if (json_path.empty() && !cfg.plot.empty())
    json_path = work + "/bench.json";
  if (!json_path.empty()) {
    std::ostringstream j;
    j.precision(6);
    j << "{\n \"schema\": \"qwen-recipe gdn-bench conv 1\",\n \"op\": \"conv\",\n \"date\": \""
      << when << "\",\n \"device\": " << peers::json_string(dev_name)
      << ",\n \"sm\": " << dev.major * 10 + dev.minor << ",\n \"peak_gbps\": " << peak_gbps
      << ",\n \"bias\": " << (cfg.bias ? "true" : "false") << ",\n \"tolerance\": " << cfg.tol
      << ",\n \"warmup\": " << cfg.warmup << ",\n \"iters\": " << cfg.iters
      << ",\n \"baseline\": " << peers::json_string(cfg.baseline) << ",\n \"checks\": [";
    for (size_t i = 0; i < check_rows.size(); ++i) {
      const CheckJson& c = check_rows[i];
      j << (i ? ",\n  " : "\n  ") << "{\"backend\": " << peers::json_string(c.backend)
        << ", \"shape\": " << peers::json_string(c.shape)
        << ", \"output\": " << peers::json_string(c.output)
        << ", \"rel_l2\": " << (std::isfinite(c.err.rel_l2) ? c.err.rel_l2 : -1)
        << ", \"max_abs\": " << (std::isfinite(c.err.max_abs) ? c.err.max_abs : -1)
        << ", \"non_finite\": " << c.err.non_finite << ", \"pass\": " << (c.pass ? "true" : "false")
        << "}";
    }
    j << "\n ],\n \"backends\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const Result& r = results[i];
      const auto& [sname, s] = cfg.shapes[r.shape];
      const Result* base = baseline_of(r.shape);
      j << (i ? ",\n  " : "\n  ") << "{\"backend\": " << peers::json_string(r.backend)
        << ", \"kind\": \"" << (r.peer ? "peer" : "ours")
        << "\", \"shape\": " << peers::json_string(sname) << ", \"B\": " << s.batch
        << ", \"T\": " << s.seq_len << ", \"Hk\": " << s.key_heads << ", \"Hv\": " << s.value_heads
        << ", \"D\": " << s.head_dim_k << ", \"C\": " << channels(s);
      json_result_status(j, r);
      j << ", \"own_kernels_ms\": " << r.own_kernels_ms;
      json_result_times(j, r, base, true);
    }
    j << "\n ],\n \"recommendations\": ";
    json_recommendations(j, recs, "fastest_peer");
    j << "\n}\n";
    if (!write_json_and_plot(json_path, j.str(), cfg.python, cfg.driver, cfg.plot,
                             "gdn-bench --op conv", err))
      failed = true;
  }
  cudaStreamDestroy(st);
  return failed ? 2 : 0;
}

} // namespace qr::gdn::conv
