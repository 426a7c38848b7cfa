#include "data/synthetic.h"

#include <algorithm>
#include <cmath>

#include "core/rng.h"
#include "data/epoch.h"

namespace oc::data {
namespace {

struct Color {
  const char* name;
  uint8_t r, g, b;
};
constexpr Color kColors[] = {{"red", 220, 40, 40}, {"green", 40, 190, 60}, {"blue", 50, 80, 230},
                             {"yellow", 235, 215, 40}, {"purple", 150, 50, 180}};
constexpr const char* kShapes[] = {"square", "circle"};
constexpr int kNumColors = 5, kNumShapes = 2;

}  // namespace

const std::vector<std::string>& learnable_classnames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (int c = 0; c < kNumColors; ++c)
      for (int s = 0; s < kNumShapes; ++s) v.push_back(std::string(kColors[c].name) + " " + kShapes[s]);
    return v;
  }();
  return names;
}

SyntheticSample synthetic_sample(int64_t, int image_size) {
  SyntheticSample s;
  s.image.width = s.image.height = image_size;
  s.image.rgb.assign(size_t(image_size) * image_size * 3, 0);
  s.caption = "Dummy caption";
  return s;
}

SyntheticSample learnable_sample(int64_t index, int size) {
  Rng rng(mix_seed(uint64_t(index), 0x5eed));
  const int ncls = kNumColors * kNumShapes;
  SyntheticSample s;
  s.label = int64_t(rng.below(uint64_t(ncls)));
  const Color& col = kColors[s.label / kNumShapes];
  const bool circle = (s.label % kNumShapes) == 1;
  s.caption = std::string("a photo of a ") + learnable_classnames()[size_t(s.label)] + ".";
  ImageU8& im = s.image;
  im.width = im.height = size;
  im.rgb.resize(size_t(size) * size * 3);
  // Shape 40-70% of the image, anywhere inside it; background gray with noise; color
  // jittered by up to +-25 so the task needs the hue, not an exact value.
  const double half = size * (0.2 + 0.15 * rng.uniform());
  const double cx = half + rng.uniform() * (size - 2 * half), cy = half + rng.uniform() * (size - 2 * half);
  auto jitter = [&](int v) { return uint8_t(std::clamp(v + int(rng.below(51)) - 25, 0, 255)); };
  const uint8_t cr = jitter(col.r), cg = jitter(col.g), cb = jitter(col.b);
  const int bg = 90 + int(rng.below(80));
  for (int y = 0; y < size; ++y) {
    for (int x = 0; x < size; ++x) {
      double dx = x + 0.5 - cx, dy = y + 0.5 - cy;
      bool inside = circle ? dx * dx + dy * dy <= half * half : std::fabs(dx) <= half && std::fabs(dy) <= half;
      uint8_t* p = im.row(y) + 3 * x;
      if (inside) {
        p[0] = cr, p[1] = cg, p[2] = cb;
      } else {
        uint8_t v = uint8_t(std::clamp(bg + int(rng.below(31)) - 15, 0, 255));
        p[0] = p[1] = p[2] = v;
      }
    }
  }
  return s;
}

}  // namespace oc::data
