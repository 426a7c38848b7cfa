// The CPU's int8 kernels (contract: ops/gemm_int8.h; Backend::quantize_weight_int8 and
// Backend::gemm_int8 on cpu).
#pragma once
#include <memory>

#include "ops/gemm_int8.h"

namespace oc::ops::cpu {

std::unique_ptr<Int8Weight> quantize_weight_int8(const QuantizeWeightInt8Args& a);
void gemm_int8(const GemmInt8Args& a);
void layernorm_int8(const LayerNormInt8Args& a);
void attention_int8(const AttentionInt8Args& a);  // in attention.cpp (its kernels)

}  // namespace oc::ops::cpu
