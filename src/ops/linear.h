// nn.Linear as OpenCLIP lays it out (weight [out, in], bias [out]), and the projections
// stored [in, out] (visual.proj, text_projection).
#pragma once
#include <cstdint>

#include "ops/gemm.h"

namespace oc::ops {

// out[M,N] = inp[M,K] @ weight[N,K]^T + bias[N] (bias may be null).
struct LinearForwardArgs {
  float* out;
  const float* inp;
  const float* weight;
  const float* bias;
  int64_t M, K, N;
  Prec prec = Prec::F32;
};

// dinp[M,K] = dout @ weight (assigned; skipped when dinp is null),
// dweight[N,K] += dout^T @ inp, dbias[N] += column sums of dout (skipped when null).
struct LinearBackwardArgs {
  float* dinp;
  float* dweight;
  float* dbias;
  const float* dout;
  const float* inp;
  const float* weight;
  int64_t M, K, N;
  Prec prec = Prec::F32;
};

// out[M,N] = inp[M,K] @ w[K,N].
struct ProjForwardArgs {
  float* out;
  const float* inp;
  const float* w;
  int64_t M, K, N;
  Prec prec = Prec::F32;
};

// dinp = dout @ w^T (assigned; skipped when null), dw += inp^T @ dout.
struct ProjBackwardArgs {
  float* dinp;
  float* dw;
  const float* dout;
  const float* inp;
  const float* w;
  int64_t M, K, N;
  Prec prec = Prec::F32;
};

}  // namespace oc::ops
