#include "data/epoch.h"

#include <algorithm>

#include "core/check.h"
#include "data/shuffle.h"

namespace oc::data {

EpochSize wds_epoch_size(int64_t num_samples, int batch_size, int world_size, int workers) {
  OC_CHECK(batch_size > 0 && world_size > 0, "batch {} world {}", batch_size, world_size);
  const int64_t global_batch = int64_t(batch_size) * world_size;
  const int64_t w = std::max(1, workers);
  EpochSize e;
  int64_t nb = (num_samples + global_batch - 1) / global_batch;
  e.worker_batches = (nb + w - 1) / w;
  e.num_batches = e.worker_batches * w;
  e.num_samples = e.num_batches * global_batch;
  return e;
}

uint64_t stream_seed(uint64_t seed, int64_t epoch, SeedUse use, uint64_t a, uint64_t b) {
  return mix_seed(seed + uint64_t(epoch), uint64_t(use), a, b);
}

std::vector<std::string> shard_order(const std::vector<std::string>& urls, uint64_t seed, int64_t epoch, bool shuffle,
                                     size_t bufsize, size_t initial) {
  if (!shuffle) return urls;
  // detshuffle2: rng = random.Random(); rng.seed(seed + epoch); webdataset's _shuffle picks
  // with rng.randint(0, len(buf) - 1). PyRandom draws exactly as CPython, so the order equals
  // OpenCLIP's for the same --seed and epoch.
  return shuffle_list<std::string, PyRandom>(urls, bufsize, initial, seed + uint64_t(epoch));
}

std::vector<std::string> worker_shards(const std::vector<std::string>& urls, uint64_t seed, int64_t epoch, bool shuffle,
                                       int rank, int world, int worker, int workers) {
  auto ordered = shard_order(urls, seed, epoch, shuffle);
  return every_nth(every_nth(ordered, rank, world), worker, std::max(1, workers));
}

ShardResampler::ShardResampler(std::vector<std::string> urls, std::vector<double> weights, uint64_t seed,
                               int64_t epoch, int rank, int worker)
    : urls_(std::move(urls)), rng_(stream_seed(seed, epoch, SeedUse::Resample, uint64_t(rank), uint64_t(worker))) {
  OC_CHECK(!urls_.empty(), "no shards to resample");
  if (!weights.empty()) {
    OC_CHECK(weights.size() == urls_.size(), "{} weights for {} shards", weights.size(), urls_.size());
    double acc = 0;
    for (double x : weights) cum_.push_back(acc += std::max(0.0, x));
    OC_CHECK(acc > 0, "upsampling factors sum to {}", acc);
  }
}

const std::string& ShardResampler::next() {
  if (cum_.empty()) return urls_[size_t(rng_.below(urls_.size()))];
  // random.choices: bisect the cumulative weights at uniform() * total.
  double x = rng_.uniform() * cum_.back();
  size_t i = size_t(std::upper_bound(cum_.begin(), cum_.end(), x) - cum_.begin());
  return urls_[std::min(i, urls_.size() - 1)];
}

std::vector<int64_t> permutation(int64_t n, uint64_t seed) {
  std::vector<int64_t> p(size_t(std::max<int64_t>(0, n)));
  for (int64_t i = 0; i < n; ++i) p[size_t(i)] = i;
  Rng rng(seed);
  for (int64_t i = n - 1; i > 0; --i) std::swap(p[size_t(i)], p[size_t(rng.below(uint64_t(i + 1)))]);
  return p;
}

std::vector<int64_t> distributed_split(const std::vector<int64_t>& order, int rank, int world) {
  if (world <= 1 || order.empty()) return order;
  size_t total = (order.size() + size_t(world) - 1) / size_t(world) * size_t(world);
  std::vector<int64_t> padded = order;
  for (size_t i = 0; padded.size() < total; ++i) padded.push_back(order[i % order.size()]);
  return every_nth(padded, rank, world);
}

}  // namespace oc::data
