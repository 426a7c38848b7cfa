// The op set, once: every op a Backend runs, named by its args struct (ops/<family>.h, which
// holds the contract). Backend's `run` overloads (ops/backend.h), the host backends' forwarding
// (ops/host_backend.h, KernelBackend), the kernels' declarations (ops/cpu/kernels.h,
// ops/ref/ref_ops.h) and the guarded test backend (tests/guarded_backend.h) are generated from
// this list. Adding an op: its args struct, its kernels (ref, cpu, cuda), one line here.
#pragma once
#include "ops/activation.h"
#include "ops/adamw.h"
#include "ops/attention.h"
#include "ops/batchnorm.h"
#include "ops/bf16_ops.h"
#include "ops/conv.h"
#include "ops/cross_attention.h"
#include "ops/dwconv.h"
#include "ops/embed.h"
#include "ops/gemm.h"
#include "ops/gemm_bf16.h"
#include "ops/layernorm.h"
#include "ops/linear.h"
#include "ops/loss.h"
#include "ops/pixels.h"
#include "ops/pool.h"
#include "ops/rope.h"
#include "ops/swiglu.h"
#include "ops/siglip_loss.h"
#include "ops/tokens.h"

// X(Args) for each op.
#define OC_OPS(X)                                                                          \
  /* dense */                                                                             \
  X(GemmArgs) X(GemmBatchedArgs) X(LinearForwardArgs) X(LinearBackwardArgs)               \
  X(ProjForwardArgs) X(ProjBackwardArgs)                                                  \
  /* normalization, activation, residual */                                               \
  X(LayerNormForwardArgs) X(LayerNormBackwardArgs) X(ActForwardArgs) X(ActBackwardArgs)   \
  X(AddInplaceArgs)                                                                       \
  /* OpenCLIP's tower options: LayerScale, token mean, token gather */                    \
  X(LayerScaleForwardArgs) X(LayerScaleBackwardArgs) X(MeanTokensForwardArgs)             \
  X(MeanTokensBackwardArgs) X(GatherTokensForwardArgs) X(GatherTokensBackwardArgs)        \
  /* attention */                                                                         \
  X(AttentionForwardArgs) X(AttentionBackwardArgs)                                        \
  X(CrossAttentionForwardArgs) X(CrossAttentionBackwardArgs)                              \
  /* embeddings and gathers */                                                            \
  X(NormalizeImagesArgs) X(Im2PatchesArgs) X(VitEmbedForwardArgs) X(VitEmbedBackwardArgs) \
  X(TokenEmbedForwardArgs) X(TokenEmbedBackwardArgs) X(GatherRowsForwardArgs)             \
  X(GatherRowsBackwardArgs)                                                               \
  /* losses */                                                                            \
  X(L2NormForwardArgs) X(L2NormBackwardArgs) X(ClipLossArgs) X(SiglipLossArgs)            \
  /* optimizer */                                                                         \
  X(AdamWStepArgs) X(AdamWStepSpansArgs) X(SumSquaresArgs) X(ScaleInplaceArgs)            \
  X(AllFiniteArgs) X(RoundToBf16Args)                                                     \
  /* amp_bf16 */                                                                          \
  X(GemmBf16Args) X(GemmBf16ToBf16Args) X(CastToBf16Args) X(LayerNormForwardBf16Args)     \
  X(AddLayerNormForwardBf16Args) X(ActForwardBf16Args) X(ActBackwardBf16Args)             \
  X(ActValueGradBf16Args) X(BiasGradToBf16Args) X(AttentionForwardBf16Args)               \
  X(AttentionBackwardBf16Args)                                                            \
  /* convolution towers (ModifiedResNet): channels-last conv, BatchNorm2d, ReLU, pooling */ \
  X(Conv2dForwardArgs) X(Conv2dBackwardDataArgs) X(Conv2dBackwardWeightsArgs)             \
  X(BatchNormForwardArgs) X(BatchNormBackwardArgs) X(ReluForwardArgs) X(ReluBackwardArgs) \
  X(AvgPoolForwardArgs) X(AvgPoolBackwardArgs) X(AttnPoolTokensForwardArgs)               \
  X(AttnPoolTokensBackwardArgs)                                                            \
  /* EVA02 towers: 2D rotary embedding on q and k, the SwiGLU gate */                       \
  X(RopeForwardArgs) X(RopeBackwardArgs) X(SwigluForwardArgs) X(SwigluBackwardArgs) \
  /* ConvNeXt: depthwise convolution */                                                   \
  X(DwConv2dForwardArgs) X(DwConv2dBackwardDataArgs) X(DwConv2dBackwardWeightsArgs)

// The declaration of one kernel entry point, `R run(const Args&);` (used inside the
// namespaces of the host backends' kernels: OC_OPS(OC_DECLARE_KERNEL)).
#define OC_DECLARE_KERNEL(A) ::oc::ops::op_result_t<::oc::ops::A> run(const ::oc::ops::A& a);
