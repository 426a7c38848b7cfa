// The shape of an epoch, as pure functions of (seed, epoch, shards, rank, world, workers):
// OpenCLIP's batch-count rounding, the shard order (detshuffle2), the split by node then by
// worker, weighted resampling, and the per-stream seeds. The loader only replays these, so
// a resumed run can re-derive any position without having seen the data before it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/rng.h"

namespace oc::data {

// OpenCLIP get_wds_dataset (train, floor=False): global_batch = batch*world; num_batches =
// ceil(samples/global_batch) rounded up to a multiple of max(1, workers); num_samples =
// num_batches * global_batch. worker_batches is what each worker yields (with_epoch).
struct EpochSize {
  int64_t num_samples = 0;     // per epoch, all ranks together
  int64_t num_batches = 0;     // per rank
  int64_t worker_batches = 0;  // per worker
};
EpochSize wds_epoch_size(int64_t num_samples, int batch_size, int world_size, int workers);

// Streams of randomness used by the pipeline; distinct so they never correlate.
// (1 was the shard shuffle, which now draws from Python's generator: shard_order.)
enum class SeedUse : uint64_t { SampleShuffle = 2, Augment = 3, Resample = 4, Permutation = 5, Caption = 6 };
// The seed of one stream: mix(seed + epoch, use, a, b).
uint64_t stream_seed(uint64_t seed, int64_t epoch, SeedUse use, uint64_t a = 0, uint64_t b = 0);

// detshuffle2: the shard list shuffled with buffer 2000 / initial 500 (by default) by
// webdataset's _shuffle with Python's random.Random(seed + epoch) (core/py_random.h), so
// every rank and worker sees the same order, and it is OpenCLIP's order for the same seed.
std::vector<std::string> shard_order(const std::vector<std::string>& urls, uint64_t seed, int64_t epoch,
                                     bool shuffle, size_t bufsize = 2000, size_t initial = 500);

// items[index::count] (Python slicing), as wds.split_by_node / split_by_worker.
template <class T>
std::vector<T> every_nth(const std::vector<T>& items, int index, int count) {
  std::vector<T> out;
  for (size_t i = size_t(index); i < items.size(); i += size_t(count)) out.push_back(items[i]);
  return out;
}

// The shards one worker of one rank reads in an epoch: order, then [rank::world], then
// [worker::workers] (workers = max(1, --workers)).
std::vector<std::string> worker_shards(const std::vector<std::string>& urls, uint64_t seed, int64_t epoch, bool shuffle,
                                       int rank, int world, int worker, int workers);

// ResampledShards2: an endless weighted choice with replacement, seeded per rank/worker/epoch.
class ShardResampler {
 public:
  ShardResampler(std::vector<std::string> urls, std::vector<double> weights, uint64_t seed, int64_t epoch, int rank,
                 int worker);
  const std::string& next();

 private:
  std::vector<std::string> urls_;
  std::vector<double> cum_;  // cumulative weights (empty = uniform)
  Rng rng_;
};

// A permutation of [0, n) (Fisher-Yates with oc::Rng), for map-style datasets.
std::vector<int64_t> permutation(int64_t n, uint64_t seed);

// DistributedSampler's split: pad to a multiple of world by repeating from the start, then
// take [rank::world]. With world == 1 it is the identity.
std::vector<int64_t> distributed_split(const std::vector<int64_t>& order, int rank, int world);

}  // namespace oc::data
