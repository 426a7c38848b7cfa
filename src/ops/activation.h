// GELU (exact, erf; nn.GELU), QuickGELU (x * sigmoid(1.702 x); OpenAI weights) and GELU with
// the tanh approximation (nn.GELU(approximate="tanh"): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))),
// the SigLIP2 text towers and timm's act_layer "gelu_tanh"), ReLU (ModifiedResNet), and the residual add.
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

// The integer values are the CUDA kernels' `int act` (ops/cuda/act.cuh).
enum class Act { Gelu = 0, QuickGelu = 1, GeluTanh = 2 };

// out = act(inp), n elements.
struct ActForwardArgs {
  float* out;
  const float* inp;
  int64_t n;
  Act act;
};

// dinp = dout * act'(inp) (assigned; dinp may alias dout).
struct ActBackwardArgs {
  float* dinp;
  const float* dout;
  const float* inp;
  int64_t n;
  Act act;
};

// out = max(inp, 0) with NaN kept (torch.relu), n elements; out may alias inp (nn.ReLU(inplace)).
struct ReluForwardArgs {
  float* out;
  const float* inp;
  int64_t n;
};

// dinp = out > 0 ? dout : 0, from ReLU's OUTPUT (so the forward may run in place); NaN in out
// passes dout through, as torch's threshold_backward. Assigned; dinp may alias dout.
struct ReluBackwardArgs {
  float* dinp;
  const float* dout;
  const float* out;
  int64_t n;
};

// y += x (the residual add), n elements.
struct AddInplaceArgs {
  float* y;
  const float* x;
  int64_t n;
};

}  // namespace oc::ops
