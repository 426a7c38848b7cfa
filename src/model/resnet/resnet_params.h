// The parameters of OpenCLIP's ModifiedResNet image tower (the RN50 ... RN50x64 configs),
// under OpenCLIP's state_dict names: visual.conv1..3 + bn1..3 (the 3-conv stem),
// visual.layer{1..4}.{i}.conv1..3 / bn1..3 / downsample.0 (conv) / downsample.1 (bn), and
// visual.attnpool.{positional_embedding, k_proj, q_proj, v_proj, c_proj}. Each BatchNorm2d's
// running_mean, running_var and num_batches_tracked are in the table as buffers
// (ParamInfo::buffer): saved and loaded with the weights, written by the training forward,
// never trained (their gradient slots stay 0).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/config.h"

namespace oc {

class Rng;
struct ParamTable;
struct ParamInfo;

// A bias-free convolution and the BatchNorm2d after it.
struct ConvBnParams {
  float* conv = nullptr;  // [cout, cin, k, k]
  float* bn_w = nullptr;  // [cout]  weight, bias, running_mean, running_var
  float* bn_b = nullptr;
  float* bn_mean = nullptr;
  float* bn_var = nullptr;
  float* bn_count = nullptr;  // []  num_batches_tracked (an integer count, stored as float)
  int64_t cin = 0, cout = 0, k = 0;
};

// Bottleneck: conv1 1x1 -> conv2 3x3 -> [AvgPool2d(stride)] -> conv3 1x1 (x4 channels); the
// identity is downsample = AvgPool2d(stride) -> 1x1 conv -> bn when the shape changes.
struct BottleneckParams {
  ConvBnParams c1, c2, c3, down;
  bool has_down = false;
  int64_t stride = 1;
};

// AttentionPool2d: positional_embedding [HW+1, C]; q/k/v/c_proj are nn.Linear (weight [out, in]).
struct AttnPoolParams {
  float *pos = nullptr, *k_w = nullptr, *k_b = nullptr, *q_w = nullptr, *q_b = nullptr, *v_w = nullptr, *v_b = nullptr,
        *c_w = nullptr, *c_b = nullptr;
};

struct ResNetParams {
  ConvBnParams stem[3];
  std::vector<BottleneckParams> blocks;  // layer1..layer4 in order
  AttnPoolParams pool;
};

// Appends the tower's parameters and buffers to `t` in state_dict order.
void add_resnet_params(ParamTable& t, const ModelCfg& c);
ResNetParams bind_resnet_params(const ModelCfg& c, const ParamTable& t, float* base);
// OpenCLIP's initialisation of a ModifiedResNet parameter into d[p.numel]: conv weights
// kaiming_uniform (PyTorch's default), BatchNorm weight 1 (bn3 of every block 0) and bias 0,
// running statistics 0 / 1, num_batches_tracked 0, attnpool q/k/v/c weights N(0, C^-0.5) and
// biases U(+-1/sqrt(C)), positional_embedding N(0, 1) / sqrt(C). False when `p` is not one.
bool init_resnet_param(const ModelCfg& c, const ParamInfo& p, float* d, Rng& rng);
// Forward multiply-accumulates of the tower per image (convolutions, attention pool).
double resnet_forward_macs(const ModelCfg& c);

}  // namespace oc
