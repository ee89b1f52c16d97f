// The `reference` backend: the token-by-token recurrence in fp32, the GPU correctness oracle.
//
// One CTA of 8 warps per (batch, value head), or with variable-length sequences per (lane, value
// head) with the lane's CTA taking sequences lane, lane + P, ... in turn (P lanes, so that the
// scratch stays bounded for 10k sequences); warp w owns value columns w, w + 8, ... and lane l
// holds rows l, l + 32, .. of each column of the state S (Dk x Dv <= 128 x 128, in registers).
// Forward per token: S *= exp(g); p = S^T k; e = beta (v - p); S += k e^T; o = scale S^T q.
// Backward per sequence: a forward pass stores the state every 64 tokens (the CTA's checkpoints),
// then the tokens are walked in reverse with dS, re-running the forward from each checkpoint into
// per-token scratch; dq and dk are reduced over the CTA per token and summed over the key-head
// group with fp32 atomics, then taken through the l2 normalisation's backward. A varlen run
// validates cu_seqlens on the device (status, Backend::input_error) and clamps every sequence to
// [0, T], so bad offsets never make it read out of bounds.
#include "common.cuh"

namespace qr::gdn {
namespace {

constexpr int kWarps = 8, kRows = 4, kCols = 16; // Dk <= 32 kRows, Dv <= kWarps kCols
constexpr int kBlock = 64;                       // checkpoint interval (tokens)
constexpr float kEps = 1e-6f;

struct Params {
  int B, T, Hk, Hv, K, V, group, NB;
  int N, lanes;      // varlen: sequences and sequence lanes per value head (N = 0: dense)
  const int32_t* cu; // varlen offsets
  unsigned* status;
  float scale;
  bool l2;
  Ref<const bf16> q, k, v, beta, d_o;
  Ref<const float> g;
  const float* h0;
  const float* dht;
  Ref<bf16> o;
  float* ht;
  float* ckpt;    // [CTAs][NB][kState] state before each 64-token block of the current sequence
  float* scratch; // [CTAs][64][kState] states before each token of the current block
  float* dq_acc;  // [B][T][Hk][K] gradient of the normalised q, summed over the group
  float* dk_acc;
  Ref<bf16> dv, dbeta;
  Ref<float> dg;
  float* dh0;
};

// Loads row vector x (length K) of a [B,T,H,K] tensor into the lane's rows, normalised if asked.
__device__ __forceinline__ void load_row(const Params& p, const bf16* x, float (&r)[kRows]) {
  const int lane = threadIdx.x & 31;
  float ss = 0.f;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const int d = lane + 32 * i;
    r[i] = d < p.K ? __bfloat162float(x[d]) : 0.f;
    ss += r[i] * r[i];
  }
  if (p.l2) {
    const float rs = rsqrtf(warp_sum(ss) + kEps);
#pragma unroll
    for (int i = 0; i < kRows; ++i)
      r[i] *= rs;
  }
}

__device__ __forceinline__ size_t state_index(const Params& p, int row, int col) {
  return size_t(row) * p.V + col;
}

// Checkpoints and scratch hold states in the threads' own order (kState floats each), so every
// warp access is 32 consecutive floats; only the thread that wrote an entry reads it back.
constexpr int kState = kCols * kRows * kWarps * 32;
__device__ __forceinline__ int slot(int c, int i) {
  return ((c * kRows + i) * kWarps + threadIdx.x / 32) * 32 + (threadIdx.x & 31);
}

// S = a S; p = S^T k; e = beta (v - p); S += k e^T, for every column the warp owns.
__device__ __forceinline__ void step(const Params& p, float (&S)[kCols][kRows],
                                     const float (&k)[kRows], const bf16* v, float a, float beta) {
  const int warp = threadIdx.x / 32;
#pragma unroll
  for (int c = 0; c < kCols; ++c) {
    const int col = warp + kWarps * c;
    if (col >= p.V)
      break;
    float dot = 0.f;
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      S[c][i] *= a;
      dot += S[c][i] * k[i];
    }
    const float e = beta * (__bfloat162float(v[col]) - warp_sum(dot));
#pragma unroll
    for (int i = 0; i < kRows; ++i)
      S[c][i] += k[i] * e;
  }
}

// Visits (c, i, row, col) for every state entry the thread holds.
template <class F>
__device__ __forceinline__ void for_state(const Params& p, F&& f) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
#pragma unroll
  for (int c = 0; c < kCols; ++c)
#pragma unroll
    for (int i = 0; i < kRows; ++i) {
      const int col = warp + kWarps * c, row = lane + 32 * i;
      if (col < p.V && row < p.K)
        f(c, i, row, col);
    }
}

// CTAs per pass: one per (batch, value head), or per (sequence lane, value head) when varlen.
int ctas(const Params& p) {
  return (p.N ? p.lanes : p.B) * p.Hv;
}

// Tokens [t0, t1) of batch row b with states at index `state` of the [*, Hv, Dk, Dv] tensors.
struct Segment {
  int b, t0, t1, state;
};

// f(segment) for every segment of this CTA's value head blockIdx.x % Hv, in order.
template <bool kVarlen, class F>
__device__ __forceinline__ void for_segments(const Params& p, F&& f) {
  const int unit = blockIdx.x / p.Hv; // batch row, or sequence lane
  if constexpr (!kVarlen) {
    f(Segment{unit, 0, p.T, unit});
  } else {
    for (int s = unit; s < p.N; s += p.lanes) {
      const int t0 = min(max(p.cu[s], 0), p.T), t1 = min(max(p.cu[s + 1], t0), p.T);
      f(Segment{0, t0, t1, s});
    }
  }
}

__device__ __forceinline__ size_t state_base(const Params& p, const Segment& sg) {
  return (size_t(sg.state) * p.Hv + blockIdx.x % p.Hv) * p.K * p.V;
}

template <bool kVarlen>
__global__ void __launch_bounds__(kWarps * 32, 1) fwd_kernel(Params p) {
  if (kVarlen && blockIdx.x == 0 && !offsets_ok(p.cu, p.N, p.T) && threadIdx.x == 0)
    atomicOr(p.status, kBadOffsets);
  const int h = blockIdx.x % p.Hv, hk = h / p.group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
  for_segments<kVarlen>(p, [&](const Segment& sg) {
    const int b = sg.b;
    const size_t st0 = state_base(p, sg);
    float S[kCols][kRows] = {};
    if (p.h0)
      for_state(p, [&](int c, int i, int row, int col) {
        S[c][i] = p.h0[st0 + state_index(p, row, col)];
      });
    for (int t = sg.t0; t < sg.t1; ++t) {
      float k[kRows], q[kRows];
      load_row(p, p.k.at(b, t, hk), k);
      load_row(p, p.q.at(b, t, hk), q);
      step(p, S, k, p.v.at(b, t, h), __expf(*p.g.at(b, t, h)),
           __bfloat162float(*p.beta.at(b, t, h)));
#pragma unroll
      for (int c = 0; c < kCols; ++c) {
        const int col = warp + kWarps * c;
        if (col >= p.V)
          break;
        float dot = 0.f;
#pragma unroll
        for (int i = 0; i < kRows; ++i)
          dot += S[c][i] * q[i];
        dot = warp_sum(dot);
        if (lane == 0)
          p.o.at(b, t, h)[col] = __float2bfloat16(p.scale * dot);
      }
    }
    if (p.ht)
      for_state(p, [&](int c, int i, int row, int col) {
        p.ht[st0 + state_index(p, row, col)] = S[c][i];
      });
  });
}

struct BwdSmem {
  float dq[kWarps][32 * kRows], dk[kWarps][32 * kRows];
  float db[kWarps], dg[kWarps];
};

// The forward over a segment, keeping the state before each of its 64-token blocks in ckpt.
__device__ __forceinline__ void checkpoint(const Params& p, const Segment& sg, float* ckpt) {
  const int h = blockIdx.x % p.Hv, hk = h / p.group;
  const size_t st0 = state_base(p, sg);
  float S[kCols][kRows] = {};
  if (p.h0)
    for_state(
        p, [&](int c, int i, int row, int col) { S[c][i] = p.h0[st0 + state_index(p, row, col)]; });
  for (int t = sg.t0; t < sg.t1; ++t) {
    if ((t - sg.t0) % kBlock == 0) {
      float* ck = ckpt + size_t((t - sg.t0) / kBlock) * kState;
      for_state(p, [&](int c, int i, int, int) { ck[slot(c, i)] = S[c][i]; });
    }
    float k[kRows];
    load_row(p, p.k.at(sg.b, t, hk), k);
    step(p, S, k, p.v.at(sg.b, t, h), __expf(*p.g.at(sg.b, t, h)),
         __bfloat162float(*p.beta.at(sg.b, t, h)));
  }
}

template <bool kVarlen>
__global__ void __launch_bounds__(kWarps * 32) bwd_kernel(Params p) {
  __shared__ BwdSmem sm;
  const int h = blockIdx.x % p.Hv, hk = h / p.group;
  const int warp = threadIdx.x / 32, lane = threadIdx.x & 31, tid = threadIdx.x;
  float* scratch = p.scratch + size_t(blockIdx.x) * kBlock * kState;
  float* ckpt = p.ckpt + size_t(blockIdx.x) * p.NB * kState;
  for_segments<kVarlen>(p, [&](const Segment& sg) {
    const int b = sg.b;
    const size_t st0 = state_base(p, sg);
    checkpoint(p, sg, ckpt);
    float S[kCols][kRows], dS[kCols][kRows] = {};
    if (p.dht)
      for_state(p, [&](int c, int i, int row, int col) {
        dS[c][i] = p.dht[st0 + state_index(p, row, col)];
      });
    for (int blk = (sg.t1 - sg.t0 + kBlock - 1) / kBlock - 1; blk >= 0; --blk) {
      const int t0 = sg.t0 + blk * kBlock, t1 = min(sg.t1, t0 + kBlock);
      const float* ck = ckpt + size_t(blk) * kState;
      for_state(p, [&](int c, int i, int, int) { S[c][i] = ck[slot(c, i)]; });
      for (int t = t0; t < t1; ++t) {
        float* sc = scratch + size_t(t - t0) * kState;
        for_state(p, [&](int c, int i, int, int) { sc[slot(c, i)] = S[c][i]; });
        float k[kRows];
        load_row(p, p.k.at(b, t, hk), k);
        step(p, S, k, p.v.at(b, t, h), __expf(*p.g.at(b, t, h)),
             __bfloat162float(*p.beta.at(b, t, h)));
      }
      for (int t = t1 - 1; t >= t0; --t) {
        const float* sc = scratch + size_t(t - t0) * kState;
        float k[kRows], q[kRows], dq[kRows] = {}, dk[kRows] = {}, db = 0.f, dg = 0.f;
        load_row(p, p.k.at(b, t, hk), k);
        load_row(p, p.q.at(b, t, hk), q);
        const float a = __expf(*p.g.at(b, t, h)), beta = __bfloat162float(*p.beta.at(b, t, h));
        const bf16* v = p.v.at(b, t, h);
        const bf16* dout = p.d_o.at(b, t, h);
#pragma unroll
        for (int c = 0; c < kCols; ++c) {
          const int col = warp + kWarps * c;
          if (col >= p.V)
            break;
          float st[kRows], pk = 0.f;
#pragma unroll
          for (int i = 0; i < kRows; ++i) {
            const int row = lane + 32 * i;
            st[i] = row < p.K ? a * sc[slot(c, i)] : 0.f;
            pk += st[i] * k[i];
          }
          pk = warp_sum(pk);
          const float vc = __bfloat162float(v[col]), e = beta * (vc - pk);
          const float doc = __bfloat162float(dout[col]);
          float de = 0.f;
#pragma unroll
          for (int i = 0; i < kRows; ++i) {
            dq[i] += p.scale * (st[i] + k[i] * e) * doc; // o = scale S_t^T q
            dS[c][i] += p.scale * q[i] * doc;
            de += dS[c][i] * k[i];
            dk[i] += dS[c][i] * e; // S_t = St + k e^T
          }
          de = warp_sum(de);
          if (lane == 0)
            p.dv.at(b, t, h)[col] = __float2bfloat16(beta * de);
          db += de * (vc - pk);
          const float dp = -beta * de;
#pragma unroll
          for (int i = 0; i < kRows; ++i) {
            const float dst = dS[c][i] + k[i] * dp; // p = St^T k
            dk[i] += st[i] * dp;
            dg += st[i] * dst; // St = a S_{t-1}
            dS[c][i] = a * dst;
          }
        }
        dg = warp_sum(dg);
#pragma unroll
        for (int i = 0; i < kRows; ++i) {
          sm.dq[warp][lane + 32 * i] = dq[i];
          sm.dk[warp][lane + 32 * i] = dk[i];
        }
        if (lane == 0) {
          sm.db[warp] = db;
          sm.dg[warp] = dg;
        }
        __syncthreads();
        if (tid < p.K) {
          float sq = 0.f, sk = 0.f;
          for (int w = 0; w < kWarps; ++w) {
            sq += sm.dq[w][tid];
            sk += sm.dk[w][tid];
          }
          const size_t row = ((size_t(b) * p.T + t) * p.Hk + hk) * p.K;
          atomicAdd(p.dq_acc + row + tid, sq);
          atomicAdd(p.dk_acc + row + tid, sk);
        } else if (tid == kWarps * 32 - 1) {
          float sb = 0.f, sg = 0.f;
          for (int w = 0; w < kWarps; ++w) {
            sb += sm.db[w];
            sg += sm.dg[w];
          }
          *p.dbeta.at(b, t, h) = __float2bfloat16(sb);
          *p.dg.at(b, t, h) = sg;
        }
        __syncthreads();
      }
    }
    if (p.dh0)
      for_state(p, [&](int c, int i, int row, int col) {
        p.dh0[st0 + state_index(p, row, col)] = dS[c][i];
      });
  });
}

// The backward's check of cu_seqlens (the forward's first CTA checks it there).
__global__ void offsets_kernel(Params p) {
  if (!offsets_ok(p.cu, p.N, p.T) && threadIdx.x == 0)
    atomicOr(p.status, kBadOffsets);
}

// dx = rstd (dxn - xn (xn . dxn)) when normalising, else dx = dxn; one warp per row.
__global__ void finish_qk_kernel(Params p, const float* acc, Ref<const bf16> x, Ref<bf16> dx) {
  const int row = blockIdx.x * kWarps + threadIdx.x / 32, lane = threadIdx.x & 31;
  if (row >= p.B * p.T * p.Hk)
    return;
  const int hk = row % p.Hk, t = (row / p.Hk) % p.T, b = row / (p.Hk * p.T);
  float xn[kRows], d[kRows], dot = 0.f, ss = 0.f;
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const int c = lane + 32 * i;
    xn[i] = c < p.K ? __bfloat162float(x.at(b, t, hk)[c]) : 0.f;
    d[i] = c < p.K ? acc[size_t(row) * p.K + c] : 0.f;
    ss += xn[i] * xn[i];
  }
  const float rs = p.l2 ? rsqrtf(warp_sum(ss) + kEps) : 1.f;
#pragma unroll
  for (int i = 0; i < kRows; ++i)
    dot += xn[i] * rs * d[i];
  dot = warp_sum(dot);
#pragma unroll
  for (int i = 0; i < kRows; ++i) {
    const int c = lane + 32 * i;
    if (c < p.K)
      dx.at(b, t, hk)[c] = __float2bfloat16(p.l2 ? rs * (d[i] - xn[i] * rs * dot) : d[i]);
  }
}

// Sequence lanes per value head of a varlen run: enough CTAs to fill a GPU, few enough that the
// per-CTA scratch stays bounded whatever N is.
int lanes(const Shape& s) {
  return s.varlen() ? std::min(s.sequences, std::max(1, 256 / s.value_heads)) : 0;
}

Params make_params(const Shape& s, const Options& opt, const int32_t* cu, void* workspace) {
  Params p{};
  p.N = s.sequences;
  p.lanes = lanes(s);
  p.cu = cu;
  p.status = static_cast<unsigned*>(workspace);
  p.B = s.batch;
  p.T = s.seq_len;
  p.Hk = s.key_heads;
  p.Hv = s.value_heads;
  p.K = s.head_dim_k;
  p.V = s.head_dim_v;
  p.group = s.group();
  p.NB = (s.seq_len + kBlock - 1) / kBlock;
  p.scale = opt.effective_scale(s);
  p.l2 = opt.l2norm_qk;
  return p;
}

// The status comes first in both passes' workspaces.
struct BwdWorkspace {
  float *ckpt, *scratch, *dq, *dk;
  static BwdWorkspace carve(const Shape& s, void* base, size_t* bytes) {
    const size_t ctas = size_t(s.varlen() ? lanes(s) : s.batch) * s.value_heads;
    const size_t rows = size_t(s.batch) * s.seq_len * s.key_heads * s.head_dim_k;
    Carver c{static_cast<char*>(base)};
    c.take<char>(kStatusBytes);
    BwdWorkspace w{};
    w.ckpt = c.take<float>(ctas * ((s.seq_len + kBlock - 1) / kBlock) * kState);
    w.scratch = c.take<float>(ctas * kBlock * kState);
    w.dq = c.take<float>(rows);
    w.dk = c.take<float>(rows);
    if (bytes)
      *bytes = c.used;
    return w;
  }
};

std::string shape_error(const Shape& s) {
  if (!s.valid())
    return "invalid shape";
  if (s.head_dim_k > 32 * kRows || s.head_dim_v > kWarps * kCols)
    return "head dims must be at most 128";
  return {};
}

std::string args_error(const Shape& s, const int32_t* cu, const void* workspace) {
  if (std::string e = shape_error(s); !e.empty())
    return e;
  if (!workspace)
    return "reference: needs its workspace (workspace_bytes)";
  if (s.varlen() && !cu)
    return "reference: varlen needs cu_seqlens";
  return {};
}

class Reference final : public Backend {
public:
  std::string name() const override { return "reference"; }

  std::string unsupported(const DeviceInfo& dev, const Shape& s) const override {
    if (std::string e = arch_error(dev); !e.empty())
      return e;
    return shape_error(s);
  }

  size_t workspace_bytes(const Shape& s, Pass pass) const override {
    size_t bytes = kStatusBytes;
    if (pass == Pass::bwd)
      BwdWorkspace::carve(s, nullptr, &bytes);
    return bytes;
  }

  std::string input_error(const void* workspace, Stream stream) const override {
    return read_status(name(), workspace, stream);
  }

  std::string run_fwd(const FwdArgs& a, void* workspace, Stream stream) const override {
    if (std::string e = args_error(a.shape, a.cu_seqlens, workspace); !e.empty())
      return e;
    Params p = make_params(a.shape, a.opt, a.cu_seqlens, workspace);
    QR_CUDA_TRY(clear_status(workspace, stream));
    p.q = ref<const bf16>(a.q);
    p.k = ref<const bf16>(a.k);
    p.v = ref<const bf16>(a.v);
    p.beta = ref<const bf16>(a.beta);
    p.g = ref<const float>(a.g);
    p.h0 = a.initial_state;
    p.o = ref<bf16>(a.o);
    p.ht = a.final_state;
    (p.N ? fwd_kernel<true> : fwd_kernel<false>)<<<ctas(p), kWarps * 32, 0, stream>>>(p);
    QR_CUDA_TRY(cudaGetLastError());
    return {};
  }

  std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const override {
    if (std::string e = args_error(a.shape, a.cu_seqlens, workspace); !e.empty())
      return e;
    Params p = make_params(a.shape, a.opt, a.cu_seqlens, workspace);
    const BwdWorkspace w = BwdWorkspace::carve(a.shape, workspace, nullptr);
    QR_CUDA_TRY(clear_status(workspace, stream));
    p.q = ref<const bf16>(a.q);
    p.k = ref<const bf16>(a.k);
    p.v = ref<const bf16>(a.v);
    p.beta = ref<const bf16>(a.beta);
    p.g = ref<const float>(a.g);
    p.h0 = a.initial_state;
    p.d_o = ref<const bf16>(a.d_o);
    p.dht = a.d_final_state;
    p.ckpt = w.ckpt;
    p.scratch = w.scratch;
    p.dq_acc = w.dq;
    p.dk_acc = w.dk;
    p.dv = ref<bf16>(a.dv);
    p.dbeta = ref<bf16>(a.dbeta);
    p.dg = ref<float>(a.dg);
    p.dh0 = a.d_initial_state;
    const size_t rows = size_t(p.B) * p.T * p.Hk;
    QR_CUDA_TRY(cudaMemsetAsync(w.dq, 0, rows * p.K * sizeof(float), stream));
    QR_CUDA_TRY(cudaMemsetAsync(w.dk, 0, rows * p.K * sizeof(float), stream));
    if (p.N)
      offsets_kernel<<<1, kWarps * 32, 0, stream>>>(p);
    (p.N ? bwd_kernel<true> : bwd_kernel<false>)<<<ctas(p), kWarps * 32, 0, stream>>>(p);
    QR_CUDA_TRY(cudaGetLastError());
    const unsigned blocks = unsigned((rows + kWarps - 1) / kWarps);
    finish_qk_kernel<<<blocks, kWarps * 32, 0, stream>>>(p, w.dq, p.q, ref<bf16>(a.dq));
    QR_CUDA_TRY(cudaGetLastError());
    finish_qk_kernel<<<blocks, kWarps * 32, 0, stream>>>(p, w.dk, p.k, ref<bf16>(a.dk));
    QR_CUDA_TRY(cudaGetLastError());
    return {};
  }
};

} // namespace

std::unique_ptr<Backend> make_reference_backend() {
  return std::make_unique<Reference>();
}

} // namespace qr::gdn
