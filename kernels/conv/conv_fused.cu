// Fused short convolution (conv.h): one forward kernel (conv + SiLU + split + l2norm(q, k) +
// gates) and one backward kernel plus a small ordered reduce.
//
// Grid: x = (batch, 256-token tile), y = head (2 Hk + Hv heads of D channels: q, k, v heads in
// the order of mixed_qkv's channels) plus one more y slice that computes the gates of the tile.
// A block is 8 warps; each warp walks 32 consecutive tokens of one head, lane l owning channels
// [l VEC, (l + 1) VEC) of the head (VEC = D / 32), and keeps the causal window of x (and in the
// backward of dz) in registers, so every element of x is read once plus a 3-token halo per warp.
// Tokens are loaded 8 (backward: 4) at a time (all loads of a batch issue before any math) to keep
// enough bytes in flight. The l2norm's per-head sums are warp shuffles.
//
// Backward: a warp recomputes z, y, the l2norm and dz for its tokens and the 3 after them (dx[t]
// needs dz[t .. t+3]), writes dx, and accumulates d weight / d bias of its own tokens in
// registers. The block sums its 8 warps in a fixed order into a per-tile partial; the gate slice
// writes da, db and per-tile partials of d A_log and d dt_bias. conv_reduce_kernel then sums the
// partials over tiles in tile order: the results are bit-identical run to run (no atomics).
#include "conv_common.cuh"

#include <cstdio>

namespace qr::gdn::conv {
namespace {

constexpr int kWarps = 8, kThreads = 32 * kWarps;
constexpr int kTokWarp = 32, kTile = kWarps * kTokWarp; // tokens per warp, per block
constexpr int kBatch = 8,
              kBatchBwd = 4; // tokens loaded at once (the backward holds more per token)

struct Params {
  int T, Hk, Hv, D, C, tiles_per_batch;
  Ref<const bf16> x;
  const bf16 *weight, *bias;
  Ref<const bf16> a, b;
  const float *A_log, *dt_bias;
  // forward outputs
  Ref<bf16> q, k, v, beta;
  Ref<float> g;
  // backward
  Ref<const bf16> dq, dk, dv, dbeta;
  Ref<const float> dg;
  Ref<bf16> dx, da, db;
  float *part_w, *part_b, *part_A, *part_dt; // [tiles][C][4], [tiles][C], [tiles][Hv] x 2
};

__device__ __forceinline__ void tile_of(const Params& p, int& bi, int& t0) {
  bi = blockIdx.x / p.tiles_per_batch;
  t0 = (blockIdx.x % p.tiles_per_batch) * kTile;
}

template <int VEC>
__device__ __forceinline__ void load_weights(const Params& p, int c0, float (&w)[VEC][kWidth],
                                             float (&bias)[VEC]) {
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
#pragma unroll
    for (int j = 0; j < kWidth; ++j)
      w[i][j] = __bfloat162float(p.weight[(c0 + i) * kWidth + j]);
    bias[i] = p.bias ? __bfloat162float(p.bias[c0 + i]) : 0.f;
  }
}

// z = bias + sum_j w[j] x[t - 3 + j] from the window rows r0 (t - 3) .. r3 (t).
template <int VEC>
__device__ __forceinline__ void
conv_z(const float (&w)[VEC][kWidth], const float (&bias)[VEC], const Packed<VEC>& r0,
       const Packed<VEC>& r1, const Packed<VEC>& r2, const Packed<VEC>& r3, float (&z)[VEC]) {
  float x0[VEC], x1[VEC], x2[VEC], x3[VEC];
  unpack(r0, x0), unpack(r1, x1), unpack(r2, x2), unpack(r3, x3);
#pragma unroll
  for (int i = 0; i < VEC; ++i)
    z[i] = bias[i] + w[i][0] * x0[i] + w[i][1] * x1[i] + w[i][2] * x2[i] + w[i][3] * x3[i];
}

template <int VEC>
__global__ void __launch_bounds__(kThreads) conv_fwd_kernel(Params p) {
  int bi, t0;
  tile_of(p, bi, t0);
  const int head = blockIdx.y;
  if (head == 2 * p.Hk + p.Hv) { // gates of the tile
    for (int e = threadIdx.x; e < kTile * p.Hv; e += kThreads) {
      const int t = t0 + e / p.Hv, h = e % p.Hv;
      if (t >= p.T)
        break;
      const float u = __bfloat162float(*p.a.at(bi, t, h)) + p.dt_bias[h];
      *p.g.at(bi, t, h) = -__expf(p.A_log[h]) * softplusf_(u);
      *p.beta.at(bi, t, h) = __float2bfloat16(sigmoidf_(__bfloat162float(*p.b.at(bi, t, h))));
    }
    return;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tw0 = t0 + warp * kTokWarp;
  if (tw0 >= p.T)
    return;
  const int n = min(kTokWarp, p.T - tw0);
  const int c0 = head * p.D + lane * VEC;
  float w[VEC][kWidth], bias[VEC];
  load_weights<VEC>(p, c0, w, bias);
  const bool norm = head < 2 * p.Hk;
  const Ref<bf16> out = head < p.Hk ? p.q : head < 2 * p.Hk ? p.k : p.v;
  const int oh = head < p.Hk ? head : head < 2 * p.Hk ? head - p.Hk : head - 2 * p.Hk;
  const bf16* xp = p.x.at(bi, 0, 0) + c0;

  Packed<VEC> rows[3 + kBatch]; // rows[i] = x[tb - 3 + i]
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    const int t = tw0 - 3 + i;
    rows[i] = t >= 0 ? load_packed<VEC>(xp + int64_t(t) * p.x.st) : zero_packed<VEC>();
  }
  for (int tb = 0; tb < n; tb += kBatch) {
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      const int t = tw0 + tb + i;
      rows[3 + i] = tb + i < n ? load_packed<VEC>(xp + int64_t(t) * p.x.st) : zero_packed<VEC>();
    }
#pragma unroll
    for (int i = 0; i < kBatch; ++i) {
      if (tb + i >= n)
        break;
      float y[VEC];
      conv_z<VEC>(w, bias, rows[i], rows[i + 1], rows[i + 2], rows[i + 3], y);
      float ss = 0.f;
#pragma unroll
      for (int c = 0; c < VEC; ++c) {
        y[c] = siluf_(y[c]);
        ss += y[c] * y[c];
      }
      if (norm) {
        const float r = rsqrtf(warp_sum(ss) + float(kL2Eps));
#pragma unroll
        for (int c = 0; c < VEC; ++c)
          y[c] *= r;
      }
      store_bf16<VEC>(out.at(bi, tw0 + tb + i, oh) + lane * VEC, y);
    }
#pragma unroll
    for (int i = 0; i < 3; ++i)
      rows[i] = rows[kBatch + i];
  }
}

template <int VEC>
__global__ void __launch_bounds__(kThreads, VEC == 8 ? 1 : 2) conv_bwd_kernel(Params p) {
  int bi, t0;
  tile_of(p, bi, t0);
  const int head = blockIdx.y;
  const int tile = blockIdx.x;
  if (head == 2 * p.Hk + p.Hv) { // gates of the tile, and their per-tile parameter sums
    __shared__ float s_A[kThreads], s_dt[kThreads];
    const int R = kThreads / p.Hv; // threads per head
    float acc_A = 0.f, acc_dt = 0.f;
    if (threadIdx.x < R * p.Hv) {
      const int h = threadIdx.x % p.Hv;
      const float A = __expf(p.A_log[h]), dtb = p.dt_bias[h];
      for (int tt = threadIdx.x / p.Hv; tt < kTile; tt += R) {
        const int t = t0 + tt;
        if (t >= p.T)
          break;
        const float u = __bfloat162float(*p.a.at(bi, t, h)) + dtb;
        const float dg = *p.dg.at(bi, t, h);
        const float da = -dg * A * softplus_gradf_(u);
        *p.da.at(bi, t, h) = __float2bfloat16(da);
        acc_dt += da;
        acc_A += -dg * A * softplusf_(u);
        const float be = sigmoidf_(__bfloat162float(*p.b.at(bi, t, h)));
        *p.db.at(bi, t, h) =
            __float2bfloat16(__bfloat162float(*p.dbeta.at(bi, t, h)) * be * (1.f - be));
      }
    }
    s_A[threadIdx.x] = acc_A;
    s_dt[threadIdx.x] = acc_dt;
    __syncthreads();
    for (int h = threadIdx.x; h < p.Hv; h += kThreads) {
      float sa = 0.f, sd = 0.f;
      for (int r = 0; r < R; ++r)
        sa += s_A[r * p.Hv + h], sd += s_dt[r * p.Hv + h];
      p.part_A[int64_t(tile) * p.Hv + h] = sa;
      p.part_dt[int64_t(tile) * p.Hv + h] = sd;
    }
    return;
  }
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int tw0 = t0 + warp * kTokWarp;
  const int n = max(0, min(kTokWarp, p.T - tw0)); // own tokens; 0 for a warp past the end
  const int c0 = head * p.D + lane * VEC;
  float w[VEC][kWidth], bias[VEC];
  load_weights<VEC>(p, c0, w, bias);
  const bool norm = head < 2 * p.Hk;
  const Ref<const bf16> dout = head < p.Hk ? p.dq : head < 2 * p.Hk ? p.dk : p.dv;
  const int oh = head < p.Hk ? head : head < 2 * p.Hk ? head - p.Hk : head - 2 * p.Hk;
  const bf16* xp = p.x.at(bi, 0, 0) + c0;
  const bf16* dp = dout.at(bi, 0, oh) + lane * VEC;
  bf16* dxp = p.dx.at(bi, 0, 0) + c0;

  float dw[VEC][kWidth], dbias[VEC];
#pragma unroll
  for (int i = 0; i < VEC; ++i) {
    dbias[i] = 0.f;
#pragma unroll
    for (int j = 0; j < kWidth; ++j)
      dw[i][j] = 0.f;
  }
  Packed<VEC> rows[3 + kBatchBwd]; // rows[i] = x[jb - 3 + i]
  float dz[3 + kBatchBwd][VEC];    // dz[i] = dz[jb - 3 + i]; zero before tw0
#pragma unroll
  for (int i = 0; i < 3; ++i) {
    const int t = tw0 - 3 + i;
    rows[i] = n > 0 && t >= 0 ? load_packed<VEC>(xp + int64_t(t) * p.x.st) : zero_packed<VEC>();
#pragma unroll
    for (int c = 0; c < VEC; ++c)
      dz[i][c] = 0.f;
  }
  const int jend = n > 0 ? min(tw0 + n + 3, p.T) : tw0; // dz needed for j in [tw0, jend)
  const int emit_end = tw0 + n;                         // dx for s in [tw0, tw0 + n)
  for (int jb = tw0; n > 0 && jb < tw0 + n + 3; jb += kBatchBwd) {
    Packed<VEC> dpk[kBatchBwd];
#pragma unroll
    for (int i = 0; i < kBatchBwd; ++i) {
      const int j = jb + i;
      const bool ok = j < jend;
      rows[3 + i] = ok ? load_packed<VEC>(xp + int64_t(j) * p.x.st) : zero_packed<VEC>();
      dpk[i] = ok ? load_packed<VEC>(dp + int64_t(j) * dout.st) : zero_packed<VEC>();
    }
#pragma unroll
    for (int i = 0; i < kBatchBwd; ++i) {
      const int j = jb + i;
      if (j >= tw0 + n + 3)
        break;
      if (j < jend) {
        float z[VEC], y[VEC], s[VEC], d[VEC];
        conv_z<VEC>(w, bias, rows[i], rows[i + 1], rows[i + 2], rows[i + 3], z);
        unpack(dpk[i], d);
        float ss = 0.f;
#pragma unroll
        for (int c = 0; c < VEC; ++c) {
          s[c] = sigmoidf_(z[c]);
          y[c] = z[c] * s[c];
          ss += y[c] * y[c];
        }
        if (norm) {
          const float r = rsqrtf(warp_sum(ss) + float(kL2Eps));
          float dot = 0.f;
#pragma unroll
          for (int c = 0; c < VEC; ++c)
            dot += y[c] * d[c];
          dot = warp_sum(dot) * r; // o . do with o = y r
#pragma unroll
          for (int c = 0; c < VEC; ++c)
            d[c] = r * (d[c] - y[c] * r * dot);
        }
#pragma unroll
        for (int c = 0; c < VEC; ++c)
          dz[3 + i][c] = d[c] * s[c] * (1.f + z[c] * (1.f - s[c]));
      } else {
#pragma unroll
        for (int c = 0; c < VEC; ++c)
          dz[3 + i][c] = 0.f;
      }
      if (j < emit_end) { // own token: parameter gradients
        float x0[VEC], x1[VEC], x2[VEC], x3[VEC];
        unpack(rows[i], x0), unpack(rows[i + 1], x1), unpack(rows[i + 2], x2),
            unpack(rows[i + 3], x3);
#pragma unroll
        for (int c = 0; c < VEC; ++c) {
          const float g = dz[3 + i][c];
          dbias[c] += g;
          dw[c][0] += g * x0[c], dw[c][1] += g * x1[c], dw[c][2] += g * x2[c],
              dw[c][3] += g * x3[c];
        }
      }
      if (j >= tw0 + 3) { // dx[j - 3] = sum_k w[k] dz[j - k]
        float o[VEC];
#pragma unroll
        for (int c = 0; c < VEC; ++c)
          o[c] = w[c][0] * dz[3 + i][c] + w[c][1] * dz[2 + i][c] + w[c][2] * dz[1 + i][c] +
                 w[c][3] * dz[i][c];
        store_bf16<VEC>(dxp + int64_t(j - 3) * p.dx.st, o);
      }
    }
#pragma unroll
    for (int i = 0; i < 3; ++i) {
      rows[i] = rows[kBatchBwd + i];
#pragma unroll
      for (int c = 0; c < VEC; ++c)
        dz[i][c] = dz[kBatchBwd + i][c];
    }
  }
  // Fixed-order sum of the warps' parameter gradients: red[warp][5][D].
  extern __shared__ float red[];
  const int D = p.D;
#pragma unroll
  for (int c = 0; c < VEC; ++c) {
#pragma unroll
    for (int j = 0; j < kWidth; ++j)
      red[(warp * 5 + j) * D + lane * VEC + c] = dw[c][j];
    red[(warp * 5 + 4) * D + lane * VEC + c] = dbias[c];
  }
  __syncthreads();
  for (int e = threadIdx.x; e < 5 * D; e += kThreads) {
    float sum = 0.f;
    for (int wi = 0; wi < kWarps; ++wi)
      sum += red[wi * 5 * D + e];
    const int j = e / D, c = head * D + e % D;
    if (j < kWidth)
      p.part_w[(int64_t(tile) * p.C + c) * kWidth + j] = sum;
    else
      p.part_b[int64_t(tile) * p.C + c] = sum;
  }
}

// Sums the per-tile partials in tile order: d weight [C*4], d bias [C], d A_log, d dt_bias.
__global__ void conv_reduce_kernel(const float* part_w, const float* part_b, const float* part_A,
                                   const float* part_dt, int tiles, int C, int Hv, float* dweight,
                                   float* dbias, float* dA_log, float* ddt_bias) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  const int nw = C * kWidth, nb = C;
  const float* src;
  int64_t stride;
  float* dst;
  if (e < nw) {
    src = part_w + e, stride = nw, dst = dweight + e;
  } else if (e < nw + nb) {
    if (!dbias)
      return;
    src = part_b + (e - nw), stride = nb, dst = dbias + (e - nw);
  } else if (e < nw + nb + Hv) {
    src = part_A + (e - nw - nb), stride = Hv, dst = dA_log + (e - nw - nb);
  } else if (e < nw + nb + 2 * Hv) {
    src = part_dt + (e - nw - nb - Hv), stride = Hv, dst = ddt_bias + (e - nw - nb - Hv);
  } else {
    return;
  }
  float sum = 0.f;
  for (int t = 0; t < tiles; ++t)
    sum += src[t * stride];
  *dst = sum;
}

int vec_of(const Shape& s) {
  return s.head_dim_k / 32;
}

std::string check_shape(const Shape& s) {
  if (!s.valid())
    return "invalid shape";
  if (s.head_dim_k != s.head_dim_v)
    return "needs Dk == Dv";
  if (s.head_dim_k != 64 && s.head_dim_k != 128 && s.head_dim_k != 256)
    return "needs D in {64, 128, 256}";
  if (s.value_heads > kThreads)
    return "needs Hv <= 256";
  return {};
}

template <class T>
bool aligned(const T* p, int64_t sb, int64_t st, int64_t sh, int vec) {
  return reinterpret_cast<uintptr_t>(p) % (vec * sizeof(T)) == 0 && sb % vec == 0 &&
         st % vec == 0 && sh % vec == 0;
}

int tiles_per_batch(const Shape& s) {
  return (s.seq_len + kTile - 1) / kTile;
}

Params base_params(const Shape& s, const TensorRef<const bf16_t>& x, const bf16_t* weight,
                   const bf16_t* bias, const TensorRef<const bf16_t>& a,
                   const TensorRef<const bf16_t>& b, const float* A_log, const float* dt_bias) {
  Params p{};
  p.T = s.seq_len, p.Hk = s.key_heads, p.Hv = s.value_heads, p.D = s.head_dim_k, p.C = channels(s);
  p.tiles_per_batch = tiles_per_batch(s);
  p.x = ref<const bf16>(x);
  p.weight = reinterpret_cast<const bf16*>(weight);
  p.bias = reinterpret_cast<const bf16*>(bias);
  p.a = ref<const bf16>(a), p.b = ref<const bf16>(b);
  p.A_log = A_log, p.dt_bias = dt_bias;
  return p;
}

class FusedConv final : public Backend {
public:
  std::string name() const override { return "fused"; }
  std::string unsupported(const DeviceInfo& dev, const Shape& s) const override {
    if (dev.major < 8)
      return "needs sm_80 or newer";
    return check_shape(s);
  }
  size_t workspace_bytes(const Shape& s, Pass p) const override {
    if (p == Pass::fwd)
      return 0;
    const size_t tiles = size_t(s.batch) * tiles_per_batch(s);
    Carver c{nullptr};
    c.take<float>(tiles * channels(s) * kWidth);
    c.take<float>(tiles * channels(s));
    c.take<float>(tiles * s.value_heads);
    c.take<float>(tiles * s.value_heads);
    return c.used;
  }

  std::string run_fwd(const FwdArgs& a, void*, Stream stream) const override {
    const Shape& s = a.shape;
    if (std::string e = check_shape(s); !e.empty())
      return "conv fused: " + e;
    const int vec = vec_of(s);
    if (!aligned(a.x.data, a.x.stride_b, a.x.stride_t, 0, vec) ||
        !aligned(a.q.data, a.q.stride_b, a.q.stride_t, a.q.stride_h, vec) ||
        !aligned(a.k.data, a.k.stride_b, a.k.stride_t, a.k.stride_h, vec) ||
        !aligned(a.v.data, a.v.stride_b, a.v.stride_t, a.v.stride_h, vec))
      return "conv fused: x, q, k, v need strides and base aligned to D / 32 elements";
    Params p = base_params(s, a.x, a.weight, a.bias, a.a, a.b, a.A_log, a.dt_bias);
    p.q = ref<bf16>(a.q), p.k = ref<bf16>(a.k), p.v = ref<bf16>(a.v);
    p.g = ref<float>(a.g), p.beta = ref<bf16>(a.beta);
    const dim3 grid(s.batch * p.tiles_per_batch, 2 * s.key_heads + s.value_heads + 1);
    if (vec == 2)
      conv_fwd_kernel<2><<<grid, kThreads, 0, stream>>>(p);
    else if (vec == 4)
      conv_fwd_kernel<4><<<grid, kThreads, 0, stream>>>(p);
    else
      conv_fwd_kernel<8><<<grid, kThreads, 0, stream>>>(p);
    QR_CUDA_TRY(cudaGetLastError());
    return {};
  }

  std::string run_bwd(const BwdArgs& a, void* workspace, Stream stream) const override {
    const Shape& s = a.shape;
    if (std::string e = check_shape(s); !e.empty())
      return "conv fused: " + e;
    if (a.bias && !a.dbias)
      return "conv fused: a bias needs dbias";
    const int vec = vec_of(s);
    if (!aligned(a.x.data, a.x.stride_b, a.x.stride_t, 0, vec) ||
        !aligned(a.dx.data, a.dx.stride_b, a.dx.stride_t, 0, vec) ||
        !aligned(a.dq.data, a.dq.stride_b, a.dq.stride_t, a.dq.stride_h, vec) ||
        !aligned(a.dk.data, a.dk.stride_b, a.dk.stride_t, a.dk.stride_h, vec) ||
        !aligned(a.dv.data, a.dv.stride_b, a.dv.stride_t, a.dv.stride_h, vec))
      return "conv fused: x, dx, dq, dk, dv need strides and base aligned to D / 32 elements";
    Params p = base_params(s, a.x, a.weight, a.bias, a.a, a.b, a.A_log, a.dt_bias);
    p.dq = ref<const bf16>(a.dq), p.dk = ref<const bf16>(a.dk), p.dv = ref<const bf16>(a.dv);
    p.dg = ref<const float>(a.dg), p.dbeta = ref<const bf16>(a.dbeta);
    p.dx = ref<bf16>(a.dx), p.da = ref<bf16>(a.da), p.db = ref<bf16>(a.db);
    const int tiles = s.batch * p.tiles_per_batch;
    Carver c{static_cast<char*>(workspace)};
    p.part_w = c.take<float>(size_t(tiles) * p.C * kWidth);
    p.part_b = c.take<float>(size_t(tiles) * p.C);
    p.part_A = c.take<float>(size_t(tiles) * s.value_heads);
    p.part_dt = c.take<float>(size_t(tiles) * s.value_heads);
    const dim3 grid(tiles, 2 * s.key_heads + s.value_heads + 1);
    const size_t smem = size_t(kWarps) * 5 * p.D * sizeof(float);
    if (vec == 2)
      conv_bwd_kernel<2><<<grid, kThreads, smem, stream>>>(p);
    else if (vec == 4)
      conv_bwd_kernel<4><<<grid, kThreads, smem, stream>>>(p);
    else
      conv_bwd_kernel<8><<<grid, kThreads, smem, stream>>>(p);
    QR_CUDA_TRY(cudaGetLastError());
    const int outs = p.C * kWidth + p.C + 2 * s.value_heads;
    conv_reduce_kernel<<<(outs + 255) / 256, 256, 0, stream>>>(
        p.part_w, p.part_b, p.part_A, p.part_dt, tiles, p.C, s.value_heads, a.dweight, a.dbias,
        a.dA_log, a.ddt_bias);
    QR_CUDA_TRY(cudaGetLastError());
    return {};
  }
};

} // namespace

std::unique_ptr<Backend> make_fused_backend() {
  return std::make_unique<FusedConv>();
}

} // namespace qr::gdn::conv
