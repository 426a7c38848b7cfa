// What one loader worker does (internal to the loader): turn its share of the epoch into
// batches, in order. Two kinds: a stream over tar shards (webdataset: shard order, split,
// shuffle buffer, wrap-around passes) and an index list (CSV rows, synthetic samples).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/loader.h"
#include "image/image.h"

namespace oc::data {

struct CsvData {
  std::vector<std::string> paths;  // resolved image paths
  std::vector<std::string> captions;
  std::vector<int64_t> labels;     // -1 where absent/invalid; empty without a label column
};

// Batches handed back by the consumer (DataLoader::recycle): their buffers are reused, so a
// steady state allocates nothing (a fresh 38 MB image buffer per batch costs page faults
// and zeroing on every batch).
class BatchPool {
 public:
  explicit BatchPool(size_t cap) : cap_(cap) {}
  void put(Batch&& b);
  std::optional<Batch> take();

 private:
  std::mutex mu_;
  std::vector<Batch> free_;
  size_t cap_;
};

struct ProducerCtx {
  const DataConfig* cfg = nullptr;
  const TextTokenizer* tok = nullptr;
  DataStats* stats = nullptr;
  const std::atomic<bool>* stop = nullptr;
  BatchPool* pool = nullptr;
  HostAllocator* host_alloc = &plain_host_allocator();  // a new batch's image memory
  bool pixels = false;                                   // uint8 pixels instead of floats (BatchMemory)
  bool channels_last = false;                            // floats in HWC order (BatchMemory)
  int64_t epoch = 0;
  int worker = 0, num_workers = 1;
};

class Producer {
 public:
  virtual ~Producer() = default;
  // The worker's next batch; nullopt when it has no more this epoch.
  virtual std::optional<Batch> next() = 0;
};

// webdataset. worker_batches < 0: eval (one pass, partial last batch, no rank split).
std::unique_ptr<Producer> make_stream_producer(const ProducerCtx& ctx, const std::vector<std::string>& shards,
                                               const std::vector<double>& weights, int64_t worker_batches,
                                               const WorkerPos& from);

// CSV rows (csv != null) or synthetic samples. `order` is this rank's sample order;
// num_batches the rank's batch count (global batch g goes to worker g % num_workers).
std::unique_ptr<Producer> make_indexed_producer(const ProducerCtx& ctx, std::shared_ptr<const CsvData> csv,
                                                std::shared_ptr<const std::vector<int64_t>> order,
                                                int64_t num_batches, int64_t dataset_size, const WorkerPos& from);

// One sample into row `row` of a batch: tokenize, decode (unless `image` is given),
// preprocess (train: RandomResizedCrop seeded by aug_seed; eval: resize + center crop).
// False (counted in stats, with `where` in the warning) when the sample must be skipped.
struct SampleIn {
  std::span<const uint8_t> image_bytes;
  const ImageU8* image = nullptr;
  bool keep_mode = false;  // decode in the PIL mode, resize/crop in it, then RGB (CsvDataset)
  std::string_view caption;
  int64_t label = -1;
  std::string key;
};
bool make_sample(const ProducerCtx& ctx, const SampleIn& in, uint64_t aug_seed, Batch* b, int row);
Batch alloc_batch(const ProducerCtx& ctx, int rows);
void shrink_batch(Batch* b, int rows);

}  // namespace oc::data
