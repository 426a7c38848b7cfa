// The draws OpenCLIP's initialisations are made of, into one parameter's host values (every
// parameter of a model draws from one Rng in table order: model/params.cpp init_params_each).
#pragma once
#include <algorithm>
#include <span>
#include <string>
#include <string_view>

#include "core/rng.h"

namespace oc {

inline void fill_normal(std::span<float> out, double std, Rng& rng) {
  for (float& x : out) x = float(rng.normal() * std);
}
// U(-bound, bound)
inline void fill_uniform(std::span<float> out, double bound, Rng& rng) {
  for (float& x : out) x = float((2 * rng.uniform() - 1) * bound);
}
// N(0, 1) truncated to [a, b] by rejection, times std (timm's trunc_normal_tf_; its
// trunc_normal_(std=0.02) truncates at +-2 absolute, i.e. +-100 std: a plain normal).
inline void fill_trunc_normal(std::span<float> out, double std, double a, double b, Rng& rng) {
  for (float& x : out) {
    double z = rng.normal();
    while (z < a || z > b) z = rng.normal();
    x = float(z * std);
  }
}
inline void fill_value(std::span<float> out, float v) { std::fill(out.begin(), out.end(), v); }
inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace oc
