// The CUDA backend's ops that run several kernels and GEMMs: attention (self and cross), the two losses, the
// amp_bf16 passes and the fp32 GEMMs with bf16-rounded operands (Prec::BF16). Each takes the
// backend's DeviceCtx and the op's args struct (the contract, ops/<family>.h); cuda_backend.cpp
// forwards to them. First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include "ops/cuda/device_ctx.h"
#include "ops/op_list.h"

namespace oc::ops::cuda {

// Whether the attention kernels' shared memory for T tokens of width C in H heads fits one
// block (true for a bad H: the kernel path then reports it). Longer sequences run on the
// strided-row kernels of cross attention (kernels_xattn.cu).
bool attention_fits(const DeviceCtx& c, int64_t T, int64_t C, int64_t H);
void attention_forward(DeviceCtx& c, const AttentionForwardArgs& a);
void attention_backward(DeviceCtx& c, const AttentionBackwardArgs& a);
void attention_forward_bf16(DeviceCtx& c, const AttentionForwardBf16Args& a);
void attention_backward_bf16(DeviceCtx& c, const AttentionBackwardBf16Args& a);
void cross_attention_forward(DeviceCtx& c, const CrossAttentionForwardArgs& a);
void cross_attention_backward(DeviceCtx& c, const CrossAttentionBackwardArgs& a);

double clip_loss(DeviceCtx& c, const ClipLossArgs& a);
double siglip_loss(DeviceCtx& c, const SiglipLossArgs& a);

void layernorm_forward_bf16(DeviceCtx& c, const LayerNormForwardBf16Args& a);
void add_layernorm_forward_bf16(DeviceCtx& c, const AddLayerNormForwardBf16Args& a);
void act_forward_bf16(DeviceCtx& c, const ActForwardBf16Args& a);
void act_backward_bf16(DeviceCtx& c, const ActBackwardBf16Args& a);
void act_value_grad_bf16(DeviceCtx& c, const ActValueGradBf16Args& a);
void bias_grad_to_bf16(DeviceCtx& c, const BiasGradToBf16Args& a);

// fp32 GEMMs on cuBLASLt; Prec::BF16 rounds copies of A and B to bf16 values first.
void gemm_batched(DeviceCtx& c, const GemmBatchedArgs& a);
void linear_forward(DeviceCtx& c, const LinearForwardArgs& a);

}  // namespace oc::ops::cuda
