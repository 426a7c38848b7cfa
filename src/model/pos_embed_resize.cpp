#include "model/pos_embed_resize.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"

namespace oc {
namespace {

// torch's antialiased interpolation weights along one axis (UpSampleKernel.cpp
// _compute_indices_min_size_weights_aa with HelperInterpCubic::aa_filter, a = -0.5).
struct Taps {
  std::vector<int> start;
  std::vector<std::vector<double>> w;
};

double cubic_aa(double x) {
  constexpr double a = -0.5;
  x = std::fabs(x);
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

Taps aa_bicubic_taps(int in, int out) {
  const double scale = double(in) / out;
  const double support = 2.0 * std::max(scale, 1.0);
  const double invscale = scale >= 1 ? 1 / scale : 1;
  Taps t;
  for (int i = 0; i < out; ++i) {
    const double center = scale * (i + 0.5);
    const int xmin = std::max(int(center - support + 0.5), 0);
    const int xmax = std::min(int(center + support + 0.5), in);
    std::vector<double> w;
    double total = 0;
    for (int j = xmin; j < xmax; ++j) total += w.emplace_back(cubic_aa((j - center + 0.5) * invscale));
    if (total != 0)
      for (double& x : w) x /= total;
    t.start.push_back(xmin);
    t.w.push_back(std::move(w));
  }
  return t;
}

}  // namespace

HostTensor resize_pos_embed(const HostTensor& old, int grid, const char* name) {
  OC_CHECK(old.shape.size() == 2 && old.shape[0] >= 1 && grid > 0, "{}: shape {}", name, shape_str(old.shape));
  const int64_t d = old.shape[1];
  const int g = int(std::sqrt(double(old.shape[0] - 1)));  // OpenCLIP: int(math.sqrt(len(pos_emb_img)))
  if (int64_t(g) * g + 1 != old.shape[0])
    OC_USER_ERROR("{} has {} rows: not a class token + a square grid, which OpenCLIP's resize_pos_embed needs", name,
                  old.shape[0]);
  const std::vector<float> v = old.to_f32();
  const Taps t = aa_bicubic_taps(g, grid);
  HostTensor out(DType::F32, {int64_t(grid) * grid + 1, d});
  float* o = out.f32();
  std::copy(v.begin(), v.begin() + d, o);  // the class token
  // Rows first (H), then columns (W), in double, one channel at a time.
  std::vector<double> rows(size_t(grid) * g * d, 0.0);
  for (int y = 0; y < grid; ++y)
    for (size_t k = 0; k < t.w[y].size(); ++k)
      for (int x = 0; x < g; ++x)
        for (int64_t c = 0; c < d; ++c)
          rows[(size_t(y) * g + x) * d + c] += t.w[y][k] * v[size_t(1 + int64_t(t.start[y] + k) * g + x) * d + c];
  for (int y = 0; y < grid; ++y)
    for (int x = 0; x < grid; ++x)
      for (int64_t c = 0; c < d; ++c) {
        double s = 0;
        for (size_t k = 0; k < t.w[x].size(); ++k) s += t.w[x][k] * rows[(size_t(y) * g + t.start[x] + k) * d + c];
        o[size_t(1 + int64_t(y) * grid + x) * d + c] = float(s);
      }
  return out;
}

HostTensor resize_text_pos_embed(const HostTensor& old, int num_pos) {
  OC_CHECK(old.shape.size() == 2 && old.shape[0] >= 1 && num_pos > 0, "text pos embed {}", shape_str(old.shape));
  const int64_t in = old.shape[0], w = old.shape[1];
  const std::vector<float> v = old.to_f32();
  HostTensor out(DType::F32, {num_pos, w});
  // torch's linear, align_corners=False: src = scale * (i + 0.5) - 0.5, clamped at 0.
  const double scale = double(in) / num_pos;
  for (int i = 0; i < num_pos; ++i) {
    const double src = std::max(scale * (i + 0.5) - 0.5, 0.0);
    const int64_t i0 = std::min(int64_t(src), in - 1), i1 = std::min(i0 + 1, in - 1);
    const double l1 = src - double(i0), l0 = 1 - l1;
    for (int64_t c = 0; c < w; ++c)
      out.f32()[i * w + c] = float(l0 * v[size_t(i0 * w + c)] + l1 * v[size_t(i1 * w + c)]);
  }
  return out;
}

}  // namespace oc
