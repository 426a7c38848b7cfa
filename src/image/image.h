// Decoded images: 8-bit RGB, interleaved (HWC), what PIL's convert('RGB') gives.
#pragma once
#include <cstdint>
#include <vector>

namespace oc {

struct ImageU8 {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // height * width * 3
  uint8_t* row(int y) { return rgb.data() + size_t(y) * width * 3; }
  const uint8_t* row(int y) const { return rgb.data() + size_t(y) * width * 3; }
};

}  // namespace oc
