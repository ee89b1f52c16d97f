// gdn-bench --op conv (conv_bench.h): device problem, check against the fp64 CPU reference,
// event timing with the L2 flushed, table.
#include "common.cuh"
#include "conv_bench.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <sstream>
#include <type_traits>

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
Checks the short convolution's paths (cudnn: cuDNN conv + separate kernels; fused: one kernel per
pass) against the fp64 CPU reference (relative L2 error of q, k, v, g, beta and of dx, dweight,
dbias, da, db, dA_log, ddt_bias; NaN check), then times the ones that pass, forward and backward.
  --shape B,T,Hk,Hv,D      a shape (repeatable); default qwen35_35b (4,4096,16,32,128) and
                           qwen35_397b (1,4096,16,64,128)
  --backend all|cudnn|fused  paths to run (default all)
  --bias                   with a conv bias (Qwen has none)
  --warmup N, --iters N    untimed and timed runs per pass (default 3, 20); L2 flushed before each
  --check                  only the correctness check
  --tol X                  largest relative L2 error (default 0.01)
  --seed N                 input seed (default 1)
Exit codes: 0 ok, 2 bad arguments or a failed check, 77 no CUDA device.
)";

struct Cfg {
  std::vector<std::pair<std::string, Shape>> shapes;
  std::string backend = "all";
  bool bias = false, check_only = false;
  int warmup = 3, iters = 20;
  double tol = 1e-2;
  uint64_t seed = 1;
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
      if (!has || (args[i + 1] != "all" && args[i + 1] != "cudnn" && args[i + 1] != "fused"))
        return "--backend must be all, cudnn or fused";
      c.backend = args[++i];
    } else if (a == "--warmup" || a == "--iters" || a == "--seed") {
      if (!has || !to_int(args[++i], a == "--iters" ? 1 : 0, n))
        return a + " needs a number";
      if (a == "--warmup")
        c.warmup = int(n);
      else if (a == "--iters")
        c.iters = int(n);
      else
        c.seed = uint64_t(n);
    } else if (a == "--tol") {
      char* end = nullptr;
      if (!has || (c.tol = std::strtod(args[++i].c_str(), &end), *end != '\0') || !(c.tol > 0))
        return "--tol needs a positive number";
    } else {
      return "unknown argument '" + a + "' (see --op conv --help)";
    }
  }
  if (c.shapes.empty())
    c.shapes = {{"qwen35_35b", {4, 4096, 16, 32, 128, 128}},
                {"qwen35_397b", {1, 4096, 16, 64, 128, 128}}};
  return {};
}

struct Row {
  std::string backend, shape, pass;
  double median = 0, min = 0, max = 0, gbps = 0, pct_bw = 0;
};

} // namespace

int conv_bench_main(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
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
  DeviceInfo dev;
  std::string dev_name;
  if (!device_info(dev, dev_name).empty()) {
    err << "gdn-bench: no CUDA device (skipping)\n";
    return 77;
  }
  std::vector<std::unique_ptr<Backend>> backends;
  if (cfg.backend != "fused") {
    if (auto b = make_cudnn_backend())
      backends.push_back(std::move(b));
    else
      err << "gdn-bench --op conv: built without cuDNN; the cudnn baseline is skipped\n";
  }
  if (cfg.backend != "cudnn")
    backends.push_back(make_fused_backend());
  int clock_khz = 0, mem_khz = 0, bus_bits = 0;
  cudaDeviceGetAttribute(&mem_khz, cudaDevAttrMemoryClockRate, 0);
  cudaDeviceGetAttribute(&bus_bits, cudaDevAttrGlobalMemoryBusWidth, 0);
  cudaDeviceGetAttribute(&clock_khz, cudaDevAttrClockRate, 0);
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
  bool failed = false;
  char line[512];
  std::vector<Row> rows_out;
  std::ostringstream checks;
  for (const auto& [sname, s] : cfg.shapes) {
    char label[128];
    std::snprintf(label, sizeof label, "%s B%d T%d Hk%d Hv%d D%d (C %d)", sname.c_str(), s.batch,
                  s.seq_len, s.key_heads, s.value_heads, s.head_dim_k, channels(s));
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
    err << "gdn-bench --op conv: " << label << ": fp64 CPU reference\n";
    const cpu::Inputs in = p.to_cpu();
    std::map<std::string, std::vector<double>> ref[2] = {
        reference_outputs(cpu::forward(in)),
        reference_outputs(cpu::backward(in, p.grads_to_cpu()))};
    for (const auto& be : backends) {
      if (std::string why = be->unsupported(dev, s); !why.empty()) {
        err << "gdn-bench --op conv: " << label << ": " << be->name() << " skipped: " << why
            << "\n";
        continue;
      }
      bool pass = true;
      const std::string no_bwd = be->unsupported_bwd(p.bwd_args());
      for (bool bwd : {false, true}) {
        if (bwd && !no_bwd.empty()) {
          std::snprintf(line, sizeof line, "%-8s %-44s %-9s skipped: %s\n", be->name().c_str(),
                        label, "bwd", no_bwd.c_str());
          checks << line;
          continue;
        }
        std::map<std::string, std::vector<double>> got;
        if (std::string e = run_and_read(*be, p, bwd, st, got); !e.empty()) {
          std::snprintf(line, sizeof line, "%-8s %-44s %-9s run failed: %s\n", be->name().c_str(),
                        label, bwd ? "bwd" : "fwd", e.c_str());
          checks << line;
          pass = false;
          continue;
        }
        for (const auto& [name, data] : got) {
          const Error er = compare(data, ref[bwd][name]);
          const bool ok = er.ok(cfg.tol);
          pass = pass && ok;
          std::snprintf(line, sizeof line, "%-8s %-44s %-9s %11.3e %11.3e %9zu %s\n",
                        be->name().c_str(), label, name.c_str(), er.rel_l2, er.max_abs,
                        er.non_finite, ok ? "ok" : "FAIL");
          checks << line;
        }
      }
      if (!pass) {
        failed = true;
        err << "gdn-bench --op conv: " << label << ": " << be->name()
            << " FAILED its check; not timed\n";
        continue;
      }
      if (cfg.check_only)
        continue;
      for (bool bwd : {false, true}) {
        if (bwd && !no_bwd.empty())
          continue;
        std::vector<float> ms;
        const std::string e = timer.time(
            cfg.warmup, cfg.iters, true,
            [&] {
              return bwd ? be->run_bwd(p.bwd_args(), p.workspace.get(), st)
                         : be->run_fwd(p.fwd_args(), p.workspace.get(), st);
            },
            ms);
        if (!e.empty()) {
          err << "gdn-bench --op conv: " << label << ": " << be->name() << ": " << e << "\n";
          failed = true;
          break;
        }
        std::sort(ms.begin(), ms.end());
        Row r{be->name(), sname, bwd ? "bwd" : "fwd"};
        r.median =
            ms.size() % 2 ? ms[ms.size() / 2] : 0.5 * (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]);
        r.min = ms.front(), r.max = ms.back();
        r.gbps =
            conv::model_bytes(s, bwd ? Pass::bwd : Pass::fwd, cfg.bias) / (r.median * 1e-3) / 1e9;
        r.pct_bw = 100 * r.gbps / peak_gbps;
        rows_out.push_back(r);
      }
    }
  }
  out << "\ncorrectness against the fp64 CPU reference (relative L2 error, tolerance " << cfg.tol
      << ")\n";
  std::snprintf(line, sizeof line, "%-8s %-44s %-9s %11s %11s %9s %s\n", "path", "shape", "output",
                "rel_l2", "max_abs", "nonfinite", "result");
  out << line << checks.str();
  if (!rows_out.empty()) {
    out << "\ntimes (L2 flushed before each run; median of " << cfg.iters << " after " << cfg.warmup
        << " warm-up; GB/s from the fewest bytes: inputs read once, outputs written "
        << "once)\n";
    std::snprintf(line, sizeof line, "%-8s %-14s %-5s %10s %17s %9s %6s %14s\n", "path", "shape",
                  "pass", "median ms", "min-max ms", "GB/s", "%BW", "cudnn / fused");
    out << line;
    for (const Row& r : rows_out) {
      double ratio = 0;
      for (const Row& o : rows_out)
        if (r.backend == "fused" && o.backend == "cudnn" && o.shape == r.shape && o.pass == r.pass)
          ratio = o.median / r.median;
      char range[40], rs[32] = "";
      std::snprintf(range, sizeof range, "%.3f-%.3f", r.min, r.max);
      if (ratio > 0)
        std::snprintf(rs, sizeof rs, "%.2fx", ratio);
      std::snprintf(line, sizeof line, "%-8s %-14s %-5s %10.3f %17s %9.0f %5.1f%% %14s\n",
                    r.backend.c_str(), r.shape.c_str(), r.pass.c_str(), r.median, range, r.gbps,
                    r.pct_bw, rs);
      out << line;
    }
  }
  cudaStreamDestroy(st);
  return failed ? 2 : 0;
}

} // namespace qr::gdn::conv
