// Float64 CPU reference of the gated delta rule, token by token, forward and backward.
// The correctness oracle for tiny shapes; needs no CUDA, so CI's CPU tests can use it.
// Dense row-major layouts: q, k [B,T,Hk,Dk]; v, o [B,T,Hv,Dv]; g, beta [B,T,Hv];
// states [B,Hv,Dk,Dv]. An empty vector means "absent" for h0 and dht. Varlen (shape.sequences =
// N > 0, gdn.h): cu_seqlens holds the N + 1 offsets, the states are [N,Hv,Dk,Dv], and each
// sequence runs exactly as a dense run of its tokens alone would.
#pragma once

#include "gdn.h"

#include <vector>

namespace qr::gdn::cpu {

struct Inputs {
  Shape shape;
  Options opt;
  std::vector<double> q, k, v, g, beta, h0;
  std::vector<int32_t> cu_seqlens; // N + 1 offsets when varlen, else empty
};

struct Forward {
  std::vector<double> o, ht;
};

struct Grads {
  std::vector<double> dq, dk, dv, dg, dbeta, dh0;
};

Forward forward(const Inputs& in);
// dh0 is the gradient with respect to the initial state (zero when h0 is absent) in any case.
Grads backward(const Inputs& in, const std::vector<double>& d_o, const std::vector<double>& dht);

// sum(w_o * o) + sum(w_ht * ht): a scalar loss whose gradient is backward(in, w_o, w_ht);
// used by the finite-difference tests.
double loss(const Inputs& in, const std::vector<double>& w_o, const std::vector<double>& w_ht);

} // namespace qr::gdn::cpu
