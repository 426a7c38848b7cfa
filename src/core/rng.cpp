#include "core/rng.h"

#include <cmath>
#include <initializer_list>

namespace oc {
namespace {
uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
}  // namespace

void Rng::reseed(uint64_t seed) {
  uint64_t x = seed;
  for (auto& s : s_) s = splitmix64(x);
  has_cached_ = false;
}

uint64_t Rng::next_u64() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() { return double(next_u64() >> 11) * 0x1.0p-53; }

uint64_t Rng::below(uint64_t n) {
  const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
  uint64_t r;
  do r = next_u64(); while (r >= limit);
  return r % n;
}

double Rng::normal() {
  if (has_cached_) {
    has_cached_ = false;
    return cached_;
  }
  double u1;
  do u1 = uniform(); while (u1 <= 0.0);
  const double u2 = uniform();
  const double r = std::sqrt(-2.0 * std::log(u1));
  cached_ = r * std::sin(2.0 * M_PI * u2);
  has_cached_ = true;
  return r * std::cos(2.0 * M_PI * u2);
}

void Rng::set_state(const State& st) {
  for (int i = 0; i < 4; ++i) s_[i] = st.s[i];
  cached_ = st.cached;
  has_cached_ = st.has_cached;
}

uint64_t mix_seed(uint64_t a, uint64_t b, uint64_t c, uint64_t d) {
  uint64_t x = a;
  uint64_t h = splitmix64(x);
  for (uint64_t v : {b, c, d}) {
    x = h ^ (v + 0x632be59bd9b4e019ull);
    h = splitmix64(x);
  }
  return h;
}

}  // namespace oc
