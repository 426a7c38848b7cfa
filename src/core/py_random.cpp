#include "core/py_random.h"

#include <algorithm>
#include <bit>

#include "core/check.h"

namespace oc {
namespace {
constexpr int N = 624, M = 397;
constexpr uint32_t MATRIX_A = 0x9908b0dfu, UPPER = 0x80000000u, LOWER = 0x7fffffffu;
}  // namespace

void PyRandom::seed(uint64_t seed) {
  // init_genrand(19650218), then init_by_array(key) with key = the seed's 32-bit words
  // (one word for seeds below 2^32, including 0), as CPython's random_seed does.
  uint32_t key[2] = {uint32_t(seed), uint32_t(seed >> 32)};
  const int key_len = (seed >> 32) ? 2 : 1;
  mt_[0] = 19650218u;
  for (int i = 1; i < N; ++i) mt_[i] = 1812433253u * (mt_[i - 1] ^ (mt_[i - 1] >> 30)) + uint32_t(i);
  int i = 1, j = 0;
  for (int k = std::max(N, key_len); k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1664525u)) + key[j] + uint32_t(j);
    ++i, ++j;
    if (i >= N) mt_[0] = mt_[N - 1], i = 1;
    if (j >= key_len) j = 0;
  }
  for (int k = N - 1; k; --k) {
    mt_[i] = (mt_[i] ^ ((mt_[i - 1] ^ (mt_[i - 1] >> 30)) * 1566083941u)) - uint32_t(i);
    if (++i >= N) mt_[0] = mt_[N - 1], i = 1;
  }
  mt_[0] = 0x80000000u;  // MSB is 1, assuring a non-zero initial array
  index_ = N;
}

uint32_t PyRandom::next_u32() {
  if (index_ >= N) {
    for (int k = 0; k < N; ++k) {
      const uint32_t y = (mt_[k] & UPPER) | (mt_[(k + 1) % N] & LOWER);
      mt_[k] = mt_[(k + M) % N] ^ (y >> 1) ^ ((y & 1u) ? MATRIX_A : 0u);
    }
    index_ = 0;
  }
  uint32_t y = mt_[index_++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  return y ^ (y >> 18);
}

uint64_t PyRandom::getrandbits(int k) {
  OC_CHECK(k >= 0 && k <= 64, "getrandbits({}): 0..64 supported", k);
  if (k == 0) return 0;
  if (k <= 32) return next_u32() >> (32 - k);
  // CPython fills 32-bit words least significant first; the last word keeps its top bits.
  const uint64_t lo = next_u32();
  const uint64_t hi = next_u32() >> (64 - k);
  return lo | (hi << 32);
}

uint64_t PyRandom::below(uint64_t n) {
  OC_CHECK(n > 0, "randbelow(0)");
  const int k = std::bit_width(n);  // n.bit_length(), not (n-1): n can be 1
  uint64_t r = getrandbits(k);
  while (r >= n) r = getrandbits(k);
  return r;
}

}  // namespace oc
