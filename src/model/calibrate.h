// `openclip quantize`: static int8 activation scales (model/int8_scales.h) measured with the
// fp32 model. Each calibration image and caption is encoded in fp32 while an ActRanges scope
// records max|x| at the input of every GEMM that int8 quantizes (model/act_ranges.h); the
// scale is max|x| / 127 (measured against a 99.99th percentile: docs/BENCHMARKS.md).
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
CalibrationReport calibrate_int8(InferenceModel& model, std::span<const std::string> images,
                                 std::span<const std::string> captions);

}  // namespace oc
