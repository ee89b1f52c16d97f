// gdn-bench --op conv (conv_bench.h): the device problem and the conv op for the runner
// (bench_runner.cuh): our paths checked against the fp64 CPU reference and timed, their memory,
// the inputs the peers (FLA's causal_conv1d, causal-conv1d) get, and how a user gets a peer.
#include "bench_runner.cuh"
#include "common.cuh"
#include "conv_bench.h"
#include "peers.h"
#include "report.cuh"

#include <algorithm>
#include <cstdio>
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

const char* const kConvUsage = R"(usage: gdn-bench --op conv [options]
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
  --mode MODE[,MODE]       passes to time, default all: fwd, bwd, fwdbwd
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

// The fewest bytes a mode moves (inputs read once, outputs written once).
double mode_bytes(const Shape& s, const std::string& mode, bool bias) {
  return (mode != "bwd" ? conv::model_bytes(s, Pass::fwd, bias) : 0) +
         (mode != "fwd" ? conv::model_bytes(s, Pass::bwd, bias) : 0);
}

class ConvOp : public BenchOp {
public:
  ConvOp() {
    info_.op = "conv";
    info_.prefix = "gdn-bench --op conv";
    info_.peers = {"fla", "causal_conv1d"};
    info_.ours = {"cudnn", "fused"};
    info_.modes = {"fwd", "bwd", "fwdbwd"};
    info_.tol = 1e-2;
    info_.usage = kConvUsage;
  }
  const OpInfo& info() const override { return info_; }
  void start(RunContext& ctx) override {
    if (ctx.o.selected("cudnn")) {
      if (auto b = make_cudnn_backend())
        backends_.push_back(std::move(b));
      else
        ctx.say() << "built without cuDNN; the cudnn baseline is skipped\n";
    }
    if (ctx.o.selected("fused"))
      backends_.push_back(make_fused_backend());
  }
  void run_shape(RunContext& ctx, size_t si, const std::string& stem, std::string& input_error,
                 ShapeReference& ref) override;
  std::vector<std::string> peer_outputs(const BenchOptions& o) const override {
    // Every output and gradient the op has must come back (dbias only with a bias).
    std::vector<std::string> need = {"q",       "k",  "v",  "g",      "beta",    "dx",
                                     "dweight", "da", "db", "dA_log", "ddt_bias"};
    if (o.bias)
      need.push_back("dbias");
    return need;
  }
  std::string fla_kernels() const override { return "Triton causal_conv1d"; }
  std::string driver_note() const override {
    return "FLA autotunes its conv kernels on the first calls";
  }
  void describe(ReportSpec& spec, const BenchOptions& o) const override {
    const bool bias = o.bias;
    spec.bytes = [bias](const NamedShape& ns, const std::string& mode) {
      return mode_bytes(ns.shape, mode, bias);
    };
    spec.oracle = "";
    spec.how_to_get = how_to_get;
    spec.ours_note = "ours";
    spec.peers_label = "of the peers";
    spec.second_key = "fastest_peer";
  }

private:
  OpInfo info_;
  std::vector<std::unique_ptr<Backend>> backends_;
};

void ConvOp::run_shape(RunContext& ctx, size_t si, const std::string& stem,
                       std::string& input_error, ShapeReference& ref) {
  const BenchOptions& o = ctx.o;
  const NamedShape& ns = o.shapes[si];
  const Shape& s = ns.shape;
  char label[160];
  std::snprintf(label, sizeof label, "%s B%d T%d Hk%d Hv%d D%d (C %d)", ns.name.c_str(), s.batch,
                s.seq_len, s.key_heads, s.value_heads, s.head_dim_k, channels(s));
  ConvProblem p;
  size_t ws = 0;
  for (const auto& b : backends_)
    if (b->unsupported(ctx.dev, s).empty())
      ws = std::max({ws, b->workspace_bytes(s, Pass::fwd), b->workspace_bytes(s, Pass::bwd)});
  std::string e = p.init(s, o.bias, o.seed);
  if (e.empty())
    e = p.ensure_workspace(ws);
  if (!e.empty()) {
    ctx.say() << label << ": " << e << "\n";
    ctx.failed = true;
    ref.error = input_error = e;
    return;
  }
  if (!stem.empty())
    input_error = write_inputs(p, ns.name, stem);
  ctx.say() << label << ": fp64 CPU reference\n";
  const cpu::Inputs in = p.to_cpu();
  std::map<std::string, std::vector<double>> refs[2] = {
      reference_outputs(cpu::forward(in)), reference_outputs(cpu::backward(in, p.grads_to_cpu()))};
  for (const auto& be : backends_) {
    BenchResult res;
    res.backend = be->name();
    res.shape = si;
    res.runs = "ours";
    if (std::string why = be->unsupported(ctx.dev, s); !why.empty()) {
      ctx.say() << label << ": " << be->name() << " skipped: " << why << "\n";
      res.status = "unavailable";
      res.reason = why;
      ctx.results.push_back(res);
      continue;
    }
    bool pass = true;
    const std::string no_bwd = be->unsupported_bwd(p.bwd_args());
    for (bool bwd : {false, true}) {
      if (bwd && !no_bwd.empty()) {
        ctx.checks.push_back({be->name(), ns.name, "bwd", 0, 0, 0, true, "skipped: " + no_bwd});
        continue;
      }
      std::map<std::string, std::vector<double>> got;
      if (std::string e2 = run_and_read(*be, p, bwd, ctx.stream, got); !e2.empty()) {
        ctx.checks.push_back(
            {be->name(), ns.name, bwd ? "bwd" : "fwd", 0, 0, 0, false, "run failed: " + e2});
        pass = false;
        continue;
      }
      for (const auto& [name, data] : got) {
        const Error er = compare(data, refs[bwd][name]);
        const bool ok = er.ok(o.tol);
        pass = pass && ok;
        ctx.check(res, be->name(), ns.name, name, er, ok);
      }
    }
    if (!pass) {
      ctx.failed = true;
      ctx.say() << label << ": " << be->name() << " FAILED its check; not timed\n";
      res.status = "failed check";
      ctx.results.push_back(res);
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
    for (const std::string& mode : o.check_only ? std::vector<std::string>{} : o.modes) {
      if (mode != "fwd" && !no_bwd.empty())
        continue;
      ctx.say() << label << ": timing " << be->name() << " " << mode << "\n";
      ModeResult m;
      // A path whose library cannot be captured still has its eager times (m.graph_error).
      const std::string e2 = ctx.time_mode(
          mode,
          [&]() {
            std::string r =
                mode != "bwd" ? be->run_fwd(p.fwd_args(), p.workspace.get(), ctx.stream) : "";
            return r.empty() && mode != "fwd"
                       ? be->run_bwd(p.bwd_args(), p.workspace.get(), ctx.stream)
                       : r;
          },
          m);
      if (!e2.empty()) {
        ctx.say() << label << ": " << be->name() << " " << mode << ": " << e2 << "\n";
        ctx.failed = true;
        res.status = "error";
        res.reason = mode + ": " + e2;
        break;
      }
      res.modes.push_back(m);
    }
    ctx.results.push_back(res);
  }
  ref.outputs = std::move(refs[0]);
  ref.outputs.merge(refs[1]);
}

} // namespace

} // namespace qr::gdn::conv

namespace qr::gdn {
std::unique_ptr<BenchOp> make_conv_op() {
  return std::make_unique<conv::ConvOp>();
}
} // namespace qr::gdn
