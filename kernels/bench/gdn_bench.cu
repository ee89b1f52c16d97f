// gdn-bench's GDN op (see gdn_bench.h and docs/gdn/bench.md) for the runner (bench_runner.cuh):
// the inputs at the run's contract, the correctness check of each of our backends against
// `reference`, their timing and memory, the inputs the peers get, and how a user selects a peer.
#include "bench_runner.cuh"
#include "common.cuh"
#include "gdn_bench.h"
#include "report.cuh"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>

namespace qr::gdn {
namespace {

// fwd: inference forward; fwd-train: the forward of a training step, which also keeps the
// backend's saved context; bwd: the backward from that context; bwd-recompute: the self-contained
// backward; fwdbwd: fwd-train then bwd, a training step's GDN.
const char* const kUsage = R"(usage: gdn-bench [options]
Checks each GatedDeltaNet backend against `reference` (relative L2 error of o, final state, dq, dk,
dv, dg, dbeta, d initial state; NaN check), times the ones that pass (CUDA-graph replay medians,
and eager runs with the L2 flushed before each), measures their memory, and recommends a backend.
  --contract NAME          how the op is called (docs/gdn/bench.md, "Contracts"): grouped (the
                           default: grouped value heads, q/k L2 norm in the kernel, g and beta
                           given), mcore (Megatron-Core's GatedDeltaNet: q/k L2-normalised outside
                           and repeated to H = Hv, no states), fla-layer (FLA 0.6's layer: the
                           gate and beta's sigmoid in the kernel too; ours cannot, its rows say so)
  --recipe NAME[,NAME]     shapes of compiled recipes (micro batch, seq_length, GDN heads, dims),
                           at the contract their Megatron-Core profile runs (mcore) unless
                           --contract says otherwise
  --shape B,T,Hk,Hv,D      a shape: batch, tokens, key heads, value heads, head dim (repeatable)
  --seq-lens T[,T..]       every shape at each of these sequence lengths (the plot is then a line
                           plot of time against T)
  --backend all|NAME[,..]  backends to run, default all: ours (reference, chunked, fused) and the
                           peers, run by the Python driver on the same input tensors: fla (FLA's
                           Triton kernels, pinned: FLA_FLASH_QLA=0, no TileLang), flash_qla
                           (FlashQLA through FLA's dispatch, as a user gets it),
                           transformer_engine (cuDNN frontend's GDN, which Transformer Engine
                           runs), each at the run's contract on the same tensors; a peer that
                           cannot run (or not at the contract) says why on its row
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
  --packed N               pack each shape's B x T tokens into one row of N uneven sequences
                           (B = 1, T = B x T, cu_seqlens): sequence i of N gets (N - i) / (N (N + 1)
                           / 2) of the tokens, the longest first (4 over 16384: 6553, 4915, 3277,
                           1639), for every backend
  --no-l2norm              (grouped only) no q/k L2 norm at all (q, k drawn N(0, 1/D))
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
Default shapes: qwen35_35b (4,4096,16,32,128) and qwen35_397b (1,4096,16,64,128), at the
grouped contract.
Exit codes: 0 ok, 2 bad arguments or one of our backends failed its check, 77 no CUDA device.
)";

// mcore's input setup: each row of q (and k) [B, T, H, D] becomes the L2-normalised row of the
// first head of its group of `repeat` (FLA's l2norm, eps 1e-6, in fp32), as Megatron-Core's
// l2norm then repeat_interleave(Hv / Hk) make them. `src` is a copy of the drawn tensor.
__global__ void normalize_repeat_kernel(bf16_t* out, const bf16_t* src, int heads, int dim,
                                        int repeat, size_t rows) {
  const size_t row = blockIdx.x;
  if (row >= rows)
    return;
  const size_t token = row / heads;
  const int head = int(row % heads) / repeat * repeat;
  const bf16_t* x = src + (token * heads + head) * dim;
  __shared__ float sum;
  if (threadIdx.x == 0)
    sum = 0;
  __syncthreads();
  float part = 0;
  for (int d = threadIdx.x; d < dim; d += blockDim.x)
    part += __bfloat162float(x[d]) * __bfloat162float(x[d]);
  atomicAdd(&sum, part);
  __syncthreads();
  const float inv = rsqrtf(sum + 1e-6f);
  for (int d = threadIdx.x; d < dim; d += blockDim.x)
    out[row * dim + d] = __float2bfloat16(__bfloat162float(x[d]) * inv);
}

std::string normalize_repeat(DeviceBuffer& t, const Shape& s, int repeat) {
  DeviceBuffer copy;
  if (std::string e = copy.alloc(t.bytes()); !e.empty())
    return e;
  QR_CUDA_TRY(cudaMemcpy(copy.get(), t.get(), t.bytes(), cudaMemcpyDeviceToDevice));
  const size_t rows = size_t(s.batch) * s.seq_len * s.key_heads;
  normalize_repeat_kernel<<<unsigned(rows), 128>>>(t.as<bf16_t>(), copy.as<const bf16_t>(),
                                                   s.key_heads, s.head_dim_k, repeat, rows);
  QR_CUDA_TRY(cudaGetLastError());
  QR_CUDA_TRY(cudaDeviceSynchronize());
  return {};
}

uint64_t mix64(uint64_t x) { // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

double uniform(uint64_t seed, size_t i) {
  return ((mix64(seed ^ mix64(i)) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

double normal(uint64_t seed, size_t i) {
  return std::sqrt(-2 * std::log(uniform(seed, 2 * i))) *
         std::cos(2 * M_PI * uniform(seed, 2 * i + 1));
}

uint16_t to_bf16(float f) { // round to nearest even
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1);
  return uint16_t(u >> 16);
}

double from_bf16(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

double softplus(double x) {
  return x > 20 ? x : std::log1p(std::exp(x));
}
double sigmoid(double x) {
  return 1 / (1 + std::exp(-x));
}

// fla-layer's gate inputs: a, b [B, T, Hv] (bf16, N(0, 1)), A_log = log U(1, 16) and dt_bias
// 0.5 N(0, 1) [Hv] (fp32), as FLA's layer initialises them; the kernel forms
// g = -exp(A_log) softplus(a + dt_bias) and beta = sigmoid(b). `g` and `beta` get those (beta
// rounded to bf16) so that `reference` runs the same recurrence.
struct GateInputs {
  std::vector<uint16_t> a, b;
  std::vector<float> A_log, dt_bias;
  DeviceBuffer a_buf, b_buf, A_log_buf, dt_bias_buf;

  std::string init(Problem& p, uint64_t seed) {
    const Shape& s = p.shape;
    const size_t n = size_t(s.batch) * s.seq_len * s.value_heads, Hv = s.value_heads;
    const uint64_t sd = seed * 1000 + 700;
    a.resize(n);
    b.resize(n);
    A_log.resize(Hv);
    dt_bias.resize(Hv);
    for (size_t h = 0; h < Hv; ++h) {
      A_log[h] = float(std::log(1 + 15 * uniform(sd + 3, h)));
      dt_bias[h] = float(0.5 * normal(sd + 4, h));
    }
    std::vector<float> g(n);
    std::vector<uint16_t> beta(n);
    for (size_t i = 0; i < n; ++i) {
      a[i] = to_bf16(float(normal(sd + 1, i)));
      b[i] = to_bf16(float(normal(sd + 2, i)));
      const size_t h = i % Hv;
      g[i] = float(-std::exp(double(A_log[h])) * softplus(from_bf16(a[i]) + dt_bias[h]));
      beta[i] = to_bf16(float(sigmoid(from_bf16(b[i]))));
    }
    for (std::string e : {a_buf.alloc(n * 2), b_buf.alloc(n * 2), A_log_buf.alloc(Hv * 4),
                          dt_bias_buf.alloc(Hv * 4)})
      if (!e.empty())
        return e;
    QR_CUDA_TRY(cudaMemcpy(a_buf.get(), a.data(), n * 2, cudaMemcpyHostToDevice));
    QR_CUDA_TRY(cudaMemcpy(b_buf.get(), b.data(), n * 2, cudaMemcpyHostToDevice));
    QR_CUDA_TRY(cudaMemcpy(A_log_buf.get(), A_log.data(), Hv * 4, cudaMemcpyHostToDevice));
    QR_CUDA_TRY(cudaMemcpy(dt_bias_buf.get(), dt_bias.data(), Hv * 4, cudaMemcpyHostToDevice));
    QR_CUDA_TRY(cudaMemcpy(p.g.get(), g.data(), n * 4, cudaMemcpyHostToDevice));
    QR_CUDA_TRY(cudaMemcpy(p.beta.get(), beta.data(), n * 2, cudaMemcpyHostToDevice));
    return {};
  }

  // The gradients of a, b, A_log and dt_bias from reference's dg and dbeta (the chain rule
  // through the gate and the sigmoid), in place of dg and dbeta.
  void chain(std::map<std::string, std::vector<double>>& ref, int Hv) const {
    const std::vector<double>& dg = ref["dg"];
    const std::vector<double>& dbeta = ref["dbeta"];
    std::vector<double> da(a.size()), db(b.size()), dA_log(Hv, 0.0), ddt_bias(Hv, 0.0);
    for (size_t i = 0; i < a.size() && i < dg.size() && i < dbeta.size(); ++i) {
      const size_t h = i % Hv;
      const double x = from_bf16(a[i]) + dt_bias[h], A = std::exp(double(A_log[h]));
      da[i] = -dg[i] * A * sigmoid(x);
      ddt_bias[h] += da[i];
      dA_log[h] += -dg[i] * A * softplus(x);
      const double be = sigmoid(from_bf16(b[i]));
      db[i] = dbeta[i] * be * (1 - be);
    }
    ref.erase("dg");
    ref.erase("dbeta");
    ref["da"] = da;
    ref["db"] = db;
    ref["dA_log"] = dA_log;
    ref["ddt_bias"] = ddt_bias;
  }
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
// packed, the offsets our backends get and one state per sequence; fla-layer, the gate's inputs
// in place of g and beta).
std::string write_inputs(const Problem& p, const GateInputs* gate, const NamedShape& ns,
                         Contract contract, const std::string& stem) {
  const Shape& s = ns.shape;
  const peers::ShapeInfo info{ns.name,       s.batch,      s.seq_len,  s.key_heads,
                              s.value_heads, s.head_dim_k, s.sequences};
  std::map<std::string, const DeviceBuffer*> buffers = {
      {"q", &p.q},   {"k", &p.k},       {"v", &p.v},
      {"g", &p.g},   {"beta", &p.beta}, {"do", &p.d_o},
      {"h0", &p.h0}, {"dht", &p.dht},   {"cu_seqlens", &p.cu_seqlens}};
  if (gate)
    buffers.insert({{"a", &gate->a_buf},
                    {"b", &gate->b_buf},
                    {"A_log", &gate->A_log_buf},
                    {"dt_bias", &gate->dt_bias_buf}});
  const std::vector<peers::TensorLayout> layout =
      peers::gdn_input_layout(info, p.h0.bytes() && p.dht.bytes(), contract == Contract::fla_layer);
  std::vector<DeviceTensor> items;
  for (const peers::TensorLayout& t : layout)
    items.push_back({t.name.c_str(), buffers.at(t.name), t.dtype.c_str(), t.shape});
  char extra[160];
  std::snprintf(extra, sizeof extra, "\"scale\": %.9g, \"l2norm\": %s, \"contract\": \"%s\"",
                p.opt.effective_scale(s), p.opt.l2norm_qk ? "true" : "false",
                contract_name(contract));
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

class GdnOp : public BenchOp {
public:
  GdnOp() {
    backends_ = all_backends();
    info_.op = "gdn";
    info_.prefix = "gdn-bench";
    info_.peers = {"fla", "flash_qla", "transformer_engine"};
    for (const auto& b : backends_)
      info_.ours.push_back(b->name());
    info_.modes = {"fwd", "fwd-train", "bwd", "bwd-recompute", "fwdbwd"};
    info_.tol = 2e-2;
    info_.usage = kUsage;
  }
  const OpInfo& info() const override { return info_; }
  void start(RunContext&) override {}
  void run_shape(RunContext& ctx, size_t si, const std::string& stem, std::string& input_error,
                 ShapeReference& ref) override;
  std::vector<std::string> peer_outputs(const BenchOptions& o) const override {
    // Every output and gradient a peer computes must come back (dh0 only with a state).
    std::vector<std::string> need = {"o", "ht", "dq", "dk", "dv"};
    if (o.contract == Contract::fla_layer)
      need.insert(need.end(), {"da", "db", "dA_log", "ddt_bias"});
    else
      need.insert(need.end(), {"dg", "dbeta"});
    if (o.states)
      need.push_back("dh0");
    return need;
  }
  std::string fla_kernels() const override { return "Triton kernels"; }
  std::string driver_note() const override {
    return "FlashQLA compiles for about 2 minutes per new shape";
  }
  void describe(ReportSpec& spec, const BenchOptions& o) const override {
    const bool states = o.states;
    auto passes = [](const std::string& mode, bool& f, bool& b) {
      f = mode == "fwd" || mode == "fwd-train" || mode == "fwdbwd";
      b = !f || mode == "fwdbwd";
    };
    spec.flops = [passes](const NamedShape& ns, const std::string& mode) {
      bool f, b;
      passes(mode, f, b);
      return (f ? model_flops(ns.shape, Pass::fwd) : 0) +
             (b ? model_flops(ns.shape, Pass::bwd) : 0);
    };
    spec.bytes = [passes, states](const NamedShape& ns, const std::string& mode) {
      bool f, b;
      passes(mode, f, b);
      return (f ? model_bytes(ns.shape, Pass::fwd, states) : 0) +
             (b ? model_bytes(ns.shape, Pass::bwd, states) : 0);
    };
    spec.oracle = "reference";
    spec.how_to_get = how_to_select;
    spec.ours_note = "ours: no recipe selects it";
    spec.peers_label = "of the recipe's choices";
    spec.second_key = "fastest_selectable";
  }

private:
  OpInfo info_;
  std::vector<std::unique_ptr<Backend>> backends_;
};

void GdnOp::run_shape(RunContext& ctx, size_t si, const std::string& stem, std::string& input_error,
                      ShapeReference& ref) {
  const BenchOptions& o = ctx.o;
  const NamedShape& ns = o.shapes[si];
  const std::string label = ns.name + " (" + shape_text(ns) + ")";
  const cudaStream_t st = ctx.stream;
  const bool fla_layer = o.contract == Contract::fla_layer;
  Problem p;
  Options opt;
  opt.l2norm_qk = o.l2norm_in_kernel();
  InputSpec spec;
  spec.initial_state = spec.d_final_state = o.states;
  spec.seed = o.seed;
  spec.g_scale = o.gate_scale;
  // Without any norm q and k are drawn small, so that beta |k|^2 stays below 2 (gdn.h).
  spec.qk_scale = o.l2norm ? 1.f : 1.f / std::sqrt(float(ns.shape.head_dim_k));
  spec.seq_lens = ns.seq_lens;
  ctx.say() << label << ": preparing inputs\n";
  size_t ws = 0, saved_max = 0; // for the selected backends and the oracle, which always runs
  for (const auto& b : backends_)
    if (b->unsupported(ctx.dev, ns.shape).empty() &&
        (o.selected(b->name()) || b == backends_.front())) {
      ws = std::max(
          {ws, b->workspace_bytes(ns.shape, Pass::fwd), b->workspace_bytes(ns.shape, Pass::bwd)});
      saved_max = std::max(saved_max, b->saved_bytes(ns.shape));
    }
  GateInputs gate;
  std::string e = p.init(ns.shape, opt, spec);
  if (e.empty())
    e = p.ensure_workspace(ws);
  if (e.empty())
    e = p.ensure_saved(saved_max);
  if (e.empty() && ns.repeat > 1)
    e = normalize_repeat(p.q, ns.shape, ns.repeat);
  if (e.empty() && ns.repeat > 1)
    e = normalize_repeat(p.k, ns.shape, ns.repeat);
  if (e.empty() && o.contract == Contract::mcore && ns.repeat == 1) // H = Hv already: normalise
    e = normalize_repeat(p.q, ns.shape, 1);
  if (e.empty() && o.contract == Contract::mcore && ns.repeat == 1)
    e = normalize_repeat(p.k, ns.shape, 1);
  if (e.empty() && fla_layer)
    e = gate.init(p, o.seed);
  if (!e.empty()) {
    ctx.say() << label << ": " << e << "\n";
    ctx.failed = true;
    ref.error = input_error = e;
    return;
  }
  if (!stem.empty())
    input_error = write_inputs(p, fla_layer ? &gate : nullptr, ns, o.contract, stem);
  // Correctness: reference first (NaN check only), then each selected backend against it.
  const Backend& oracle = *backends_.front();
  ref.error = oracle.unsupported(ctx.dev, ns.shape);
  if (ref.error.empty()) {
    ctx.say() << label << ": running reference\n";
    ref.error = run_and_read(oracle, p, st, true, ref.outputs);
  }
  for (const auto& [name, data] : ref.outputs)
    if (size_t bad = count_non_finite(data); bad && ref.error.empty())
      ref.error = name + " has " + std::to_string(bad) + " non-finite values";
  for (const auto& be : backends_) {
    if (!o.selected(be->name()))
      continue;
    BenchResult res;
    res.backend = be->name();
    res.shape = si;
    res.runs = be.get() == &oracle ? "ours, the fp32 oracle" : "ours";
    std::string why = be->unsupported(ctx.dev, ns.shape);
    if (why.empty() && fla_layer)
      why = "ours takes g and beta from the caller: no kernel of ours forms the gate or beta's "
            "sigmoid (--contract grouped is the same call with them outside)";
    if (!why.empty()) {
      ctx.say() << label << ": " << be->name() << " skipped: " << why << "\n";
      res.status = "unavailable";
      res.reason = why;
      ctx.results.push_back(res);
      continue;
    }
    bool pass = ref.error.empty();
    if (!pass) {
      ctx.checks.push_back({be->name(), ns.name, "all", 0, 0, 0, false, "reference: " + ref.error});
    } else if (be.get() != &oracle) {
      ctx.say() << label << ": checking " << be->name() << "\n";
      // Both paths of a backend that keeps a context: training, then recompute.
      for (bool train : {true, false}) {
        if (!train && !be->saved_bytes(ns.shape))
          continue;
        const std::string path = be->name() + (train ? "" : " recompute");
        std::map<std::string, std::vector<double>> got;
        if (std::string e2 = run_and_read(*be, p, st, train, got); !e2.empty()) {
          ctx.checks.push_back({path, ns.name, "all", 0, 0, 0, false, "run failed: " + e2});
          pass = false;
          continue;
        }
        for (const auto& [name, data] : got) {
          const Error er = compare(data, ref.outputs[name]);
          const bool ok = er.ok(o.tol);
          ctx.check(res, path, ns.name, name, er, ok);
          pass = pass && ok;
        }
      }
    } else {
      ctx.checks.push_back({be->name(), ns.name, "all", 0, 0, 0, true, "NaN check: ok"});
    }
    if (!pass) {
      ctx.failed = true;
      ctx.say() << label << ": " << be->name() << " FAILED its check; not timed\n";
      res.status = "failed check";
      ctx.results.push_back(res);
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
    for (const std::string& mode : o.check_only ? std::vector<std::string>{} : o.modes) {
      if (!saved && (mode == "fwd-train" || mode == "bwd-recompute"))
        continue; // the same passes as fwd and bwd
      ctx.say() << label << ": timing " << be->name() << " " << mode << "\n";
      const bool f = mode == "fwd" || mode == "fwd-train" || mode == "fwdbwd";
      const bool b = !f || mode == "fwdbwd";
      const Run fwd_run = mode == "fwd" ? Run::fwd : Run::fwd_train;
      const Run bwd_run = mode == "bwd-recompute" ? Run::bwd_recompute : Run::bwd;
      // The backward from a context reads what the last training forward left.
      std::string e2 = mode == "bwd" ? run_pass(*be, p, Run::fwd_train, st) : std::string();
      ModeResult m;
      if (e2.empty())
        e2 = ctx.time_mode(
            mode,
            [&]() {
              std::string r = f ? run_pass(*be, p, fwd_run, st) : std::string();
              return r.empty() && b ? run_pass(*be, p, bwd_run, st) : r;
            },
            m);
      if (e2.empty() && !m.graph_error.empty()) // ours must capture (no host sync)
        e2 = "graph: " + m.graph_error;
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
  if (fla_layer && ref.error.empty())
    gate.chain(ref.outputs, ns.shape.value_heads);
}

} // namespace

std::unique_ptr<BenchOp> make_gdn_op() {
  return std::make_unique<GdnOp>();
}

} // namespace qr::gdn
