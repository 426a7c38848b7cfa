// F.normalize and CLIP's symmetric InfoNCE loss with its gradients, fused: the two logit
// matrices live in scratch, are turned into dlogits in place, and four gemms carry the
// gradients back to the features. Per-row partial sums are added in row order, so the loss
// and d/dlogit_scale are deterministic for any thread count.
#include "ops/cpu/loss.h"
#include "ops/cpu/cpu_backend.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "ops/cpu/scratch.h"
#include "ops/cpu/gemm.h"

namespace oc::ops {
namespace {

constexpr double kNormEps = 1e-12;  // F.normalize's default

// Turns the raw similarity rows L[Nl, Na] (without the scale) into dloss/dL, where the loss of
// row r is (logsumexp(scale * L[r]) - scale * L[r, r + offset]) / (2 Nl). Writes the row's
// loss term and its d/dlogit_scale term (sum_j dloss/dz_j * z_j) into row_loss/row_dscale.
template <typename T>
void ce_rows(T* L, double* row_loss, double* row_dscale, int64_t Nl, int64_t Na, int64_t offset, T scale) {
  const double w = 1.0 / double(2 * Nl);
#pragma omp parallel for schedule(static) if (Nl * Na > (1 << 14))
  for (int64_t r = 0; r < Nl; ++r) {
    T* row = L + r * Na;
    const int64_t label = r + offset;
    T mx = -INFINITY;
    for (int64_t j = 0; j < Na; ++j) {
      row[j] *= scale;  // now the logit z_j
      mx = std::max(mx, row[j]);
    }
    double sum = 0;
    for (int64_t j = 0; j < Na; ++j) sum += std::exp(double(row[j] - mx));
    const double lse = double(mx) + std::log(sum);
    row_loss[r] = (lse - double(row[label])) * w;
    double ds = 0;
    for (int64_t j = 0; j < Na; ++j) {
      const double z = row[j];
      const double g = (std::exp(z - lse) - (j == label ? 1.0 : 0.0)) * w;
      ds += g * z;
      row[j] = T(g * double(scale));  // dloss/dL = dloss/dz * scale, ready for the gemms
    }
    row_dscale[r] = ds;
  }
}

}  // namespace

template <typename T>
void l2norm_forward(T* out, T* norm, const T* inp, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static) if (N * C > (1 << 14))
  for (int64_t i = 0; i < N; ++i) {
    const T* x = inp + i * C;
    T ss = 0;
#pragma omp simd reduction(+ : ss)
    for (int64_t c = 0; c < C; ++c) ss += x[c] * x[c];
    const T n = std::sqrt(ss);
    const T d = std::max(n, T(kNormEps));
    norm[i] = n;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) out[i * C + c] = x[c] / d;
  }
}

template <typename T>
void l2norm_backward(T* dinp, const T* dout, const T* out, const T* norm, int64_t N, int64_t C) {
#pragma omp parallel for schedule(static) if (N * C > (1 << 14))
  for (int64_t i = 0; i < N; ++i) {
    const T* g = dout + i * C;
    const T* y = out + i * C;
    T* dx = dinp + i * C;
    if (norm[i] > T(kNormEps)) {
      // y = x / |x|: dx = (g - y (y . g)) / |x|
      T dot = 0;
#pragma omp simd reduction(+ : dot)
      for (int64_t c = 0; c < C; ++c) dot += y[c] * g[c];
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dx[c] = (g[c] - y[c] * dot) / norm[i];
    } else {
      for (int64_t c = 0; c < C; ++c) dx[c] = g[c] / T(kNormEps);  // y = x / eps is linear
    }
  }
}

template <typename T>
double clip_loss_forward_backward(T* dimg, T* dtxt, T* dimg_all, T* dtxt_all, T* dscale_log, T* scratch,
                                  const T* img, const T* txt, const T* img_all, const T* txt_all, T scale,
                                  int64_t Nl, int64_t Na, int64_t E, int64_t label_offset) {
  OC_CHECK(Nl > 0 && label_offset >= 0 && label_offset + Nl <= Na,
           "clip_loss: local rows [{}, {}) not inside the {} gathered columns", label_offset, label_offset + Nl, Na);
  T* Li = scratch;            // img rows against all texts
  T* Lt = scratch + Nl * Na;  // txt rows against all images
  gemm<T>(false, true, Nl, Na, E, 1.0f, img, E, txt_all, E, 0.0f, Li, Na);
  gemm<T>(false, true, Nl, Na, E, 1.0f, txt, E, img_all, E, 0.0f, Lt, Na);

  double* parts = cpu::thread_scratch<double>(cpu::Scratch::Reduce, size_t(4 * Nl));
  double *loss_i = parts, *ds_i = parts + Nl, *loss_t = parts + 2 * Nl, *ds_t = parts + 3 * Nl;
  ce_rows(Li, loss_i, ds_i, Nl, Na, label_offset, scale);
  ce_rows(Lt, loss_t, ds_t, Nl, Na, label_offset, scale);
  double loss = 0, dscale = 0;
  for (int64_t r = 0; r < Nl; ++r) loss += loss_i[r];
  for (int64_t r = 0; r < Nl; ++r) loss += loss_t[r];
  for (int64_t r = 0; r < Nl; ++r) dscale += ds_i[r];
  for (int64_t r = 0; r < Nl; ++r) dscale += ds_t[r];

  gemm<T>(false, false, Nl, E, Na, 1.0f, Li, Na, txt_all, E, 0.0f, dimg, E);
  gemm<T>(false, false, Nl, E, Na, 1.0f, Lt, Na, img_all, E, 0.0f, dtxt, E);
  if (dtxt_all) gemm<T>(true, false, Na, E, Nl, 1.0f, Li, Na, img, E, 0.0f, dtxt_all, E);
  if (dimg_all) gemm<T>(true, false, Na, E, Nl, 1.0f, Lt, Na, txt, E, 0.0f, dimg_all, E);
  if (dscale_log) *dscale_log += T(dscale);
  return loss;
}

#define OC_INSTANTIATE(T)                                                                                         \
  template void l2norm_forward<T>(T*, T*, const T*, int64_t, int64_t);                                           \
  template void l2norm_backward<T>(T*, const T*, const T*, const T*, int64_t, int64_t);                          \
  template double clip_loss_forward_backward<T>(T*, T*, T*, T*, T*, T*, const T*, const T*, const T*, const T*, T, \
                                                int64_t, int64_t, int64_t, int64_t);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const L2NormForwardArgs& a) { ops::l2norm_forward(a.out, a.norm, a.inp, a.N, a.C); }
void run(const L2NormBackwardArgs& a) { ops::l2norm_backward(a.dinp, a.dout, a.out, a.norm, a.N, a.C); }
double run(const ClipLossArgs& a) {
  return ops::clip_loss_forward_backward(a.dimg, a.dtxt, a.dimg_all, a.dtxt_all, a.dscale_log.get(), a.scratch, a.img,
                                         a.txt, a.img_all, a.txt_all, a.scale, a.Nl, a.Na, a.E, a.label_offset);
}
}  // namespace oc::ops::cpu
