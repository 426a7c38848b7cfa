#include "data/producers.h"

#include <algorithm>

#include <fmt/format.h>

#include "core/check.h"
#include "core/log.h"
#include "core/fs.h"
#include "data/epoch.h"
#include "data/shuffle.h"
#include "data/synthetic.h"
#include "data/webdataset.h"
#include "image/codec.h"
#include "image/transform.h"
#include "text/text_tokenizer.h"

namespace oc::data {

void BatchPool::put(Batch&& b) {
  std::lock_guard lock(mu_);
  if (free_.size() < cap_) free_.push_back(std::move(b));
}

std::optional<Batch> BatchPool::take() {
  std::lock_guard lock(mu_);
  if (free_.empty()) return std::nullopt;
  Batch b = std::move(free_.back());
  free_.pop_back();
  return b;
}

Batch alloc_batch(const ProducerCtx& ctx, int rows) {
  const DataConfig& cfg = *ctx.cfg;
  Batch b;
  b.images = HostVector<float>(HostAlloc<float>(*ctx.host_alloc));
  b.pixels = HostVector<uint8_t>(HostAlloc<uint8_t>(*ctx.host_alloc));
  if (ctx.pool) {
    if (auto r = ctx.pool->take()) b = std::move(*r);
  }
  b.size = rows;
  b.image_size = cfg.preprocess.size;
  b.context_length = cfg.context_length;
  const size_t n = size_t(rows) * 3 * b.image_size * b.image_size;  // every row is overwritten
  b.images.resize(ctx.pixels ? 0 : n);
  b.pixels.resize(ctx.pixels ? n : 0);
  b.tokens.assign(size_t(rows) * b.context_length, 0);
  b.labels.assign(size_t(rows), -1);
  b.keys.assign(size_t(rows), std::string());
  return b;
}

void shrink_batch(Batch* b, int rows) {
  b->size = rows;
  const size_t n = size_t(rows) * 3 * b->image_size * b->image_size;
  b->images.resize(b->images.empty() ? 0 : n);
  b->pixels.resize(b->pixels.empty() ? 0 : n);
  b->tokens.resize(size_t(rows) * b->context_length);
  b->labels.resize(size_t(rows));
  b->keys.resize(size_t(rows));
}

bool make_sample(const ProducerCtx& ctx, const SampleIn& in, uint64_t aug_seed, Batch* b, int row) {
  const DataConfig& cfg = *ctx.cfg;
  std::span<int32_t> tok(b->tokens.data() + size_t(row) * b->context_length, size_t(b->context_length));
  if (auto st = ctx.tok->tokenize(in.caption, tok); !st) {
    ctx.stats->skip(Skip::BadCaption, fmt::format("{}: {}", in.key, st.error()));
    return false;
  }
  // keep_mode: the transform resizes in the file's PIL mode and converts to RGB after (as
  // OpenCLIP's CsvDataset, Image.open without convert); otherwise RGB first (webdataset's
  // decode("pilrgb"), torchvision's ImageFolder loader).
  std::optional<ImageU8> decoded;
  std::optional<SourceImage> source;
  const ImageU8* img = in.image;
  if (!img) {
    DecodeOptions opt;
    opt.min_shortest_side = cfg.decode_min_side;
    std::string error;
    if (in.keep_mode) {
      auto r = decode_source_image(in.image_bytes, opt);
      if (r) source = std::move(*r);
      else error = r.error();
    } else {
      auto r = decode_image(in.image_bytes, opt);
      if (r) decoded = std::move(*r), img = &*decoded;
      else error = r.error();
    }
    if (!error.empty()) {
      ctx.stats->skip(Skip::DecodeError, fmt::format("{}: {}", in.key, error));
      return false;
    }
  }
  const size_t plane = size_t(3) * b->image_size * b->image_size;
  auto transform = [&](auto out) {  // fp32 images or uint8 pixels (BatchMemory::pixels)
    if (cfg.train) {
      Rng rng(aug_seed);
      if (source) preprocess_train(*source, cfg.preprocess, rng, out);
      else preprocess_train(*img, cfg.preprocess, rng, out);
    } else {
      if (source) preprocess_eval(*source, cfg.preprocess, out);
      else preprocess_eval(*img, cfg.preprocess, out);
    }
  };
  if (ctx.pixels) {
    transform(std::span<uint8_t>(b->pixels.data() + size_t(row) * plane, plane));
  } else if (ctx.channels_last) {  // the pixels, then the floats in the same HWC order
    thread_local std::vector<uint8_t> hwc;
    hwc.resize(plane);
    transform(std::span<uint8_t>(hwc));
    normalize_hwc(hwc.data(), b->image_size, cfg.preprocess, std::span<float>(b->images.data() + size_t(row) * plane, plane));
  } else {
    transform(std::span<float>(b->images.data() + size_t(row) * plane, plane));
  }
  b->labels[size_t(row)] = in.label;
  b->keys[size_t(row)] = in.key;
  return true;
}

namespace {

bool stopping(const ProducerCtx& c) { return c.stop && c.stop->load(std::memory_order_relaxed); }

class StreamProducer final : public Producer {
 public:
  StreamProducer(const ProducerCtx& ctx, const std::vector<std::string>& shards, const std::vector<double>& weights,
                 int64_t worker_batches, const WorkerPos& from)
      : ctx_(ctx), shards_(shards), weights_(weights), worker_batches_(worker_batches) {
    const DataConfig& c = *ctx_.cfg;
    gw_ = uint64_t(c.rank) * uint64_t(ctx_.num_workers) + uint64_t(ctx_.worker);
    pos_ = from;
    begin_pass(pos_.pass);
    // Fast-forward: the same shards and shuffle, the samples read but not decoded.
    // Image payloads are not even read (lazy mode): only the samples still in the shuffle
    // buffer afterwards are loaded, when they come out.
    quiet_.set_quiet(true);
    stream_->set_stats(&quiet_);
    stream_->set_lazy_images(true);
    for (int64_t i = 0; i < from.pulled && !stopping(ctx_); ++i)
      if (!shuf_->next()) break;
    stream_->set_lazy_images(false);
    stream_->set_stats(ctx_.stats);
    batches_in_pass_ = from.pulled > 0 ? 1 : 0;  // positions are taken at batch ends
  }

  std::optional<Batch> next() override {
    const DataConfig& c = *ctx_.cfg;
    const bool train = worker_batches_ >= 0;
    if (train && pos_.batches >= worker_batches_) return std::nullopt;
    Batch b = alloc_batch(ctx_, c.batch_size);
    int row = 0;
    int64_t skipped_run = 0;
    while (!stopping(ctx_)) {
      auto s = shuf_->next();
      if (!s) {
        if (!train) {
          if (row == 0) return std::nullopt;
          shrink_batch(&b, row);
          return finish(std::move(b));
        }
        // batched(partial=False) drops the tail of a pass; with_epoch restarts the pipeline.
        // A worker whose shards cannot fill one batch ends its share of the epoch (the other
        // workers go on); the loader stops the run only when no worker has data.
        if (batches_in_pass_ == 0) {
          log::warn("data: worker {} of rank {} went through its {} shard(s) without filling one batch of {} (see the "
                    "warnings above; {}); it ends its share of epoch {} here",
                    ctx_.worker, c.rank, resampler_ ? shards_.size() : my_shards_.size(), c.batch_size,
                    ctx_.stats->summary(), ctx_.epoch);
          return std::nullopt;
        }
        ++pos_.pass;
        pos_.pulled = 0;
        batches_in_pass_ = 0;
        begin_pass(pos_.pass);
        row = 0;
        continue;
      }
      const int64_t index = pos_.pulled++;
      if (auto st = s->materialize(); !st) {
        ctx_.stats->skip(Skip::ShardError, st.error());
        continue;
      }
      Skip why;
      auto sel = select_fields(*s, &why);
      if (!sel) {
        ctx_.stats->skip(why, fmt::format("{} in {}", s->key, s->url));
        if (++skipped_run >= 100000)
          OC_USER_ERROR("data: 100000 samples in a row were unusable ({}); check the shards", ctx_.stats->summary());
        continue;
      }
      SampleIn in;
      in.image_bytes = *sel->image;
      in.caption = std::string_view(reinterpret_cast<const char*>(sel->caption->data()), sel->caption->size());
      in.key = s->key;
      if (sel->cls) {
        auto lab = parse_label(std::string_view(reinterpret_cast<const char*>(sel->cls->data()), sel->cls->size()));
        if (lab) in.label = *lab;
        else ctx_.stats->skip(Skip::BadLabel, fmt::format("{} in {}: .cls is not an integer (label -1)", s->key, s->url));
      }
      uint64_t aug = stream_seed(c.seed, ctx_.epoch, SeedUse::Augment, gw_, (uint64_t(pos_.pass) << 40) + uint64_t(index));
      if (!make_sample(ctx_, in, aug, &b, row)) {
        if (++skipped_run >= 100000)
          OC_USER_ERROR("data: 100000 samples in a row were unusable ({}); check the shards", ctx_.stats->summary());
        continue;
      }
      skipped_run = 0;
      if (++row == c.batch_size) {
        ++batches_in_pass_;
        return finish(std::move(b));
      }
    }
    return std::nullopt;
  }

 private:
  Batch finish(Batch b) {
    ++pos_.batches;
    ctx_.stats->add_samples(b.size);
    b.worker = ctx_.worker;
    b.pos = pos_;
    return b;
  }

  void begin_pass(int64_t pass) {
    const DataConfig& c = *ctx_.cfg;
    const bool train = worker_batches_ >= 0;
    url_i_ = 0;
    TarSampleStream::UrlFn urls;
    if (c.resampled && train) {
      // ResampledShards2: one endless pass per epoch, seeded per rank and worker.
      resampler_ = std::make_unique<ShardResampler>(shards_, weights_, c.seed, ctx_.epoch, c.rank, ctx_.worker);
      urls = [this]() -> std::optional<std::string> { return resampler_->next(); };
    } else {
      my_shards_ = train ? worker_shards(shards_, c.seed, ctx_.epoch, c.shuffle, c.rank, c.world_size, ctx_.worker,
                                         ctx_.num_workers)
                         : every_nth(shards_, ctx_.worker, ctx_.num_workers);  // val: split_by_worker only
      urls = [this]() -> std::optional<std::string> {
        if (url_i_ >= my_shards_.size()) return std::nullopt;
        return my_shards_[url_i_++];
      };
    }
    stream_ = std::make_unique<TarSampleStream>(std::move(urls), ctx_.stats);
    const bool shuffle = train && c.shuffle;
    shuf_ = std::make_unique<ShuffleBuffer<WdsSample>>(
        [this]() { return stream_->next(); }, shuffle ? c.sample_shuffle_size : 1, c.sample_shuffle_initial,
        stream_seed(c.seed, ctx_.epoch, SeedUse::SampleShuffle, gw_, uint64_t(pass)));
  }

  ProducerCtx ctx_;
  DataStats quiet_;  // counts of the fast-forward after a resume: already reported once
  const std::vector<std::string>& shards_;
  const std::vector<double>& weights_;
  int64_t worker_batches_;
  uint64_t gw_ = 0;
  WorkerPos pos_;
  int64_t batches_in_pass_ = 0;
  std::vector<std::string> my_shards_;
  size_t url_i_ = 0;
  std::unique_ptr<ShardResampler> resampler_;
  std::unique_ptr<TarSampleStream> stream_;
  std::unique_ptr<ShuffleBuffer<WdsSample>> shuf_;
};

class IndexedProducer final : public Producer {
 public:
  IndexedProducer(const ProducerCtx& ctx, std::shared_ptr<const CsvData> csv,
                  std::shared_ptr<const std::vector<int64_t>> order, int64_t num_batches, int64_t dataset_size,
                  const WorkerPos& from)
      : ctx_(ctx), csv_(std::move(csv)), order_(std::move(order)), num_batches_(num_batches), n_(dataset_size),
        pos_(from) {}

  std::optional<Batch> next() override {
    const DataConfig& c = *ctx_.cfg;
    const int64_t g = ctx_.worker + pos_.batches * ctx_.num_workers;  // PyTorch: batch g -> worker g % W
    if (g >= num_batches_ || stopping(ctx_)) return std::nullopt;
    const int64_t first = g * c.batch_size;
    const int rows = int(std::min<int64_t>(c.batch_size, int64_t(order_->size()) - first));
    Batch b = alloc_batch(ctx_, rows);
    for (int r = 0; r < rows; ++r) {
      // A sample that fails is replaced by the next index that works (counted), so batches
      // keep their size: distributed training needs the same batch on every rank.
      int64_t idx = (*order_)[size_t(first + r)];
      bool ok = false;
      for (int64_t t = 0; t < n_ && !ok; ++t) ok = fetch((idx + t) % n_, uint64_t(first + r), &b, r);
      if (!ok) OC_USER_ERROR("data: none of the {} samples could be loaded ({})", n_, ctx_.stats->summary());
    }
    ++pos_.batches;
    ctx_.stats->add_samples(rows);
    b.worker = ctx_.worker;
    b.pos = pos_;
    return b;
  }

 private:
  bool fetch(int64_t idx, uint64_t slot, Batch* b, int row) {
    const DataConfig& c = *ctx_.cfg;
    uint64_t aug = stream_seed(c.seed, ctx_.epoch, SeedUse::Augment, uint64_t(c.rank), slot);
    SampleIn in;
    if (csv_) {
      const std::string& path = csv_->paths[size_t(idx)];
      in.key = path;
      in.caption = csv_->captions[size_t(idx)];
      if (!csv_->labels.empty()) in.label = csv_->labels[size_t(idx)];
      auto bytes = fs::read_file(path);
      if (!bytes) {
        ctx_.stats->skip(Skip::FileError, fmt::format("CSV data row {}: {}", idx + 1, bytes.error()));
        return false;
      }
      in.image_bytes = *bytes;
      in.keep_mode = !c.csv_rgb_first;
      return make_sample(ctx_, in, aug, b, row);
    }
    SyntheticSample s = c.type == DatasetType::SyntheticLearnable ? learnable_sample(idx)
                                                                   : synthetic_sample(idx, c.preprocess.size);
    in.image = &s.image;
    in.caption = s.caption;
    in.label = s.label;
    in.key = fmt::format("synthetic:{}", idx);
    return make_sample(ctx_, in, aug, b, row);
  }

  ProducerCtx ctx_;
  std::shared_ptr<const CsvData> csv_;
  std::shared_ptr<const std::vector<int64_t>> order_;
  int64_t num_batches_, n_;
  WorkerPos pos_;
};

}  // namespace

std::unique_ptr<Producer> make_stream_producer(const ProducerCtx& ctx, const std::vector<std::string>& shards,
                                               const std::vector<double>& weights, int64_t worker_batches,
                                               const WorkerPos& from) {
  return std::make_unique<StreamProducer>(ctx, shards, weights, worker_batches, from);
}

std::unique_ptr<Producer> make_indexed_producer(const ProducerCtx& ctx, std::shared_ptr<const CsvData> csv,
                                                std::shared_ptr<const std::vector<int64_t>> order,
                                                int64_t num_batches, int64_t dataset_size, const WorkerPos& from) {
  return std::make_unique<IndexedProducer>(ctx, std::move(csv), std::move(order), num_batches, dataset_size, from);
}

}  // namespace oc::data
