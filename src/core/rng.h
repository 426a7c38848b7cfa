// Deterministic random numbers: same seed, same sequence, on every platform and thread
// count (no std:: distributions, whose output is implementation-defined).
#pragma once
#include <cstdint>

namespace oc {

// splitmix64-seeded xoshiro256**.
class Rng {
 public:
  explicit Rng(uint64_t seed = 0) { reseed(seed); }
  void reseed(uint64_t seed);
  uint64_t next_u64();
  // Uniform in [0, 1) with 53 random bits.
  double uniform();
  // Uniform integer in [0, n) (n > 0), unbiased.
  uint64_t below(uint64_t n);
  // Standard normal (Box-Muller; one value per call, the pair's second is cached).
  double normal();
  struct State {
    uint64_t s[4];
    double cached;
    bool has_cached;
  };
  State state() const { return {{s_[0], s_[1], s_[2], s_[3]}, cached_, has_cached_}; }
  void set_state(const State& st);

 private:
  uint64_t s_[4];
  double cached_ = 0;
  bool has_cached_ = false;
};

// Mixes several integers into one seed (for seed + epoch + rank + worker streams).
uint64_t mix_seed(uint64_t a, uint64_t b = 0, uint64_t c = 0, uint64_t d = 0);

}  // namespace oc
