#include "core/tensor.h"

#include <cstring>

#include "core/bf16.h"
#include "core/check.h"

namespace oc {

size_t dtype_size(DType t) {
  switch (t) {
    case DType::F64: case DType::I64: return 8;
    case DType::F32: case DType::I32: return 4;
    case DType::BF16: case DType::F16: case DType::I16: return 2;
    case DType::I8: case DType::U8: case DType::Bool: return 1;
  }
  return 0;
}

namespace {
constexpr std::pair<DType, std::string_view> kNames[] = {
    {DType::F64, "F64"}, {DType::F32, "F32"}, {DType::BF16, "BF16"}, {DType::F16, "F16"},
    {DType::I64, "I64"}, {DType::I32, "I32"}, {DType::I16, "I16"}, {DType::I8, "I8"},
    {DType::U8, "U8"},   {DType::Bool, "BOOL"}};

float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff, u;
  if (exp == 0) {
    if (man == 0) {
      u = sign;
    } else {  // subnormal: renormalise
      exp = 127 - 15 + 1;
      while (!(man & 0x400)) { man <<= 1; --exp; }
      u = sign | (exp << 23) | ((man & 0x3ff) << 13);
    }
  } else if (exp == 31) {
    u = sign | 0x7f800000u | (man << 13);
  } else {
    u = sign | ((exp + 127 - 15) << 23) | (man << 13);
  }
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}
}  // namespace

std::string_view dtype_name(DType t) {
  for (auto& [d, n] : kNames) if (d == t) return n;
  return "?";
}

bool dtype_from_name(std::string_view name, DType* out) {
  for (auto& [d, n] : kNames) {
    if (n == name) { *out = d; return true; }
  }
  return false;
}

int64_t numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) r += (i ? ", " : "") + std::to_string(s[i]);
  return r + "]";
}

HostTensor HostTensor::from_f32(Shape s, std::span<const float> v) {
  HostTensor t(DType::F32, std::move(s));
  OC_CHECK(size_t(t.numel()) == v.size(), "{} values for shape {}", v.size(), shape_str(t.shape));
  std::memcpy(t.bytes.data(), v.data(), v.size_bytes());
  return t;
}

std::vector<float> HostTensor::to_f32() const {
  const size_t n = size_t(numel());
  std::vector<float> out(n);
  const uint8_t* p = bytes.data();
  auto load = [&](auto tag, size_t i) {
    decltype(tag) v;
    std::memcpy(&v, p + i * sizeof v, sizeof v);
    return v;
  };
  for (size_t i = 0; i < n; ++i) {
    switch (dtype) {
      case DType::F64: out[i] = float(load(double{}, i)); break;
      case DType::F32: out[i] = load(float{}, i); break;
      case DType::BF16: out[i] = oc::to_f32(bf16{load(uint16_t{}, i)}); break;
      case DType::F16: out[i] = half_to_float(load(uint16_t{}, i)); break;
      case DType::I64: out[i] = float(load(int64_t{}, i)); break;
      case DType::I32: out[i] = float(load(int32_t{}, i)); break;
      case DType::I16: out[i] = float(load(int16_t{}, i)); break;
      case DType::I8: out[i] = float(load(int8_t{}, i)); break;
      case DType::U8: case DType::Bool: out[i] = float(p[i]); break;
    }
  }
  return out;
}

}  // namespace oc
