#include "model/int8_scales.h"

#include <cmath>
#include <vector>

#include "core/check.h"
#include "io/safetensors.h"

namespace oc {

std::string int8_scale_name(const std::string& weight_name) {
  const std::string w = "weight";
  OC_CHECK(weight_name.size() >= w.size() && weight_name.compare(weight_name.size() - w.size(), w.size(), w) == 0,
           "int8 scales: {} is not a weight's name", weight_name);
  return weight_name.substr(0, weight_name.size() - w.size()) + "input_scale";
}

std::string int8_scales_beside(const std::string& weights) {
  if (weights.empty()) return {};
  const size_t slash = weights.find_last_of('/');
  const size_t dot = weights.find_last_of('.');
  const bool ext = dot != std::string::npos && (slash == std::string::npos || dot > slash + 1);
  return (ext ? weights.substr(0, dot) : weights) + ".int8.safetensors";
}

namespace {
std::string meta(const io::Safetensors& st, const std::string& key) {
  auto it = st.metadata.find(key);
  return it == st.metadata.end() ? std::string() : it->second;
}

int64_t meta_count(const io::Safetensors& st, const std::string& key, const std::string& path) {
  const std::string v = meta(st, key);
  try {
    size_t used = 0;
    const long long n = v.empty() ? 0 : std::stoll(v, &used);
    if (used == v.size() && n >= 0) return n;
  } catch (const std::exception&) {
  }
  OC_USER_ERROR("{}: int8 scales metadata {} is '{}', not a count", path, key, v);
}
}  // namespace

Int8Scales read_int8_scales(const std::string& path) {
  auto st = io::read_safetensors(path);
  if (!st) OC_USER_ERROR("int8 scales {}: {}", path, st.error());
  const io::Safetensors& f = st.value();
  if (meta(f, "format") != kInt8ScalesFormat)
    OC_USER_ERROR("{}: not an int8 scales file (metadata format is '{}', expected '{}'; made by openclip quantize)",
                  path, meta(f, "format"), kInt8ScalesFormat);
  if (meta(f, "format_version") != kInt8ScalesVersion)
    OC_USER_ERROR("{}: int8 scales format_version '{}' (this build reads {})", path, meta(f, "format_version"),
                  kInt8ScalesVersion);
  Int8Scales s;
  s.file = path;
  s.model = meta(f, "model");
  s.calib_images = meta_count(f, "calibration_images", path);
  s.calib_texts = meta_count(f, "calibration_texts", path);
  s.range = meta(f, "range");
  for (const auto& [name, t] : f.tensors) {
    if (t.dtype != DType::F32 || t.numel() != 1 || t.shape.size() > 1)
      OC_USER_ERROR("{}: int8 scale {} is {} {}, expected F32 [1]", path, name, dtype_name(t.dtype),
                    shape_str(t.shape));
    const float v = t.f32()[0];
    if (!std::isfinite(v) || v <= 0.0f)
      OC_USER_ERROR("{}: int8 scale {} is {} (a scale must be finite and > 0)", path, name, v);
    s.scale[name] = v;
  }
  return s;
}

void write_int8_scales(const std::string& path, const Int8Scales& s) {
  std::vector<std::pair<std::string, HostTensor>> tensors;
  for (const auto& [name, v] : s.scale) {
    OC_CHECK(std::isfinite(v) && v > 0.0f, "int8 scale {} is {}", name, v);
    tensors.push_back({name, HostTensor::from_f32({1}, std::span<const float>(&v, 1))});
  }
  io::write_safetensors(path, tensors,
                        {{"format", kInt8ScalesFormat},
                         {"format_version", kInt8ScalesVersion},
                         {"model", s.model},
                         {"calibration_images", std::to_string(s.calib_images)},
                         {"calibration_texts", std::to_string(s.calib_texts)},
                     {"range", s.range}});
}

}  // namespace oc
