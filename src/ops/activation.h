// GELU (exact, erf; nn.GELU) and QuickGELU (x * sigmoid(1.702 x); OpenAI weights), and the
// residual add.
#pragma once
#include <cstdint>

#include "ops/op_args.h"

namespace oc::ops {

enum class Act { Gelu, QuickGelu };

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

// y += x (the residual add), n elements.
struct AddInplaceArgs {
  float* y;
  const float* x;
  int64_t n;
};

}  // namespace oc::ops
