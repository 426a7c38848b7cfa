// The memory passes of amp_bf16 training, fused: each writes the bf16 copy a following
// GEMM reads, so no GEMM converts its operands. The fp32 arithmetic is the same as the
// unfused ops (LayerNorm statistics, GELU, bias sums stay fp32); only the stored GEMM input
// is rounded to bf16.
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/activation.h"

namespace oc::ops {

// dst[n] = bf16(src), threaded.
void cast_to_bf16(bf16* dst, const float* src, int64_t n);

// layernorm_forward<float> with the output rounded to bf16; mean/rstd [N] in fp32.
void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                            const float* bias, int64_t N, int64_t C, double eps);
// Residual add + LayerNorm: xm[N,C] += x, then layernorm_forward_bf16(out, ..., xm).
void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                const float* bias, int64_t N, int64_t C, double eps);

// out = bf16(act(inp)), n elements.
void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act);
// d = dout * act'(inp) over [M,N] (fp32); dbias[N] += column sums of d; dinp = bf16(d).
void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N, Act act);
// The MLP's backward entry in one pass over h[M,N]: act16 = bf16(act(h)) (c_proj's
// weight-gradient operand, recomputed rather than stored), d = dact * act'(h) (fp32),
// dbias[N] += column sums of d, dh16 = bf16(d). One erf/exp per element instead of two.
void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M, int64_t N,
                         Act act);
// dbias[N] += column sums of dout[M,N] (skipped when null); out = bf16(dout).
void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N);

}  // namespace oc::ops
