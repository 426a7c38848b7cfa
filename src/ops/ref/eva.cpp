// Reference rotary embedding and SwiGLU gate (ops/rope.h, ops/swiglu.h): the definitions, in
// double, rounded once.
#include <cmath>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {
namespace {

// Rotates the q and k pairs of qkv by the table's angle (sign +1) or its inverse (sign -1).
void rotate(float* qkv, const float* sincos, int64_t B, int64_t T, int64_t W, int64_t H, int64_t prefix, double sign) {
  OC_CHECK(H > 0 && W % H == 0 && (W / H) % 2 == 0 && prefix >= 0 && prefix <= T,
           "rope: bad shape W={} H={} T={} prefix={}", W, H, T, prefix);
  const int64_t D = W / H;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = prefix; t < T; ++t) {
      const float* sc = sincos + (t - prefix) * 2 * D;
      for (int64_t part = 0; part < 2; ++part)  // q, k
        for (int64_t h = 0; h < H; ++h) {
          float* x = qkv + (b * T + t) * 3 * W + part * W + h * D;
          for (int64_t i = 0; i < D; i += 2) {
            const double s = sign * double(sc[i]), c = sc[D + i];
            const double x0 = x[i], x1 = x[i + 1];
            x[i] = float(x0 * c - x1 * s);
            x[i + 1] = float(x1 * c + x0 * s);
          }
        }
    }
}

double sigmoid(double g) { return 1.0 / (1.0 + std::exp(-g)); }

}  // namespace

void run(const RopeForwardArgs& a) { rotate(a.qkv, a.sincos, a.B, a.T, a.W, a.H, a.prefix, 1.0); }
void run(const RopeBackwardArgs& a) { rotate(a.dqkv, a.sincos, a.B, a.T, a.W, a.H, a.prefix, -1.0); }

void run(const SwigluForwardArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) {
    const double g = a.gate[i];
    a.out[i] = float(g * sigmoid(g) * double(a.x[i]));
  }
}

void run(const SwigluBackwardArgs& a) {
  for (int64_t i = 0; i < a.n; ++i) {
    const double g = a.gate[i], x = a.x[i], d = a.dout[i], s = sigmoid(g);
    a.dgate[i] = float(d * x * s * (1.0 + g * (1.0 - s)));
    a.dx[i] = float(d * g * s);
  }
}

}  // namespace oc::ops::ref
