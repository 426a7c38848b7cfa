#pragma once
// Test inputs that do not depend on the CPU: n floats drawn from N(0, 1) by oc::Rng(seed).

#include <cstdint>
#include <vector>

#include "core/rng.h"

namespace oc::test {

inline std::vector<float> normal_floats(size_t n, uint64_t seed) {
  Rng rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = float(rng.normal());
  return v;
}

}  // namespace oc::test
