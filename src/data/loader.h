// The data loader: --workers threads decode, augment and tokenize into bounded per-worker
// queues of ready batches; the consumer takes them round-robin (worker 0, 1, ..., W-1, 0,
// ...) as PyTorch's DataLoader does, so batch contents and order depend only on (seed,
// epoch, rank, world, workers), never on thread timing. The position after each batch is
// exact and serializable: a resumed run re-derives the epoch's order and skips (reading
// tar members, decoding nothing) to where it was, and sees the same batches as a run that
// never stopped.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/host_alloc.h"
#include "core/result.h"
#include "data/dataset.h"
#include "data/stats.h"

namespace oc {
class TextTokenizer;
}

namespace oc::data {

struct CsvData;    // producers.h
class BatchPool;  // producers.h

// Where one worker stands in its epoch: `pass` counts restarts of its shard list (OpenCLIP
// wraps the data to fill an epoch), `pulled` the samples taken from the pass's shuffled
// stream (kept or skipped), `batches` the batches it has produced.
struct WorkerPos {
  int64_t pass = 0, pulled = 0, batches = 0;
};

struct Batch {
  int64_t index = 0;  // within the epoch, 0-based, in consumption order
  int size = 0;       // rows (batch_size; fewer only for the last eval batch)
  int image_size = 0, context_length = 0;
  HostVector<float> images;      // [size, 3, image_size, image_size] ([size, S, S, 3] with
                                 // BatchMemory::channels_last); empty with BatchMemory::pixels
  HostVector<uint8_t> pixels;    // [size, image_size, image_size, 3] HWC, only with BatchMemory::pixels
  std::vector<int32_t> tokens;   // [size, context_length]
  std::vector<int64_t> labels;   // [size]: .cls / label column, -1 where absent
  std::vector<std::string> keys; // [size]: tar key, CSV row "path", or "synthetic:<index>"
  int worker = 0;
  WorkerPos pos;  // the producing worker's position after this batch
};

// The loader's position: enough to continue an epoch exactly. Saved in checkpoints as JSON.
// How batches are handed over (DataLoader::set_batch_memory).
struct BatchMemory {
  // Where the images live (ops::Backend::host_allocator: pinned memory on cuda, so their
  // uploads run asynchronously). Must outlive the loader's batches.
  HostAllocator* alloc = &plain_host_allocator();
  // Batches the consumer holds at once (the step's and the next step's, being uploaded), so
  // the recycled pool covers them and a steady state allocates nothing (pinning is slow).
  int consumer_batches = 1;
  // The images as resized uint8 pixels (Batch::pixels) instead of normalised floats: the
  // consumer normalises them (ops/pixels.h, on the backend: a quarter of the bytes to copy),
  // to exactly the floats the loader would have made (image/transform.h, normalize_chw).
  bool pixels = false;
  // The normalised floats in each image's HWC order ([size, S, S, 3]), for a tower that
  // computes channels-last (model/image_tower.h ImageInput): no transpose on either side.
  // Pixels are HWC already; this is for the floats only.
  bool channels_last = false;
};

struct LoaderPosition {
  int64_t epoch = 0;
  int64_t batches = 0;              // batches returned so far in this epoch
  std::vector<WorkerPos> workers;   // per logical worker
  // The layout it was taken under; restoring under another one is refused.
  uint64_t seed = 0;
  int rank = 0, world_size = 1, num_workers = 1, batch_size = 0;
  std::string dataset;              // type + data string

  nlohmann::json to_json() const;
  static Result<LoaderPosition> from_json(const nlohmann::json& j);
};

class DataLoader {
 public:
  // Validates the dataset (shards >= workers x ranks, CSV columns, sizes); throws oc::Error
  // with a user-facing message when it cannot be used. `tokenizer` may be null: the default
  // vocabulary is loaded then.
  DataLoader(DataConfig cfg, std::shared_ptr<const TextTokenizer> tokenizer = nullptr);
  ~DataLoader();
  DataLoader(const DataLoader&) = delete;
  DataLoader& operator=(const DataLoader&) = delete;

  // Per epoch, per rank (OpenCLIP's dataloader.num_batches / num_samples).
  int64_t num_batches() const { return num_batches_; }
  int64_t num_samples() const { return num_samples_; }
  int64_t num_shards() const { return int64_t(shards_.size()); }
  int num_workers() const { return nw_; }  // logical workers: max(1, --workers)

  // Starts an epoch from its beginning (stops any epoch in progress).
  void start_epoch(int64_t epoch);
  // Starts pos.epoch at pos. An error (nothing started) when the layout differs.
  Status resume(const LoaderPosition& pos);
  // The next batch; nullopt at the end of the epoch. A worker's fatal error (no readable
  // data at all) is rethrown here as oc::Error.
  std::optional<Batch> next();
  // Optional: hands a used batch back so its buffers are reused for a later batch (saves an
  // allocation, page faults and zeroing of ~B*3*S*S floats per batch).
  void recycle(Batch&& b);
  // How the batches are handed over (BatchMemory). Stops an epoch in progress: call it
  // before the first one. Default: fp32 images in plain heap memory, one batch held.
  void set_batch_memory(const BatchMemory& m);
  // The position after the last batch next() returned.
  LoaderPosition position() const { return pos_; }

  DataStats& stats() { return *stats_; }
  const DataConfig& config() const { return cfg_; }

  struct Impl;  // producers and worker threads (loader.cpp / producers.cpp)

 private:
  void stop();
  void launch(const std::vector<WorkerPos>& from, int next_worker);
  // The constructor's steps, by dataset type: shards and epoch size of a webdataset; the rows
  // of a CSV (returns their count); the epoch size of an indexed dataset (CSV, synthetic) of
  // n samples; then the position's identity.
  void set_up_webdataset();
  int64_t load_csv();
  void size_indexed_dataset(int64_t n);
  void init_position();
  DataConfig cfg_;
  std::shared_ptr<const TextTokenizer> tok_;
  std::shared_ptr<DataStats> stats_;
  std::vector<std::string> shards_;
  std::vector<double> weights_;
  int nw_ = 1;
  int64_t num_batches_ = 0, num_samples_ = 0, worker_batches_ = 0, index_size_ = 0;
  LoaderPosition pos_;
  std::unique_ptr<Impl> impl_;
  std::shared_ptr<const CsvData> csv_;
  std::shared_ptr<BatchPool> pool_;  // recycled batches, kept across epochs
  BatchMemory memory_;
  size_t pool_cap() const;
};

}  // namespace oc::data
