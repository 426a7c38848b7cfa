// Loader set-up (dataset sizes, OpenCLIP's checks), worker threads with bounded queues,
// and the round-robin consumer. Producers (producers.cpp) do the per-worker work.
#include "data/loader.h"

#include <condition_variable>
#include <deque>
#include <exception>
#include <mutex>
#include <thread>

#include <fmt/format.h>

#include "core/check.h"
#include "core/fs.h"
#include "core/limits.h"
#include "core/log.h"
#include "data/epoch.h"
#include "data/csv.h"
#include "data/producers.h"
#include "data/urls.h"
#include "data/webdataset.h"
#include "text/text_tokenizer.h"

namespace oc::data {

nlohmann::json LoaderPosition::to_json() const {
  nlohmann::json w = nlohmann::json::array();
  for (auto& p : workers) w.push_back({p.pass, p.pulled, p.batches});
  return {{"epoch", epoch},       {"batches", batches},       {"workers", w},
          {"seed", seed},         {"rank", rank},             {"world_size", world_size},
          {"num_workers", num_workers}, {"batch_size", batch_size}, {"dataset", dataset}};
}

Result<LoaderPosition> LoaderPosition::from_json(const nlohmann::json& j) {
  try {
    LoaderPosition p;
    p.epoch = j.at("epoch").get<int64_t>();
    p.batches = j.at("batches").get<int64_t>();
    for (auto& w : j.at("workers")) p.workers.push_back({w.at(0).get<int64_t>(), w.at(1).get<int64_t>(), w.at(2).get<int64_t>()});
    p.seed = j.at("seed").get<uint64_t>();
    p.rank = j.at("rank").get<int>();
    p.world_size = j.at("world_size").get<int>();
    p.num_workers = j.at("num_workers").get<int>();
    p.batch_size = j.at("batch_size").get<int>();
    p.dataset = j.at("dataset").get<std::string>();
    bool negative = p.epoch < 0 || p.batches < 0 || p.rank < 0 || p.world_size < 1 || p.num_workers < 0 ||
                    p.batch_size < 1;
    for (const auto& w : p.workers) negative |= w.pass < 0 || w.pulled < 0 || w.batches < 0;
    if (negative) return Err{"data loader position: a count is negative (or a size is zero)"};
    return p;
  } catch (const nlohmann::json::exception& e) {
    return Err{fmt::format("data loader position: {}", json_error_text(e.what()))};
  }
}

namespace {

struct Slot {
  std::unique_ptr<Producer> prod;
  std::thread th;
  std::mutex mu;
  std::condition_variable cv_space, cv_ready;
  std::deque<Batch> q;
  bool done = false;
  std::exception_ptr err;
  bool active = true;  // consumer side: false once the worker said it has no more
};

}  // namespace

struct DataLoader::Impl {
  std::vector<std::unique_ptr<Slot>> slots;
  std::atomic<bool> stop{false};
  int next_worker = 0;
  bool threaded = false;
  std::shared_ptr<const std::vector<int64_t>> order;
};

DataLoader::DataLoader(DataConfig cfg, std::shared_ptr<const TextTokenizer> tok)
    : cfg_(std::move(cfg)), tok_(std::move(tok)), stats_(std::make_shared<DataStats>()) {
  OC_CHECK(cfg_.batch_size > 0, "batch size {}", cfg_.batch_size);
  OC_CHECK(cfg_.world_size >= 1 && cfg_.rank >= 0 && cfg_.rank < cfg_.world_size, "rank {} of {}", cfg_.rank,
           cfg_.world_size);
  auto type = resolve_dataset_type(cfg_.type, cfg_.data);
  if (!type) OC_USER_ERROR("{}", type.error());
  cfg_.type = *type;
  if (!tok_) tok_ = make_text_tokenizer("", false, cfg_.context_length);  // CLIP's BPE
  stats_->set_full_warnings(cfg_.warn_full);
  nw_ = std::max(1, cfg_.workers);
  if (cfg_.type == DatasetType::WebDataset) {
    set_up_webdataset();
  } else if (cfg_.type == DatasetType::Csv) {
    size_indexed_dataset(load_csv());
  } else {
    if (cfg_.num_samples <= 0)
      OC_USER_ERROR("--dataset-type {} needs --train-num-samples", dataset_type_name(cfg_.type));
    size_indexed_dataset(cfg_.num_samples);
  }
  pool_ = std::make_shared<BatchPool>(pool_cap());
  init_position();
}

// Shards (with upsampling weights) and the epoch size: OpenCLIP's, per worker when training.
void DataLoader::set_up_webdataset() {
  const int64_t B = cfg_.batch_size;
  auto list = expand_shards(cfg_.data, cfg_.upsampling_factors);
  if (!list) OC_USER_ERROR("--{}-data: {}", cfg_.train ? "train" : "val", list.error());
  shards_ = std::move(list->urls);
  weights_ = std::move(list->weights);
  if (shards_.empty()) OC_USER_ERROR("'{}' names no shards", cfg_.data);
  if (!weights_.empty() && !cfg_.resampled)
    OC_USER_ERROR("--train-data-upsampling-factors needs --dataset-resampled (as in OpenCLIP)");
  int64_t n = cfg_.num_samples;
  if (n <= 0) {
    auto sz = dataset_size(shards_);
    if (cfg_.train && !sz) OC_USER_ERROR("cannot tell the number of training samples: {}", sz.error());
    n = sz ? *sz : 0;
  }
  if (cfg_.train) {
    if (!cfg_.resampled && int64_t(shards_.size()) < int64_t(nw_) * cfg_.world_size)
      OC_USER_ERROR(
          "number of shards must be >= total workers: {} shards for {} worker(s) x {} rank(s); "
          "use fewer --workers, more shards, or --dataset-resampled",
          shards_.size(), nw_, cfg_.world_size);
    EpochSize e = wds_epoch_size(n, cfg_.batch_size, cfg_.world_size, cfg_.workers);
    num_batches_ = e.num_batches;
    num_samples_ = e.num_samples;
    worker_batches_ = e.worker_batches;
  } else {
    num_samples_ = n;
    num_batches_ = (n + B - 1) / B;
    worker_batches_ = -1;
  }
}

// The CSV's image paths, captions and (with --csv-label-key) labels into csv_; malformed rows
// are counted and skipped.
int64_t DataLoader::load_csv() {
  std::vector<std::string> opt;
  if (!cfg_.csv_label_key.empty()) opt.push_back(cfg_.csv_label_key);
  auto cols = read_csv_columns(cfg_.data, cfg_.csv_separator, {cfg_.csv_img_key, cfg_.csv_caption_key}, opt);
  if (!cols) OC_USER_ERROR("{}", cols.error());
  for (const auto& m : cols->malformed)
    stats_->skip(Skip::MalformedRow, fmt::format("{}: line {} has {} fields, the header {}; row skipped", cfg_.data,
                                                 m.line, m.fields, cols->header.size()));
  if (!cols->malformed.empty())
    log::warn("{}: skipped {} malformed row(s) with a field count other than the header's {} (first at line {})",
              cfg_.data, cols->malformed.size(), cols->header.size(), cols->malformed[0].line);
  if (!cfg_.csv_label_key.empty() && cols->cols[2].size() == size_t(cols->rows)) {
    bool found = false;
    for (auto& h : cols->header) found |= h == cfg_.csv_label_key;
    if (!found) OC_USER_ERROR("{}: no label column '{}' (--csv-label-key)", cfg_.data, cfg_.csv_label_key);
  }
  auto csv = std::make_shared<CsvData>();
  // Paths are relative to the CSV's folder; OpenCLIP resolves them against the working
  // directory, so that is used instead when the first row only exists there.
  std::string base = fs::dirname(cfg_.data);
  if (cols->rows > 0) {
    const std::string& p0 = cols->cols[0][0];
    if (!p0.empty() && p0[0] != '/' && !fs::exists(fs::join(base, p0)) && fs::exists(p0)) base = "";
  }
  for (int64_t i = 0; i < cols->rows; ++i) {
    const std::string& p = cols->cols[0][size_t(i)];
    csv->paths.push_back(p.empty() || p[0] == '/' || base.empty() ? p : fs::join(base, p));
    csv->captions.push_back(std::move(cols->cols[1][size_t(i)]));
    if (!cfg_.csv_label_key.empty()) {
      auto lab = parse_label(cols->cols[2][size_t(i)]);
      csv->labels.push_back(lab ? *lab : -1);
    }
  }
  csv_ = std::move(csv);
  return cols->rows;
}

// Training drops the last partial batch of each rank's share; evaluation keeps it.
void DataLoader::size_indexed_dataset(int64_t n) {
  const int64_t B = cfg_.batch_size;
  index_size_ = n;
  if (cfg_.train) {
    int64_t per_rank = cfg_.world_size > 1 ? (n + cfg_.world_size - 1) / cfg_.world_size : n;
    num_batches_ = per_rank / B;  // drop_last
    if (num_batches_ == 0)
      OC_USER_ERROR("{} has {} samples{}: fewer than one batch of {} (training drops the last partial batch)",
                    cfg_.data.empty() ? dataset_type_name(cfg_.type) : cfg_.data, n,
                    cfg_.world_size > 1 ? fmt::format(" ({} per rank)", per_rank) : "", B);
  } else {
    num_batches_ = (n + B - 1) / B;
  }
  num_samples_ = n;
}

// What a saved position must match to be resumed: seed, rank and world, workers, batch, data.
void DataLoader::init_position() {
  pos_.seed = cfg_.seed;
  pos_.rank = cfg_.rank;
  pos_.world_size = cfg_.world_size;
  pos_.num_workers = nw_;
  pos_.batch_size = cfg_.batch_size;
  pos_.dataset = std::string(dataset_type_name(cfg_.type)) + ":" + cfg_.data;
}

DataLoader::~DataLoader() { stop(); }

void DataLoader::recycle(Batch&& b) { pool_->put(std::move(b)); }

// Every worker's queue, the batch it fills and one in transit, and what the consumer holds.
size_t DataLoader::pool_cap() const {
  return size_t(nw_) * size_t(std::max(1, cfg_.prefetch) + 2) + size_t(std::max(0, memory_.consumer_batches - 1));
}

void DataLoader::set_batch_memory(const BatchMemory& m) {
  OC_CHECK(m.alloc, "a batch memory without an allocator");
  OC_CHECK(!(m.pixels && m.channels_last), "a batch memory of pixels (HWC already) asks for channels-last floats");
  stop();
  memory_ = m;
  pool_ = std::make_shared<BatchPool>(pool_cap());  // the old pool's batches live in other memory
}

void DataLoader::stop() {
  if (!impl_) return;
  impl_->stop = true;
  for (auto& s : impl_->slots) {
    std::lock_guard lock(s->mu);
    s->cv_space.notify_all();
    s->cv_ready.notify_all();
  }
  for (auto& s : impl_->slots)
    if (s->th.joinable()) s->th.join();
  impl_.reset();
}

void DataLoader::start_epoch(int64_t epoch) {
  pos_.epoch = epoch;
  launch(std::vector<WorkerPos>(size_t(nw_)), 0);
}

Status DataLoader::resume(const LoaderPosition& p) {
  std::string diff;
  auto cmp = [&](const char* what, auto a, auto b) {
    if (a != b) diff += fmt::format("{}{} {} (now {})", diff.empty() ? "" : ", ", what, a, b);
  };
  cmp("seed", p.seed, cfg_.seed);
  cmp("rank", p.rank, cfg_.rank);
  cmp("world size", p.world_size, cfg_.world_size);
  cmp("workers", p.num_workers, nw_);
  cmp("batch size", p.batch_size, cfg_.batch_size);
  cmp("dataset", p.dataset, pos_.dataset);
  if (!diff.empty()) return Err{"the saved data position was taken with " + diff + "; it cannot be restored exactly"};
  if (p.workers.size() != size_t(nw_) || p.batches < 0 || p.batches > num_batches_)
    return Err{fmt::format("the saved data position is malformed ({} workers, {} batches)", p.workers.size(), p.batches)};
  pos_.epoch = p.epoch;
  launch(p.workers, int(p.batches % nw_));
  pos_.batches = p.batches;
  pos_.workers = p.workers;
  return Status::success();
}

void DataLoader::launch(const std::vector<WorkerPos>& from, int next_worker) {
  stop();
  impl_ = std::make_unique<Impl>();
  impl_->next_worker = next_worker;
  impl_->threaded = cfg_.workers > 0;
  pos_.batches = 0;
  pos_.workers = from;
  if (cfg_.type != DatasetType::WebDataset) {
    // Train: DistributedSampler / RandomSampler order seeded by seed + epoch; eval: in order.
    std::vector<int64_t> order(static_cast<size_t>(index_size_));
    for (int64_t i = 0; i < index_size_; ++i) order[size_t(i)] = i;
    if (cfg_.train) {
      if (cfg_.shuffle) order = permutation(index_size_, stream_seed(cfg_.seed, pos_.epoch, SeedUse::Permutation));
      order = distributed_split(order, cfg_.rank, cfg_.world_size);
    }
    impl_->order = std::make_shared<const std::vector<int64_t>>(std::move(order));
  }
  for (int w = 0; w < nw_; ++w) {
    auto slot = std::make_unique<Slot>();
    ProducerCtx ctx;
    ctx.cfg = &cfg_;
    ctx.tok = tok_.get();
    ctx.stats = stats_.get();
    ctx.stop = &impl_->stop;
    ctx.pool = pool_.get();
    ctx.host_alloc = memory_.alloc;
    ctx.pixels = memory_.pixels;
    ctx.channels_last = memory_.channels_last;
    ctx.epoch = pos_.epoch;
    ctx.worker = w;
    ctx.num_workers = nw_;
    if (cfg_.type == DatasetType::WebDataset)
      slot->prod = make_stream_producer(ctx, shards_, weights_, worker_batches_, from[size_t(w)]);
    else
      slot->prod = make_indexed_producer(ctx, csv_, impl_->order, num_batches_, index_size_, from[size_t(w)]);
    impl_->slots.push_back(std::move(slot));
  }
  if (!impl_->threaded) return;
  const size_t cap = size_t(std::max(1, cfg_.prefetch));
  for (auto& sp : impl_->slots) {
    Slot* s = sp.get();
    std::atomic<bool>* stop = &impl_->stop;
    s->th = std::thread([s, stop, cap] {
      try {
        for (;;) {
          {
            std::unique_lock lock(s->mu);
            s->cv_space.wait(lock, [&] { return stop->load() || s->q.size() < cap; });
            if (stop->load()) return;
          }
          auto b = s->prod->next();  // the work happens outside the lock
          std::lock_guard lock(s->mu);
          if (!b) {
            s->done = true;
            s->cv_ready.notify_all();
            return;
          }
          s->q.push_back(std::move(*b));
          s->cv_ready.notify_all();
        }
      } catch (...) {
        std::lock_guard lock(s->mu);
        s->err = std::current_exception();
        s->done = true;
        s->cv_ready.notify_all();
      }
    });
  }
}

std::optional<Batch> DataLoader::next() {
  OC_CHECK(impl_ != nullptr, "DataLoader::next() before start_epoch()");
  if (cfg_.train && pos_.batches >= num_batches_) return std::nullopt;
  for (int tried = 0; tried < nw_;) {
    const int w = impl_->next_worker;
    Slot& s = *impl_->slots[size_t(w)];
    impl_->next_worker = (w + 1) % nw_;
    if (!s.active) {
      ++tried;
      continue;
    }
    std::optional<Batch> b;
    if (impl_->threaded) {
      std::unique_lock lock(s.mu);
      s.cv_ready.wait(lock, [&] { return !s.q.empty() || s.done; });
      if (!s.q.empty()) {
        b = std::move(s.q.front());
        s.q.pop_front();
        s.cv_space.notify_all();
      } else if (s.err) {
        std::exception_ptr e = s.err;
        lock.unlock();
        s.active = false;
        std::rethrow_exception(e);
      }
    } else {
      b = s.prod->next();
    }
    if (!b) {
      s.active = false;
      ++tried;
      continue;
    }
    b->index = pos_.batches++;
    pos_.workers[size_t(w)] = b->pos;
    return b;
  }
  if (cfg_.train && pos_.batches == 0)
    OC_USER_ERROR("data: every worker went through its shards without filling one batch of {} in epoch {} (see the "
                  "warnings above; {}); nothing to train on",
                  cfg_.batch_size, pos_.epoch, stats_->summary());
  if (cfg_.train && pos_.batches < num_batches_)
    log::warn("data: the epoch ended after {} of {} batches", pos_.batches, num_batches_);
  return std::nullopt;
}

}  // namespace oc::data
