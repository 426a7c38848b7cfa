// One residual block in amp_bf16 with bf16 activations: GEMMs read bf16 weights (made once
// per step) and bf16 activations written by the fused pass before them; GEMM outputs, bias,
// GELU, LayerNorm, softmax and the residual stream stay fp32. What is rounded to bf16 is
// exactly each GEMM's operands, forward and backward.
#pragma once
#include "model/transformer.h"

namespace oc {

// Saves what backward needs in `a` (qkv16, att, ao16, xm, h, LayerNorm statistics) and
// writes the block output to y. Inference skips h: c_fc's GELU runs in its GEMM epilogue.
void block_forward_bf16(const BlockParams& P, const BlockWeights16& W16, const BlockActs& a, float* y,
                        StackMemory& mem, const StackDims& d);
// mem.d_res() holds dy on entry and dx on return; parameter gradients accumulate in G.
void block_backward_bf16(const BlockParams& P, const BlockWeights16& W16, const BlockParams& G, const BlockActs& a,
                         StackMemory& mem, const StackDims& d);

}  // namespace oc
