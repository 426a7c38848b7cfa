// A batch of random images and caption-like token rows for model and training-step tests:
// images N(0,1), rows [sot, ids..., eot, 0...] with sot = V-2, eot = V-1 (the largest id,
// where the text tower pools) and 1 + rng.below(len_range) ids drawn from [0, V-2).
#pragma once
#include <cstdint>
#include <vector>

#include "core/rng.h"
#include "model/config.h"

namespace oc::test {

struct SyntheticBatch {
  std::vector<float> images;   // [B,3,S,S]
  std::vector<int32_t> tokens;  // [B,ctx]
};

inline SyntheticBatch synthetic_batch(const ModelCfg& c, int64_t B, uint64_t seed, int64_t len_range) {
  Rng rng(seed);
  SyntheticBatch b;
  const int64_t S = c.vision.image_size, ctx = c.text.context_length, V = c.text.vocab_size;
  b.images.resize(size_t(B * 3 * S * S));
  for (auto& v : b.images) v = float(rng.normal());
  b.tokens.assign(size_t(B * ctx), 0);
  for (int64_t i = 0; i < B; ++i) {
    const int64_t len = 1 + int64_t(rng.below(uint64_t(len_range)));
    int32_t* row = &b.tokens[size_t(i * ctx)];
    row[0] = int32_t(V - 2);
    for (int64_t t = 1; t <= len; ++t) row[t] = int32_t(rng.below(uint64_t(V - 2)));
    row[len + 1] = int32_t(V - 1);
  }
  return b;
}

}  // namespace oc::test
