// Reference L2 normalization and the two contrastive losses, all in double.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

namespace {
constexpr double kNormEps = 1e-12;  // F.normalize's default

// a[i] . b[j] over E, in double.
double dot_rows(const float* a, const float* b, int64_t E) {
  double s = 0;
  for (int64_t e = 0; e < E; ++e) s += double(a[e]) * b[e];
  return s;
}
}  // namespace

void run(const L2NormForwardArgs& a) {
  const auto& [out, norm, inp, N, C] = a;
  for (int64_t i = 0; i < N; ++i) {
    const double n = std::sqrt(dot_rows(inp + i * C, inp + i * C, C));
    norm[i] = float(n);
    for (int64_t c = 0; c < C; ++c) out[i * C + c] = float(inp[i * C + c] / std::max(n, kNormEps));
  }
}

void run(const L2NormBackwardArgs& a) {
  const auto& [dinp, dout, out, norm, N, C] = a;
  for (int64_t i = 0; i < N; ++i) {
    const float* g = dout + i * C;
    const float* y = out + i * C;
    if (norm[i] > kNormEps) {
      const double yg = dot_rows(y, g, C);  // y = x / |x|: dx = (g - y (y . g)) / |x|
      for (int64_t c = 0; c < C; ++c) dinp[i * C + c] = float((g[c] - y[c] * yg) / norm[i]);
    } else {
      for (int64_t c = 0; c < C; ++c) dinp[i * C + c] = float(g[c] / kNormEps);  // y = x / eps is linear
    }
  }
}

double run(const ClipLossArgs& a) {
  // Plain locals, not a structured binding: the lambdas below capture them (clang 14, the
  // sanitizer build's compiler, cannot capture structured bindings).
  float *dimg = a.dimg, *dtxt = a.dtxt, *dimg_all = a.dimg_all, *dtxt_all = a.dtxt_all;
  auto dscale_log = a.dscale_log;
  float* scratch = a.scratch;
  const float *img = a.img, *txt = a.txt, *img_all = a.img_all, *txt_all = a.txt_all;
  const float scale = a.scale;
  const int64_t Nl = a.Nl, Na = a.Na, E = a.E, label_offset = a.label_offset;
  OC_CHECK(Nl > 0 && label_offset >= 0 && label_offset + Nl <= Na,
           "clip_loss: local rows [{}, {}) not inside the {} gathered columns", label_offset, label_offset + Nl, Na);
  const double w = 1.0 / double(2 * Nl);
  // G[r, j] = d loss / d (rows[r] . cols[j]) for one direction; loss and d/dlogit_scale summed.
  double loss = 0, dscale = 0;
  auto direction = [&](const float* rows, const float* cols, std::vector<double>& G) {
    G.assign(size_t(Nl * Na), 0.0);
    for (int64_t r = 0; r < Nl; ++r) {
      std::vector<double> z(static_cast<size_t>(Na));
      double mx = -INFINITY;
      for (int64_t j = 0; j < Na; ++j) {
        z[size_t(j)] = double(scale) * double(float(dot_rows(rows + r * E, cols + j * E, E)));
        mx = std::max(mx, z[size_t(j)]);
      }
      double sum = 0;
      for (int64_t j = 0; j < Na; ++j) sum += std::exp(z[size_t(j)] - mx);
      const double lse = mx + std::log(sum);
      const int64_t label = r + label_offset;
      loss += (lse - z[size_t(label)]) * w;
      for (int64_t j = 0; j < Na; ++j) {
        const double g = (std::exp(z[size_t(j)] - lse) - (j == label ? 1.0 : 0.0)) * w;
        dscale += g * z[size_t(j)];
        G[size_t(r * Na + j)] = g * scale;
      }
    }
  };
  std::vector<double> Gi, Gt;
  direction(img, txt_all, Gi);  // image rows against all texts
  direction(txt, img_all, Gt);  // text rows against all images
  for (int64_t r = 0; r < Nl; ++r)
    for (int64_t e = 0; e < E; ++e) {
      double di = 0, dt = 0;
      for (int64_t j = 0; j < Na; ++j) {
        di += Gi[size_t(r * Na + j)] * txt_all[j * E + e];
        dt += Gt[size_t(r * Na + j)] * img_all[j * E + e];
      }
      dimg[r * E + e] = float(di), dtxt[r * E + e] = float(dt);
    }
  for (int64_t j = 0; j < Na; ++j)
    for (int64_t e = 0; e < E; ++e) {
      double dta = 0, dia = 0;
      for (int64_t r = 0; r < Nl; ++r) {
        dta += Gi[size_t(r * Na + j)] * img[r * E + e];
        dia += Gt[size_t(r * Na + j)] * txt[r * E + e];
      }
      if (dtxt_all) dtxt_all[j * E + e] = float(dta);
      if (dimg_all) dimg_all[j * E + e] = float(dia);
    }
  if (dscale_log) *dscale_log = float(*dscale_log + dscale);
  return loss;
}

double run(const SiglipLossArgs& a) {
  const auto& [dimg, dtxt, dscale_log, dbias, img, txt, scale, bias, B, M, E, positives] = a;
  std::vector<double> G(size_t(B * M));  // d loss / d (img_i . txt_j)
  double loss = 0, d_scale = 0, d_bias = 0;
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 0; j < M; ++j) {
      const double dot = double(float(dot_rows(img + i * E, txt + j * E, E)));
      const double label = positives && i == j ? 1.0 : -1.0;
      const double z = label * (double(scale) * dot + double(bias));
      loss += z >= 0 ? std::log1p(std::exp(-z)) : -z + std::log1p(std::exp(z));  // -log(sigmoid(z)), stable
      const double dl = -label / (1.0 + std::exp(z)) / double(B);                // d/dlogit: -label * sigmoid(-z) / B
      d_scale += dl * dot;
      d_bias += dl;
      G[size_t(i * M + j)] = dl * scale;
    }
  for (int64_t i = 0; i < B; ++i)
    for (int64_t e = 0; e < E; ++e) {
      double s = 0;
      for (int64_t j = 0; j < M; ++j) s += G[size_t(i * M + j)] * txt[j * E + e];
      dimg[i * E + e] = float(dimg[i * E + e] + s);  // accumulates over text blocks
    }
  for (int64_t j = 0; j < M; ++j)
    for (int64_t e = 0; e < E; ++e) {
      double s = 0;
      for (int64_t i = 0; i < B; ++i) s += G[size_t(i * M + j)] * img[i * E + e];
      dtxt[j * E + e] = float(s);
    }
  if (dscale_log) *dscale_log = float(*dscale_log + d_scale * scale);  // d scale / d log(scale) = scale
  if (dbias) *dbias = float(*dbias + d_bias);
  return loss / double(B);
}

}  // namespace oc::ops::ref
