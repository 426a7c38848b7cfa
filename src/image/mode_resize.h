// PIL's Image.resize in the image's own mode followed by convert('RGB'): the step OpenCLIP's
// transforms take (Resize/CenterCrop or RandomResizedCrop, then _convert_to_rgb).
//   P, 1      always NEAREST, whatever filter is asked (PIL's Image.resize)
//   RGBA, LA  premultiplied: convert to RGBa/La, resample, convert back (non-NEAREST filters)
//   L, CMYK   resampled in their own channels (1 and 4), then converted
//   RGB       the fast RGB resampler, nothing else
// and no resampling at all when the size does not change (PIL returns a copy).
#pragma once
#include <array>
#include <cstdint>

#include "image/source.h"
#include "image/transform.h"

namespace oc {

// Writes the window [wx, wx+ww) x [wy, wy+wh) of convert('RGB') of src resized to out_w x
// out_h, as ww*wh*3 bytes. Costs only the window (see resample_window).
void resize_window_rgb(const SourceView& src, int64_t out_w, int64_t out_h, Interp interp, int64_t wx, int64_t wy,
                       int ww, int wh, uint8_t* rgb);

// The RGB colour of a pixel whose every band is `fill` in `mode` (what torchvision's pad
// with an int fill writes, e.g. palette entry `fill` for P), after convert('RGB').
std::array<uint8_t, 3> fill_rgb(const SourceView& src, int fill);

}  // namespace oc
