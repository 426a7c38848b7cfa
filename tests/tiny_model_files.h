// Files the index and serve tests share: a fresh folder with two test-tiny weight files
// (seeds 11 and 12, so "other weights" differ) and small noisy PNGs.
#pragma once
#include <string>
#include <vector>

#include "core/rng.h"
#include "image/codec.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/weights.h"
#include "test_util.h"

namespace oc::test {

inline std::vector<uint8_t> random_png(Rng& rng, int w, int h) {
  ImageU8 img;
  img.width = w, img.height = h;
  img.rgb.resize(size_t(w * h * 3));
  const uint8_t base[3] = {uint8_t(rng.below(256)), uint8_t(rng.below(256)), uint8_t(rng.below(256))};
  for (size_t i = 0; i < img.rgb.size(); ++i) img.rgb[i] = uint8_t(base[i % 3] + rng.below(40));
  return encode_image(img, ImageFormat::Png).value();
}

struct TinyModelFiles {
  std::string dir, weights, other_weights;
  std::vector<std::string> images;
};

// fresh_dir(name) with w.safetensors (seed 11) and other.safetensors (seed 12); no images yet.
inline TinyModelFiles make_tiny_model_files(const std::string& name) {
  TinyModelFiles f;
  f.dir = fresh_dir(name);
  f.weights = f.dir + "/w.safetensors";
  f.other_weights = f.dir + "/other.safetensors";
  for (int seed : {11, 12}) {
    Clip m(load_model_config("test-tiny"));
    m.init(uint64_t(seed));
    save_weights(m, seed == 11 ? f.weights : f.other_weights);
  }
  return f;
}

}  // namespace oc::test
