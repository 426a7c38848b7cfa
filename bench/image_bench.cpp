// Image pipeline speed, one thread: JPEG decode, and decode + RandomResizedCrop(224,
// scale (0.9, 1.0), bicubic) + ToTensor/Normalize as the train loader runs it, on 256x256
// and 640x480 JPEGs made here with our encoder (quality 90). The PIL+torchvision number
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

BENCHMARK(BM_JpegDecode)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeRandomResizedCropNormalize)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RandomResizedCropNormalize)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DecodeEvalTransform)->Args({256, 256})->Args({640, 480})->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace oc
