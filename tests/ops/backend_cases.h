// The op cases of the backend suite (backend_ops_test.cpp): each names its arguments (inputs,
// outputs, in-place outputs; fp32 or bf16; how they are drawn) and calls one Backend method.
// The runner gives every backend the same argument contents and compares with `ref`.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/bf16.h"
#include "ops/backend.h"

namespace oc::ops::test {

enum class Kind { In, Out, InOut };
enum class Draw { Normal, Unit, Positive };  // N(0, scale^2); U[0,1); U[0.5, 2)

struct Arg {
  Kind kind;
  bool bf16;
  int64_t n;
  Draw draw = Draw::Normal;
  double scale = 1.0;
  bool compare = true;  // false: scratch whose contents the op does not define
};

// Pointers into the backend's buffers, in argument order.
struct Ptrs {
  std::vector<void*> p;
  float* f(size_t i) const { return static_cast<float*>(p[i]); }
  bf16* h(size_t i) const { return static_cast<bf16*>(p[i]); }
};

struct OpCase {
  std::string name;
  std::vector<Arg> args;
  // Runs the op; returns its host result (a loss, a norm; 0 when none). Host scalars the op
  // accumulates into (d logit_scale) are returned through `host` (two floats, zero on entry).
  std::function<double(Backend&, const Ptrs&, float* host)> run;
  // Largest allowed max|x - ref| / max|ref| per output, fp32 outputs and bf16 outputs.
  double tol = 0, tol16 = 0;
  bool small = false;  // used by the NaN/Inf tests (propagation does not depend on size)
};

std::vector<OpCase> all_cases();

}  // namespace oc::ops::test
