// Little-endian integer loads and appends shared by the binary format readers/writers
// (zip, pickle, safetensors, TFRecord). memcpy keeps them alignment-safe; the library
// assumes a little-endian host (x86-64, aarch64), checked once at compile time.
#pragma once
#include <bit>
#include <cstdint>
#include <cstring>
#include <vector>

namespace oc::io {

static_assert(std::endian::native == std::endian::little, "openclip assumes a little-endian host");

template <class T>
inline T load_le(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <class T>
inline void append_le(std::vector<uint8_t>& out, T v) {
  uint8_t b[sizeof v];
  std::memcpy(b, &v, sizeof v);
  out.insert(out.end(), b, b + sizeof v);
}

inline void append_bytes(std::vector<uint8_t>& out, const void* p, size_t n) {
  const auto* b = static_cast<const uint8_t*>(p);
  out.insert(out.end(), b, b + n);
}

}  // namespace oc::io
