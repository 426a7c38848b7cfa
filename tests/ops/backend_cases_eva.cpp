// Backend suite cases for the EVA02 towers: the rotary embedding on q and k (forward and
// backward; EVA02-B-16's head width 64 with a class token, and an odd shape: 3 heads of 6,
// no prefix) and the SwiGLU gate (a vector-sized count and an odd one).
#include <string>

#include "backend_cases.h"
#include "ops/rope.h"
#include "ops/swiglu.h"

namespace oc::ops::test {

namespace {

struct RopeShape {
  std::string name;
  int64_t B, T, W, H, prefix;
  bool big;
};

void rope_cases(std::vector<OpCase>& v) {
  const RopeShape shapes[] = {{"b16", 2, 197, 768, 12, 1, true}, {"odd", 3, 5, 18, 3, 0, false}};
  for (const RopeShape& s : shapes) {
    const int64_t n = s.B * s.T * 3 * s.W, tab = (s.T - s.prefix) * 2 * (s.W / s.H);
    // Each output is x0 c -/+ x1 s: two products and a sum in float, ~1 ulp: kF32.
    v.push_back({"rope_forward_" + s.name,
                 {IO(n), I(tab)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(RopeForwardArgs{
                       .qkv = p.f(0), .sincos = p.f(1), .B = s.B, .T = s.T, .W = s.W, .H = s.H, .prefix = s.prefix});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !s.big});
    v.push_back({"rope_backward_" + s.name,
                 {IO(n), I(tab)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(RopeBackwardArgs{
                       .dqkv = p.f(0), .sincos = p.f(1), .B = s.B, .T = s.T, .W = s.W, .H = s.H, .prefix = s.prefix});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !s.big});
  }
}

void swiglu_cases(std::vector<OpCase>& v) {
  for (int64_t n : {int64_t(100000), int64_t(37)}) {
    const bool big = n > 1000;
    const std::string tag = big ? "big" : "odd";
    // The gate's gates up to |4|: the sigmoid's exp (vec_math.h, < 2 ulp) and a few products: kF32.
    v.push_back({"swiglu_forward_" + tag,
                 {O(n), I(n, Draw::Normal, 2.0), I(n)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(SwigluForwardArgs{.out = p.f(0), .gate = p.f(1), .x = p.f(2), .n = n});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !big});
    v.push_back({"swiglu_backward_" + tag,
                 {O(n), O(n), I(n), I(n, Draw::Normal, 2.0), I(n)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(SwigluBackwardArgs{
                       .dgate = p.f(0), .dx = p.f(1), .dout = p.f(2), .gate = p.f(3), .x = p.f(4), .n = n});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !big});
    v.push_back({"swiglu_backward_inplace_" + tag,  // dgate over dout, as the tower runs it
                 {IO(n), O(n), I(n, Draw::Normal, 2.0), I(n)},
                 [=](Backend& b, const Ptrs& p, float*) {
                   b.run(SwigluBackwardArgs{
                       .dgate = p.f(0), .dx = p.f(1), .dout = p.f(0), .gate = p.f(2), .x = p.f(3), .n = n});
                   return 0.0;
                 },
                 kF32,
                 kF32,
                 !big});
  }
}

}  // namespace

void eva_cases(std::vector<OpCase>& v) {
  rope_cases(v);
  swiglu_cases(v);
}

}  // namespace oc::ops::test
