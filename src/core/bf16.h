// bfloat16 <-> float conversions (round to nearest even, NaN kept quiet), as PyTorch does.
#pragma once
#include <cstdint>
#include <cstring>
#include <cstddef>

namespace oc {

struct bf16 {
  uint16_t bits;
};

inline bf16 to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return bf16{uint16_t((u >> 16) | 0x40)};  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return bf16{uint16_t(u >> 16)};
}

inline float to_f32(bf16 h) {
  uint32_t u = uint32_t(h.bits) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// Rounds a float to the nearest bf16 value, kept in float: what a bf16 matmul input sees.
inline float round_bf16(float f) { return to_f32(to_bf16(f)); }

// dst[i] = round_bf16(src[i]) for all i (src == dst allowed).
void round_to_bf16(const float* src, float* dst, size_t n);

}  // namespace oc
