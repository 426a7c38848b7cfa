// Image pipeline speed, one thread: JPEG decode, and decode + RandomResizedCrop(224,
// scale (0.9, 1.0), bicubic) + ToTensor/Normalize as the train loader runs it, on 256x256
// and 640x480 JPEGs made here with our encoder (quality 90); and the eval transform on
// 640x480 images in the other PIL modes (resized in their mode, then converted to RGB). The PIL+torchvision number
// for the same files: OC_IMAGE_BENCH_DUMP=DIR writes them, then
//   /usr/bin/python3 tests/reference/image_ref.py bench DIR
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "../tests/image/test_images.h"
#include "core/fs.h"
#include "core/rng.h"
#include "image/codec.h"
#include "image/transform.h"

namespace oc {
namespace {

const std::vector<uint8_t>& jpeg_of(int w, int h) {
  static std::vector<uint8_t> cache[2];
  std::vector<uint8_t>& v = cache[w == 256 ? 0 : 1];
  if (v.empty()) {
    auto r = encode_image(testing_images::make_rgb(w, h), ImageFormat::Jpeg, 90);
    if (!r.ok()) std::abort();
    v = std::move(r).value();
    if (const char* dir = std::getenv("OC_IMAGE_BENCH_DUMP")) {
      fs::make_dirs(dir);
      fs::write_atomic(fs::join(dir, "bench_" + std::to_string(w) + "x" + std::to_string(h) + ".jpg"), v);
    }
  }
  return v;
}

void BM_JpegDecode(benchmark::State& st) {
  const auto& bytes = jpeg_of(int(st.range(0)), int(st.range(1)));
  for (auto _ : st) {
    auto img = decode_image(bytes);
    benchmark::DoNotOptimize(img.ok());
  }
  st.SetItemsProcessed(st.iterations());
}

void BM_DecodeRandomResizedCropNormalize(benchmark::State& st) {
  const auto& bytes = jpeg_of(int(st.range(0)), int(st.range(1)));
  PreprocessCfg cfg;  // 224, scale (0.9, 1.0), OpenAI mean/std
  std::vector<float> out(3 * 224 * 224);
  Rng rng(0);
  for (auto _ : st) {
    auto img = decode_image(bytes);
    preprocess_train(*img, cfg, rng, out);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}

void BM_RandomResizedCropNormalize(benchmark::State& st) {
  ImageU8 img = *decode_image(jpeg_of(int(st.range(0)), int(st.range(1))));
  PreprocessCfg cfg;
  std::vector<float> out(3 * 224 * 224);
  Rng rng(0);
  for (auto _ : st) {
    preprocess_train(img, cfg, rng, out);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}

void BM_DecodeEvalTransform(benchmark::State& st) {
  const auto& bytes = jpeg_of(int(st.range(0)), int(st.range(1)));
  PreprocessCfg cfg;
  std::vector<float> out(3 * 224 * 224);
  for (auto _ : st) {
    auto img = decode_image(bytes);
    preprocess_eval(*img, cfg, out);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetItemsProcessed(st.iterations());
}

// Eval transform (resize 224 bicubic + center crop + RGB + normalize) on a decoded 640x480
// image of mode range(0): 0 L, 1 LA, 2 RGB, 3 RGBA, 4 P, 5 1, 6 CMYK (PixelMode order).
void BM_EvalTransformMode(benchmark::State& st) {
  const PixelMode mode = PixelMode(st.range(0));
  const ImageU8 rgb = testing_images::make_rgb(640, 480);
  SourceImage img;
  img.mode = mode;
  img.width = 640;
  img.height = 480;
  const int c = mode_channels(mode);
  img.pixels.resize(size_t(640) * 480 * c);
  for (size_t i = 0; i < size_t(640) * 480; ++i)
    for (int k = 0; k < c; ++k) img.pixels[i * c + k] = rgb.rgb[i * 3 + (k % 3)] ^ uint8_t(k == 3 ? i : 0);
  if (mode == PixelMode::P) img.palette = pil_palette(nullptr, 0);
  PreprocessCfg cfg;
  std::vector<float> out(3 * 224 * 224);
  for (auto _ : st) {
    preprocess_eval(img, cfg, out);
    benchmark::DoNotOptimize(out.data());
  }
  st.SetLabel(mode_name(mode));
  st.SetItemsProcessed(st.iterations());
}

BENCHMARK(BM_JpegDecode)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeRandomResizedCropNormalize)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RandomResizedCropNormalize)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeEvalTransform)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_EvalTransformMode)->DenseRange(0, 6)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace oc
