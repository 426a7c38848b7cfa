// Row conversions between float and bf16 for the CPU kernels, written branch-free so the
// compiler vectorizes them (round to nearest even, NaN kept quiet: the same values as
// core/bf16.h's to_bf16).
#pragma once
#include <cstdint>
#include <cstring>

#include "core/bf16.h"

namespace oc::ops::cpu {

inline uint16_t bf16_bits(uint32_t u) {
  const uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
  const uint32_t quiet_nan = (u | 0x00400000u) >> 16;
  return uint16_t((u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : rounded);
}

// dst[0..n) = bf16(src[0..n)).
inline void to_bf16_row(bf16* dst, const float* src, int64_t n) {
  const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
  uint16_t* d = reinterpret_cast<uint16_t*>(dst);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = bf16_bits(s[i]);
}

// dst[0..n) = float(src[0..n)) (exact).
inline void widen_row(float* dst, const bf16* src, int64_t n) {
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = uint32_t(s[i]) << 16;
}

// dst[i] = the bf16 value of src[i], kept in float (src == dst allowed).
inline void round_row(float* dst, const float* src, int64_t n) {
  const uint32_t* s = reinterpret_cast<const uint32_t*>(src);
  uint32_t* d = reinterpret_cast<uint32_t*>(dst);
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) d[i] = uint32_t(bf16_bits(s[i])) << 16;
}

}  // namespace oc::ops::cpu
