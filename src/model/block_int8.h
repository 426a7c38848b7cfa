// One residual block for --precision int8 inference: the four GEMMs (in_proj, out_proj, c_fc,
// c_proj) read int8 weights and their inputs quantized per row (ops/gemm_int8.h), or with
// static scales (`openclip quantize`) by the ops that produce them; the
// attention GEMMs, softmax, LayerNorm, GELU and the residual stream are as amp_bf16's block
// (block_bf16.h): bf16 operands, fp32 accumulation, fp32 residual.
#pragma once
#include "model/transformer.h"

namespace oc {

void block_forward_int8(const BlockParams& P, const BlockWeightsInt8& W8, const BlockActs& a, float* y,
                        StackMemory& mem, const StackDims& d);

}  // namespace oc
