// The memory passes of amp_bf16 training, fused: each writes the bf16 copy a following
// GEMM reads, so no GEMM converts its operands. The fp32 arithmetic is the same as the
// unfused ops (LayerNorm statistics, GELU, bias sums stay fp32); only the stored GEMM input
// is rounded to bf16. And the rounding of fp32 parameters to bf16 values (--precision bf16).
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/activation.h"

namespace oc::ops {

// dst[n] = bf16(src).
struct CastToBf16Args {
  bf16* dst;
  const float* src;
  int64_t n;
};

// x[i] = round_bf16(x[i]) in place, kept in fp32 (--precision bf16 / pure_bf16 keep
// parameters at bf16 values).
struct RoundToBf16Args {
  float* x;
  int64_t n;
};

// LayerNorm (ops/layernorm.h) with the output rounded to bf16; mean/rstd [N] in fp32.
struct LayerNormForwardBf16Args {
  bf16* out;
  float* mean;
  float* rstd;
  const float* inp;
  const float* weight;
  const float* bias;
  int64_t N, C;
  double eps;
};

// Residual add + LayerNorm: xm[N,C] += x, then LayerNormForwardBf16 of xm into out.
struct AddLayerNormForwardBf16Args {
  float* xm;
  bf16* out;
  float* mean;
  float* rstd;
  const float* x;
  const float* weight;
  const float* bias;
  int64_t N, C;
  double eps;
};

// out = bf16(act(inp)), n elements.
struct ActForwardBf16Args {
  bf16* out;
  const float* inp;
  int64_t n;
  Act act;
};

// d = dout * act'(inp) over [M,N] (fp32); dbias[N] += column sums of d; dinp = bf16(d).
struct ActBackwardBf16Args {
  bf16* dinp;
  float* dbias;
  const float* dout;
  const float* inp;
  int64_t M, N;
  Act act;
};

// The MLP's backward entry in one pass over h[M,N]: act16 = bf16(act(h)) (c_proj's
// weight-gradient operand, recomputed rather than stored), d = dact * act'(h) (fp32),
// dbias[N] += column sums of d, dh16 = bf16(d). One erf/exp per element instead of two.
struct ActValueGradBf16Args {
  bf16* act16;
  bf16* dh16;
  float* dbias;
  const float* dact;
  const float* h;
  int64_t M, N;
  Act act;
};

// dbias[N] += column sums of dout[M,N] (skipped when null); out = bf16(dout).
struct BiasGradToBf16Args {
  bf16* out;
  float* dbias;
  const float* dout;
  int64_t M, N;
};

}  // namespace oc::ops
