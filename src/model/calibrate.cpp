#include "model/calibrate.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/log.h"
#include "image/codec.h"
#include "model/act_ranges.h"

namespace oc {

namespace {
// Encodes the readable images in chunks of the model's batch; returns how many were read.
int64_t encode_images(InferenceModel& m, std::span<const std::string> images, CalibrationReport* r) {
  const size_t px = 3 * size_t(m.image_size()) * size_t(m.image_size()), B = size_t(m.max_batch());
  std::vector<float> pixels, out(B * size_t(m.embed_dim()));
  int64_t read = 0;
  size_t n = 0;
  auto flush = [&] {
    m.encode_pixels(pixels.data(), int64_t(n), out.data());
    read += int64_t(n), n = 0;
  };
  pixels.resize(B * px);
  for (const std::string& path : images) {
    auto img = decode_source_image_file(path);
    if (!img) {
      if (r->unreadable++ == 0) r->first_error = path + ": " + img.error();
      log::warn("calibration image {} skipped: {}", path, img.error());
      continue;
    }
    m.preprocess(img.value(), {pixels.data() + n * px, px});
    if (++n == B) flush();
  }
  if (n > 0) flush();
  return read;
}

// The name of the parameter at `w` in the model's arena.
std::string param_name(const Clip& clip, const float* w) {
  for (const ParamInfo& pi : clip.table().params)
    if (clip.params() + pi.offset == w) return pi.name;
  OC_FAIL("calibration: a GEMM weight at offset {} is not a parameter", w - clip.params());
}
}  // namespace

CalibrationReport calibrate_int8(InferenceModel& model, std::span<const std::string> images,
                                 std::span<const std::string> captions, double percentile) {
  Clip& clip = model.clip();
  if (const std::string why = clip.vision_tower().int8_refusal(); !why.empty())
    OC_USER_ERROR("quantize: {} {}", clip.cfg().name, why);
  OC_CHECK(clip.precision() == Precision::Fp32, "calibration runs the fp32 model, not {}",
           precision_name(clip.precision()));
  if (captions.empty()) OC_USER_ERROR("quantize: no calibration captions");
  if (!(percentile > 0.0 && percentile <= 100.0))
    OC_USER_ERROR("quantize: percentile {} is not in (0, 100]", percentile);
  CalibrationReport r;
  ActRanges ranges(1.0 - percentile / 100.0);
  {
    ActRanges::Scope scope(ranges);
    r.scales.calib_images = encode_images(model, images, &r);
    if (r.scales.calib_images == 0)
      OC_USER_ERROR("quantize: no readable calibration image among {} ({} unreadable{}{})", images.size(), r.unreadable,
                    r.first_error.empty() ? "" : ", first: ", r.first_error);
    for (size_t i = 0; i < captions.size(); i += size_t(model.max_batch())) {
      const size_t n = std::min(captions.size() - i, size_t(model.max_batch()));
      model.encode_texts(captions.subspan(i, n));
    }
    r.scales.calib_texts = int64_t(captions.size());
  }
  r.scales.model = clip.cfg().name;
  r.scales.range = percentile < 100.0 ? fmt::format("p{}", percentile) : "max";
  for (const auto& [w, amax] : ranges.ranges()) {
    const std::string name = int8_scale_name(param_name(clip, w));
    if (!(amax > 0.0f)) OC_USER_ERROR("quantize: the input of {} was 0 on every calibration sample", name);
    if (!std::isfinite(amax)) OC_USER_ERROR("quantize: the input of {} overflowed (max |x| = {})", name, amax);
    r.scales.scale[name] = amax / 127.0f;
  }
  return r;
}

}  // namespace oc
