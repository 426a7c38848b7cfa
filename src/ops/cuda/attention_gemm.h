// Self-attention as strided-batched cuBLASLt GEMMs over the heads with the softmax between them
// (attention_gemm.cpp), for every sequence length; opt-in with OPENCLIP_CUDA_ATTENTION=gemm until
// it has run on a GPU (the default stays the one-block-per-head kernels, kernels_attention.cu).
// The args are the ops' contract (ops/attention.h).
#pragma once
#include "ops/cuda/device_ctx.h"
#include "ops/op_list.h"

namespace oc::ops::cuda {

// OPENCLIP_CUDA_ATTENTION: unset or "kernel" -> false, "gemm" -> true, else a user error (read once).
bool gemm_attention_enabled();
void attention_gemm_forward(DeviceCtx& c, const AttentionForwardArgs& a);
void attention_gemm_backward(DeviceCtx& c, const AttentionBackwardArgs& a);
void attention_gemm_forward_bf16(DeviceCtx& c, const AttentionForwardBf16Args& a);
void attention_gemm_backward_bf16(DeviceCtx& c, const AttentionBackwardBf16Args& a);

}  // namespace oc::ops::cuda
