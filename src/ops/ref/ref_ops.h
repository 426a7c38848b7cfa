// The reference implementations behind the `ref` backend: one plain loop nest per op, no
// threads, no intrinsics, no library calls, so each reads as the definition of the op.
// Sums and transcendental functions are evaluated in double and the result rounded once to
// float, so `ref` is at least as accurate as any float kernel: a backend compared with it
// is compared against (almost) the exact result, and its tolerance is its own error.
// bf16 rounding happens at exactly the points the amp_bf16 contract names (ops/bf16_*.h,
// attention_*_bf16): GEMM operands and the bf16 outputs; everything else is wide.
// Contracts: the args structs of ops/<family>.h.
#pragma once
#include "core/bf16.h"
#include "ops/op_list.h"

namespace oc::ops::ref {

// One `run(const XArgs&)` per op of ops/op_list.h: dense.cpp, tokens.cpp, attention.cpp,
// embed.cpp, loss.cpp, optim.cpp, bf16.cpp.
OC_OPS(OC_DECLARE_KERNEL)

// dense.cpp: the activation and its derivative in double (bf16.cpp uses them too).
double act_value(double x, Act act);
double act_derivative(double x, Act act);

}  // namespace oc::ops::ref
