// Device helpers shared by the GDN kernels: bf16 conversion, warp reductions, cp.async, and a
// warp-level bf16 tensor-core GEMM over shared-memory tiles (ldmatrix + mma.sync.m16n8k16, sm_80+).
#pragma once

#include "gdn.h"

#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <string>

namespace qr::gdn {

using bf16 = __nv_bfloat16;

inline std::string cuda_error(cudaError_t e, const char* what) {
  return e == cudaSuccess ? std::string() : std::string(what) + ": " + cudaGetErrorString(e);
}

// Returns the error text of the first failing CUDA call from the enclosing function.
#define QR_CUDA_TRY(call)                                                                          \
  do {                                                                                             \
    if (std::string e_ = ::qr::gdn::cuda_error((call), #call); !e_.empty())                        \
      return e_;                                                                                   \
  } while (0)

// Device-side view of a TensorRef: element (b, t, h, 0) at p + b sb + t st + h sh.
template <class T>
struct Ref {
  T* p;
  int64_t sb, st, sh;
  __host__ __device__ T* at(int b, int t, int h) const { return p + b * sb + t * st + h * sh; }
};

template <class T, class U>
Ref<T> ref(const TensorRef<U>& r) {
  return {reinterpret_cast<T*>(r.data), r.stride_b, r.stride_t, r.stride_h};
}

// Bump allocator over one workspace block; every piece 256-byte aligned.
struct Carver {
  char* base;
  size_t used = 0;
  template <class T>
  T* take(size_t count) {
    T* p = reinterpret_cast<T*>(base ? base + used : nullptr);
    used += (count * sizeof(T) + 255) / 256 * 256;
    return p;
  }
};

// Empty when this binary holds machine code for the device's architecture, else why not. The
// kernels are built as arch-specific targets without PTX (kernels/CMakeLists.txt), which run only
// on their exact architecture, so anything else would fail at launch.
inline std::string arch_error(const DeviceInfo& dev) {
  constexpr int kBuilt[] = {__CUDA_ARCH_LIST__}; // e.g. 900, 1000 for sm_90a, sm_100a
  std::string list;
  for (int a : kBuilt) {
    if (a == dev.major * 100 + dev.minor * 10)
      return {};
    list += (list.empty() ? "sm_" : ", sm_") + std::to_string(a / 10);
  }
  return "the binary has no code for sm_" + std::to_string(dev.major * 10 + dev.minor) +
         " (built for " + list + ")";
}

// The input-contract status a run leaves at the start of its workspace (gdn.h,
// Backend::input_error): kernels OR in the bits of what they found wrong; the run clears it first.
enum StatusBit : unsigned {
  kBadGate = 1,    // some g > 0 or NaN (fused needs g <= 0)
  kBadOffsets = 2, // cu_seqlens does not rise strictly from 0 to T
  kBadContext = 4, // the saved context's stamp does not match the backward's shape and options
  kNoContext = 8,  // the saved context was never written by a training forward
  kStalled = 16,   // the fused backward's pipeline waited seconds for a scan's tiles (a fault)
};
constexpr size_t kStatusBytes = 256; // one carver granule

inline cudaError_t clear_status(void* workspace, cudaStream_t st) {
  return cudaMemsetAsync(workspace, 0, sizeof(unsigned), st);
}

// Waits for the stream and turns the status bits into the reason (empty when clean).
inline std::string read_status(const std::string& backend, const void* workspace, cudaStream_t st) {
  if (!workspace)
    return {};
  unsigned bits = 0;
  QR_CUDA_TRY(cudaStreamSynchronize(st));
  QR_CUDA_TRY(cudaMemcpy(&bits, workspace, sizeof bits, cudaMemcpyDeviceToHost));
  std::string why;
  auto add = [&](unsigned bit, const char* text) {
    if (bits & bit)
      why += (why.empty() ? backend + ": " : std::string("; ")) + text;
  };
  add(kBadGate, "g must be <= 0 (a log decay) and finite: the run met a larger g");
  add(kBadOffsets, "cu_seqlens must rise strictly from 0 to T (every sequence >= 1 token)");
  add(kBadContext, "the saved context is from a forward of another shape or options");
  add(kNoContext, "the saved context was not written by a training forward");
  add(kStalled, "internal fault: bwd_intra waited seconds for the scans' tiles (pipeline stalled)");
  return why;
}

// Whether cu[0 .. N] rises strictly from 0 to T; all threads of the calling CTA take part and all
// get the answer. Called by one CTA of a varlen run, which reports it into the status.
__device__ __forceinline__ bool offsets_ok(const int32_t* cu, int N, int T) {
  bool bad = threadIdx.x == 0 && (cu[0] != 0 || cu[N] != T);
  for (int i = threadIdx.x; i < N; i += blockDim.x)
    bad |= cu[i + 1] <= cu[i];
  return !__syncthreads_or(bad);
}

__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

// Sum over the 4 lanes of an mma quad (lanes 4g .. 4g+3 share a row of the C fragment).
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  x += __shfl_xor_sync(0xffffffffu, x, 2);
  return x;
}

// Sum over the 8 lanes with equal lane % 4 (they share the columns of the C fragment).
__device__ __forceinline__ float column_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 4);
  x += __shfl_xor_sync(0xffffffffu, x, 8);
  x += __shfl_xor_sync(0xffffffffu, x, 16);
  return x;
}

// The reverse cumsum of a chunk's 64 values held two per lane (lane l: entries 2l, 2l + 1): out[e]
// = the sum of entries 2 lane + e .. 63 (dg from dG).
__device__ __forceinline__ void reverse_cumsum_pairs(const float (&d)[2], int lane,
                                                     float (&out)[2]) {
  float x = d[0] + d[1];
#pragma unroll
  for (int o = 1; o < 32; o <<= 1) {
    const float y = __shfl_down_sync(0xffffffffu, x, o);
    if (lane + o < 32)
      x += y;
  }
  out[0] = x;
  out[1] = x - d[0];
}

__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16-byte async copy global -> shared; zero-fills when `valid` is false.
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(smem)), "l"(gmem),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() {
  asm volatile("cp.async.commit_group;\n");
}
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// f(row, col) for each 8-column piece of a ROWS x COLS tile that this thread takes, the CTA's
// THREADS threads (blockDim.x == THREADS: every piece is taken once) sharing the tile: the trip
// count fixed at compile time and each thread's row and column found once (a generic loop's 64-bit
// index math per piece was a third of bwd_intra's instructions).
template <int ROWS, int COLS, int THREADS, class F>
__device__ __forceinline__ void for_each_piece(F&& f) {
  constexpr int kVec = COLS / 8, kPass = THREADS / kVec; // rows per pass
  static_assert(COLS % 8 == 0 && THREADS % kVec == 0 && ROWS % kPass == 0);
  const int r0 = threadIdx.x / kVec, c = threadIdx.x % kVec * 8;
#pragma unroll
  for (int p = 0; p < ROWS / kPass; ++p)
    f(r0 + p * kPass, c);
}

// Copies a ROWS x COLS bf16 tile from global rows `src + r * src_stride` into shared memory with
// row stride `ld` in 16-byte cp.async pieces; rows at or past `valid_rows` become zeros.
template <int ROWS, int COLS, int THREADS>
__device__ __forceinline__ void load_tile_async(bf16* dst, int ld, const bf16* src,
                                                int64_t src_stride, int valid_rows = ROWS) {
  for_each_piece<ROWS, COLS, THREADS>([&](int r, int c) {
    const bool ok = valid_rows >= ROWS || r < valid_rows;
    cp_async16(dst + r * ld + c, src + (ok ? r : 0) * src_stride + c, ok);
  });
}

// A bf16 pair as two floats, the first element in the low half: two integer instructions, where
// __bfloat1622float2 takes three.
__device__ __forceinline__ float2 bf16x2_to_float2(uint32_t u) {
  return {__uint_as_float(u << 16), __uint_as_float(u & 0xffff0000u)};
}

// 2^x on the special-function unit with denormal results flushed to zero, and exp(x) as 2^(x
// log2(e)): __expf without its range fix for denormal results (four instructions and a branch).
__device__ __forceinline__ float exp2_ftz(float x) {
  float y;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}
constexpr float kLog2e = 1.4426950408889634f;
__device__ __forceinline__ float exp_ftz(float x) {
  return exp2_ftz(x * kLog2e);
}

// Fragment of a warp's WM x WN fp32 accumulator tile built from m16n8 pieces.
// Element (i, j, e): row 16 i + lane / 4 + 8 (e / 2), column 8 j + 2 (lane % 4) + e % 2.
template <int WM, int WN>
struct Acc {
  static_assert(WM % 16 == 0 && WN % 8 == 0);
  static constexpr int MI = WM / 16, NJ = WN / 8;
  float c[MI][NJ][4];

  __device__ __forceinline__ void zero() {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          c[i][j][e] = 0.f;
  }
  __device__ __forceinline__ void add(const Acc& o) {
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          c[i][j][e] += o.c[i][j][e];
  }
  // f(row, col, value&, other's value&) over two accumulators of the same warp tile.
  template <class F>
  __device__ __forceinline__ void each_with(Acc& o, F&& f) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          f(16 * i + lane / 4 + 8 * (e / 2), 8 * j + 2 * (lane % 4) + (e % 2), c[i][j][e],
            o.c[i][j][e]);
  }
  // f(row, col, value&, value of col + 1&) over the fragment's column pairs (col even), for
  // paired bf16x2 loads and stores.
  template <class F>
  __device__ __forceinline__ void each_pair(F&& f) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int hi = 0; hi < 2; ++hi)
          f(16 * i + lane / 4 + 8 * hi, 8 * j + 2 * (lane % 4), c[i][j][2 * hi],
            c[i][j][2 * hi + 1]);
  }
  // f(row, col, value&) with row / col relative to the warp tile origin.
  template <class F>
  __device__ __forceinline__ void each(F&& f) {
    const int lane = threadIdx.x & 31;
#pragma unroll
    for (int i = 0; i < MI; ++i)
#pragma unroll
      for (int j = 0; j < NJ; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e)
          f(16 * i + lane / 4 + 8 * (e / 2), 8 * j + 2 * (lane % 4) + (e % 2), c[i][j][e]);
  }
};

// Storage of a GEMM operand in shared memory (bf16, row stride `ld` a multiple of 8 elements):
// for A (M x K) `MK` means element (m, k) at m * ld + k and `KM` means at k * ld + m;
// for B (K x N) `KN` means element (k, n) at k * ld + n and `NK` means at n * ld + k.
enum class Lay { MK, KM, KN, NK };

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const bf16* p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(p)));
}

__device__ __forceinline__ void mma_bf16_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0,
                                               uint32_t b1) {
  asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
               "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// acc += A[m0 : m0+WM, 0:K] * B[0:K, n0 : n0+WN] for one warp; A and B in shared memory.
template <Lay LA, Lay LB, int K, int WM, int WN>
__device__ __forceinline__ void warp_mma(Acc<WM, WN>& acc, const bf16* A, int lda, const bf16* B,
                                         int ldb, int m0, int n0) {
  static_assert(LA == Lay::MK || LA == Lay::KM);
  static_assert(LB == Lay::KN || LB == Lay::NK);
  static_assert(K % 16 == 0 && WN % 16 == 0);
  const int lane = threadIdx.x & 31;
  const int l8 = lane & 7, b8 = (lane >> 3) & 1, b16 = lane >> 4;
#pragma unroll
  for (int k0 = 0; k0 < K; k0 += 16) {
    uint32_t a[Acc<WM, WN>::MI][4];
#pragma unroll
    for (int i = 0; i < Acc<WM, WN>::MI; ++i) {
      const int m = m0 + 16 * i;
      if constexpr (LA == Lay::MK) // matrices: (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15), ..
        ldmatrix_x4(a[i], A + (m + l8 + 8 * b8) * lda + k0 + 8 * b16);
      else
        ldmatrix_x4_trans(a[i], A + (k0 + l8 + 8 * b16) * lda + m + 8 * b8);
    }
#pragma unroll
    for (int j = 0; j < Acc<WM, WN>::NJ; j += 2) {
      const int n = n0 + 8 * j;
      uint32_t b[4];               // b[0], b[1]: n-tile j; b[2], b[3]: n-tile j + 1
      if constexpr (LB == Lay::NK) // matrices: (n 0-7, k 0-7), (n 0-7, k 8-15), (n 8-15, k 0-7), ..
        ldmatrix_x4(b, B + (n + l8 + 8 * b16) * ldb + k0 + 8 * b8);
      else
        ldmatrix_x4_trans(b, B + (k0 + l8 + 8 * b8) * ldb + n + 8 * b16);
#pragma unroll
      for (int i = 0; i < Acc<WM, WN>::MI; ++i) {
        mma_bf16_16816(acc.c[i][j], a[i], b[0], b[1]);
        mma_bf16_16816(acc.c[i][j + 1], a[i], b[2], b[3]);
      }
    }
  }
}

} // namespace qr::gdn
