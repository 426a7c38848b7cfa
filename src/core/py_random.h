// CPython's `random.Random`, the parts OpenCLIP's data order depends on: the Mersenne Twister
// (MT19937), seeding from an int (`Random(seed)` / `.seed(int)`: init_by_array over the
// absolute value's 32-bit words, least significant first), getrandbits(k) and
// randint/randrange through _randbelow (rejection sampling on getrandbits(n.bit_length())).
// Written here because no Debian library reproduces CPython's seeding and rejection order;
// 60 lines, checked value for value against /usr/bin/python3 in tests/core.
#pragma once
#include <array>
#include <cstdint>

namespace oc {

class PyRandom {
 public:
  // random.Random(seed) for a non-negative integer seed.
  explicit PyRandom(uint64_t seed) { this->seed(seed); }
  void seed(uint64_t seed);
  // getrandbits(k), 0 <= k <= 64.
  uint64_t getrandbits(int k);
  // _randbelow(n): uniform in [0, n), n > 0, drawing exactly as CPython does.
  uint64_t below(uint64_t n);
  // randint(a, b), a <= b.
  int64_t randint(int64_t a, int64_t b) { return a + int64_t(below(uint64_t(b - a) + 1)); }

 private:
  uint32_t next_u32();
  std::array<uint32_t, 624> mt_{};
  int index_ = 625;
};

}  // namespace oc
