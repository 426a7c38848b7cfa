// `openclip quantize`: static int8 activation scales (model/int8_scales.h) measured with the
// fp32 model. Each calibration image and caption is encoded in fp32 while an ActRanges scope
// records the range of every GEMM input that int8 quantizes (model/act_ranges.h): max|x|, or a
// percentile of |x| (values above it clip to +-127); the scale is range / 127. The max is the
// default: on the models measured it was as close to fp32 or closer (docs/BENCHMARKS.md).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/inference.h"
#include "model/int8_scales.h"

namespace oc {

struct CalibrationReport {
  Int8Scales scales;
  int64_t unreadable = 0;   // image files that could not be decoded (skipped)
  std::string first_error;  // the first of them, "path: why"
};

// `model` loaded with fp32 (an error otherwise, and for an image tower without an int8 path,
// naming its family). Unreadable images are counted and skipped; no readable image, no
// caption, or a GEMM that saw only zeros is an error.
// percentile in (0, 100]: 100 = max|x|.
CalibrationReport calibrate_int8(InferenceModel& model, std::span<const std::string> images,
                                 std::span<const std::string> captions, double percentile = 100.0);

}  // namespace oc
