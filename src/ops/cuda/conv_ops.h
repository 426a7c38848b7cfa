// The CUDA backend's convolution-tower ops that run several kernels and GEMMs: conv2d forward,
// backward data and backward weights (im2col / col2im around cuBLASLt GEMMs; the bias by a kernel and column sums),
// the depthwise convolution (direct kernels, kernels_dwconv.cu) and BatchNorm2d
// forward/backward (column statistics in double, then one elementwise pass). Each takes the
// backend's DeviceCtx and the op's args struct (the contract: ops/conv.h, ops/batchnorm.h);
// cuda_backend.cpp forwards to them. First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#pragma once
#include "ops/cuda/device_ctx.h"
#include "ops/op_list.h"

namespace oc::ops::cuda {

void conv2d_forward(DeviceCtx& c, const Conv2dForwardArgs& a);
void conv2d_backward_data(DeviceCtx& c, const Conv2dBackwardDataArgs& a);
void conv2d_backward_weights(DeviceCtx& c, const Conv2dBackwardWeightsArgs& a);
void dwconv2d_forward(DeviceCtx& c, const DwConv2dForwardArgs& a);
void dwconv2d_backward_data(DeviceCtx& c, const DwConv2dBackwardDataArgs& a);
void dwconv2d_backward_weights(DeviceCtx& c, const DwConv2dBackwardWeightsArgs& a);
void batchnorm_forward(DeviceCtx& c, const BatchNormForwardArgs& a);
void batchnorm_backward(DeviceCtx& c, const BatchNormBackwardArgs& a);

}  // namespace oc::ops::cuda
