// Device helpers shared by the short-convolution paths (conv_fused.cu, conv_cudnn.cu): the gate
// math and packed bf16 loads / stores of VEC consecutive channels.
#pragma once

#include "common.cuh"
#include "conv.h"

namespace qr::gdn::conv {

__device__ __forceinline__ float sigmoidf_(float x) {
  return 1.f / (1.f + __expf(-x));
}
// torch.nn.functional.softplus (beta 1, threshold 20)
__device__ __forceinline__ float softplusf_(float x) {
  return x > float(kSoftplusThreshold) ? x : log1pf(__expf(x));
}
__device__ __forceinline__ float softplus_gradf_(float x) {
  return x > float(kSoftplusThreshold) ? 1.f : sigmoidf_(x);
}
__device__ __forceinline__ float siluf_(float z) {
  return z * sigmoidf_(z);
}

// VEC bf16 values as VEC / 2 packed 32-bit words.
template <int VEC>
struct Packed {
  static_assert(VEC == 2 || VEC == 4 || VEC == 8);
  uint32_t w[VEC / 2];
};

template <int VEC>
__device__ __forceinline__ Packed<VEC> load_packed(const bf16* p) {
  Packed<VEC> r;
  if constexpr (VEC == 2) {
    r.w[0] = __ldg(reinterpret_cast<const unsigned int*>(p));
  } else if constexpr (VEC == 4) {
    const uint2 u = __ldg(reinterpret_cast<const uint2*>(p));
    r.w[0] = u.x, r.w[1] = u.y;
  } else {
    const uint4 u = __ldg(reinterpret_cast<const uint4*>(p));
    r.w[0] = u.x, r.w[1] = u.y, r.w[2] = u.z, r.w[3] = u.w;
  }
  return r;
}

template <int VEC>
__device__ __forceinline__ Packed<VEC> zero_packed() {
  Packed<VEC> r;
#pragma unroll
  for (int i = 0; i < VEC / 2; ++i)
    r.w[i] = 0;
  return r;
}

template <int VEC>
__device__ __forceinline__ void unpack(const Packed<VEC>& p, float (&f)[VEC]) {
#pragma unroll
  for (int i = 0; i < VEC / 2; ++i) {
    f[2 * i] = __uint_as_float(p.w[i] << 16);
    f[2 * i + 1] = __uint_as_float(p.w[i] & 0xffff0000u);
  }
}

template <int VEC>
__device__ __forceinline__ void store_bf16(bf16* p, const float (&f)[VEC]) {
  Packed<VEC> r;
#pragma unroll
  for (int i = 0; i < VEC / 2; ++i) {
    const __nv_bfloat162 h = __floats2bfloat162_rn(f[2 * i], f[2 * i + 1]);
    r.w[i] = *reinterpret_cast<const uint32_t*>(&h);
  }
  if constexpr (VEC == 2)
    *reinterpret_cast<unsigned int*>(p) = r.w[0];
  else if constexpr (VEC == 4)
    *reinterpret_cast<uint2*>(p) = make_uint2(r.w[0], r.w[1]);
  else
    *reinterpret_cast<uint4*>(p) = make_uint4(r.w[0], r.w[1], r.w[2], r.w[3]);
}

} // namespace qr::gdn::conv
