// SigLIP's sigmoid loss block. The B x M logits are small (one rank's batch against one
// block of texts), so one pass over them computes logits, loss and d logits in place, and
// two GEMMs carry the gradient to the features.
#include "ops/cpu/loss.h"
#include "ops/cpu/cpu_backend.h"

#include <cmath>
#include <vector>

#include "ops/cpu/gemm.h"

namespace oc::ops {
namespace {
// log(sigmoid(x)) = -softplus(-x), stable for any x.
template <typename T>
T log_sigmoid(T x) {
  return x >= 0 ? -std::log1p(std::exp(-x)) : x - std::log1p(std::exp(x));
}
template <typename T>
T sigmoid(T x) {
  return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
}
}  // namespace

template <typename T>
double siglip_loss_forward_backward(T* dimg, T* dtxt, T* dscale_log, T* dbias, const T* img, const T* txt, T scale,
                                    T bias, int64_t B, int64_t M, int64_t E, bool positives) {
  // dots[i,j] = img_i . txt_j, then turned into d loss / d logits.
  std::vector<T> g(size_t(B * M));
  gemm<T>(false, true, B, M, E, 1.0f, img, E, txt, E, 0.0f, g.data(), M);
  double loss = 0, d_scale = 0, d_bias = 0;
  const double invB = 1.0 / double(B);
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 0; j < M; ++j) {
      T& v = g[size_t(i * M + j)];
      const T dot = v;
      const T label = positives && i == j ? T(1) : T(-1);
      const T z = label * (scale * dot + bias);
      loss -= double(log_sigmoid(z));
      // d(-logsigmoid(z))/d logit = -label * sigmoid(-z), over B.
      const T dl = T(-double(label) * double(sigmoid(-z)) * invB);
      d_scale += double(dl) * double(dot);
      d_bias += double(dl);
      v = dl * scale;  // d loss / d dots
    }
  gemm<T>(false, false, B, E, M, 1.0f, g.data(), M, txt, E, 1.0f, dimg, E);  // dimg += G @ txt
  gemm<T>(true, false, M, E, B, 1.0f, g.data(), M, img, E, 0.0f, dtxt, E);   // dtxt = G^T @ img
  if (dscale_log) *dscale_log += T(d_scale * double(scale));                // d scale / d log = scale
  if (dbias) *dbias += T(d_bias);
  return loss * invB;
}

#define OC_INSTANTIATE(T)                                                                                   \
  template double siglip_loss_forward_backward<T>(T*, T*, T*, T*, const T*, const T*, T, T, int64_t, int64_t, \
                                                  int64_t, bool);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
double run(const SiglipLossArgs& a) {
  return ops::siglip_loss_forward_backward(a.dimg, a.dtxt, a.dscale_log.get(), a.dbias.get(), a.img, a.txt, a.scale,
                                           a.bias, a.B, a.M, a.E, a.positives);
}
}  // namespace oc::ops::cpu
