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
  // The input whose NaN/Inf may reach more outputs than in ref (-1: none). ref's convolutions
  // skip the zero padding; a kernel that multiplies it (oneDNN's AMX bf16 convolutions, or
  // PyTorch's im2col) turns 0 x NaN and 0 x Inf into NaN in every output whose window covers
  // the padding at the bad weight's tap. Both are IEEE arithmetic; what must hold is that each
  // non-finite output of ref is non-finite on the backend too.
  int nonfinite_may_spread_from = -1;
};

std::vector<OpCase> all_cases();

// Tolerances, as max|x - ref| / max|ref| per output (ref sums in double: this is the error of
// the backend under test alone).
// fp32: a float dot product of length K has a rounding error of about sqrt(K) * 2^-24 times
// the size of its terms in practice (worst case K * 2^-24 * sum|terms|); for K = 3072 and
// random data that is ~1e-6 of the output's largest entry. exp/erf approximations of the CPU
// kernels add < 2 ulp (vec_math.h). 2e-5 leaves a factor of ~10 and still fails on any
// wrong term, index or missed accumulation, which show up at 1e-3 or more.
// GEMMs on bf16-rounded inputs (Prec::BF16) use kF32 too: the products of bf16 values are
// exact in float, so only the float sums differ from ref.
constexpr double kF32 = 2e-5;
// bf16 outputs (and fp32 outputs computed from intermediates rounded to bf16, such as P and dS
// in attention): where the backend's fp32 value and ref's differ in the last float bit next to
// a bf16 rounding boundary, the stored value moves by one bf16 ulp, at most 2^-7 = 7.8e-3 of
// the value. 1e-2 allows one such flip on the largest entry; a missing rounding point, a wrong
// epilogue or a wrong operand is off by far more on some entry.
constexpr double kB16 = 1e-2;

// Argument constructors for the case tables.
inline Arg I(int64_t n, Draw d = Draw::Normal, double s = 1.0) { return {Kind::In, false, n, d, s}; }
inline Arg O(int64_t n) { return {Kind::Out, false, n}; }
inline Arg IO(int64_t n, Draw d = Draw::Normal, double s = 1.0) { return {Kind::InOut, false, n, d, s}; }
inline Arg I16(int64_t n, double s = 1.0) { return {Kind::In, true, n, Draw::Normal, s}; }
inline Arg O16(int64_t n) { return {Kind::Out, true, n}; }
inline Arg Scratch(int64_t n) { return {Kind::Out, false, n, Draw::Normal, 1.0, false}; }  // contents undefined


}  // namespace oc::ops::test
