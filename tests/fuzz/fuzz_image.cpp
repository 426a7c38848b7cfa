// libFuzzer target for image decoding and the transforms behind it. Any input must give an
// image or an error, never a crash, leak or overflow. Build: -DOPENCLIP_FUZZ=ON with clang;
// run e.g. ./fuzz_image -max_len=65536 -rss_limit_mb=2048 corpus/
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "image/codec.h"
#include "image/transform.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace oc;
  DecodeOptions opt;
  // Keeps each run's memory small under ASan; the limit logic itself is the same.
  opt.max_pixels = 4'000'000;
  // The last byte picks DCT-scaled JPEG decoding, so both paths get fuzzed.
  if (size > 0 && (data[size - 1] & 1)) opt.min_shortest_side = 16 + data[size - 1] % 64;
  auto img = decode_image(std::span<const uint8_t>(data, size), opt);
  if (!img.ok()) return 0;
  if (img->rgb.size() != size_t(img->width) * img->height * 3) __builtin_trap();
  // Exercise the resampler on whatever size came out (tiny, huge aspect ratios...).
  PreprocessCfg cfg;
  cfg.size = 24;
  std::vector<float> out(3 * 24 * 24);
  Rng rng(size);
  preprocess_train(*img, cfg, rng, out);
  cfg.resize_mode = static_cast<ResizeMode>(size % 3);
  cfg.interpolation = size % 2 ? Interp::Bilinear : Interp::Bicubic;
  preprocess_eval(*img, cfg, out);
  return 0;
}
