// The CPU kernels of amp_bf16's fused memory passes (contract: ops/bf16_ops.h), threaded.
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/bf16_ops.h"

namespace oc::ops {

void cast_to_bf16(bf16* dst, const float* src, int64_t n);
void layernorm_forward_bf16(bf16* out, float* mean, float* rstd, const float* inp, const float* weight,
                            const float* bias, int64_t N, int64_t C, double eps);
void add_layernorm_forward_bf16(float* xm, bf16* out, float* mean, float* rstd, const float* x, const float* weight,
                                const float* bias, int64_t N, int64_t C, double eps);
void act_forward_bf16(bf16* out, const float* inp, int64_t n, Act act);
void act_backward_bf16(bf16* dinp, float* dbias, const float* dout, const float* inp, int64_t M, int64_t N, Act act);
void act_value_grad_bf16(bf16* act16, bf16* dh16, float* dbias, const float* dact, const float* h, int64_t M, int64_t N,
                         Act act);
void bias_grad_to_bf16(bf16* out, float* dbias, const float* dout, int64_t M, int64_t N);

}  // namespace oc::ops
