// The download pipeline: fetch (main thread, curl multi) -> decode/resize/encode (workers)
// -> shard writer (whichever thread settles a shard's last sample).
#include "download/downloader.h"

#include <dirent.h>
#include <unistd.h>

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/timer.h"
#include "data/shard_writer.h"
#include "image/codec.h"
#include "image/transform.h"

namespace oc::download {

namespace {

constexpr int kOpenShards = 3;  // shards whose samples may be in flight at once (memory bound)

ImageU8 pad_white(const ImageU8& r, int size) {
  ImageU8 out;
  out.width = std::max(size, r.width);
  out.height = std::max(size, r.height);
  out.rgb.assign(size_t(out.width) * out.height * 3, 255);
  const int ox = (out.width - r.width) / 2, oy = (out.height - r.height) / 2;  // PadIfNeeded centering
  for (int y = 0; y < r.height; ++y)
    std::copy(r.row(y), r.row(y) + size_t(r.width) * 3, out.row(y + oy) + size_t(ox) * 3);
  return out;
}

}  // namespace

Processed process_image(std::span<const uint8_t> body, const DownloadOptions& o) {
  Processed p;
  DecodeOptions d;
  d.max_pixels = o.max_pixels;
  auto img = decode_image(body, d);
  if (!img) {
    p.error = img.error().find("pixel") != std::string::npos ? "image area too large" : "Image decoding error";
    return p;
  }
  p.original_width = img->width;
  p.original_height = img->height;
  const int w = img->width, h = img->height, s = o.image_size;
  ImageU8 out;
  using data::ShardResize;
  if (o.resize_only_if_bigger && o.resize_mode != ShardResize::No) {
    // As img2dataset: the relevant side must exceed image_size; border still pads.
    const bool by_longest = o.resize_mode == ShardResize::Border;
    const int side = by_longest ? std::max(w, h) : std::min(w, h);
    if (side <= s) out = by_longest ? pad_white(*img, s) : std::move(*img);
    else out = data::resize_for_shard(*img, s, o.resize_mode);
  } else {
    out = data::resize_for_shard(*img, s, o.resize_mode);
  }
  auto jpg = encode_image(out, ImageFormat::Jpeg, o.encode_quality);
  if (!jpg) {
    p.error = jpg.error();
    return p;
  }
  p.ok = true;
  p.jpg = std::move(*jpg);
  p.width = out.width;
  p.height = out.height;
  return p;
}

namespace {

enum class SampleStatus : uint8_t { Pending, Success, FailedToDownload, FailedToResize };

struct Settled {
  SampleStatus status = SampleStatus::Pending;
  std::string error;
  Processed img;
};

struct Shard {
  int64_t id = 0, begin = 0, end = 0;
  std::vector<Settled> out;
  std::atomic<int64_t> remaining{0};
  std::atomic<bool> written{false};
  double start_time = 0;
};

struct Job {
  Shard* shard;
  int64_t i;  // index within the shard
  std::vector<uint8_t> body;
};

// Where fetch_all is in the rows: the shard and row it adds next, the first shard not yet
// written, and which sample each fetch tag is for.
struct FetchCursor {
  size_t shard = 0, first_open = 0;
  int64_t row_in_shard = 0;
  std::map<size_t, std::pair<Shard*, int64_t>> by_tag;
  size_t tag = 0;
};

double unix_time() { return double(std::chrono::duration_cast<std::chrono::microseconds>(
                                       std::chrono::system_clock::now().time_since_epoch()).count()) * 1e-6; }

class Pipeline {
 public:
  Pipeline(const std::vector<UrlRow>& rows, const DownloadOptions& o) : rows_(rows), o_(o) {}

  void settle(Shard* s, int64_t i, Settled r) {
    if (r.status == SampleStatus::Success) ok_.fetch_add(1);
    s->out[size_t(i)] = std::move(r);
    done_.fetch_add(1);
    if (s->remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) write(s);
  }

  void write(Shard* s) {
    std::vector<data::ShardSample> samples;
    nlohmann::json status_dict = nlohmann::json::object();
    int64_t succ = 0, fdl = 0, frs = 0;
    for (int64_t i = 0; i < s->end - s->begin; ++i) {
      Settled& r = s->out[size_t(i)];
      const UrlRow& row = rows_[size_t(s->begin + i)];
      std::string key = data::sample_key(s->id, i, o_.shard_size);
      std::string msg = r.status == SampleStatus::Success ? "success" : r.error;
      status_dict[msg] = status_dict.value(msg, 0) + 1;
      if (r.status == SampleStatus::FailedToDownload) ++fdl;
      if (r.status == SampleStatus::FailedToResize) ++frs;
      if (r.status != SampleStatus::Success) continue;
      ++succ;
      data::ShardSample smp;
      smp.key = key;
      nlohmann::json meta = {{"url", row.url},
                             {"caption", row.caption ? nlohmann::json(*row.caption) : nlohmann::json(nullptr)},
                             {"key", key},
                             {"status", "success"},
                             {"error_message", nullptr},
                             {"width", r.img.width},
                             {"height", r.img.height},
                             {"original_width", r.img.original_width},
                             {"original_height", r.img.original_height}};
      smp.add("jpg", std::move(r.img.jpg));
      if (row.caption) smp.add("txt", *row.caption);
      smp.add("json", meta.dump());
      samples.push_back(std::move(smp));
    }
    const double end = unix_time();
    nlohmann::json stats = {{"count", s->end - s->begin},
                            {"successes", succ},
                            {"failed_to_download", fdl},
                            {"failed_to_resize", frs},
                            {"duration", end - s->start_time},
                            {"start_time", s->start_time},
                            {"end_time", end},
                            {"status_dict", status_dict}};
    data::write_shard(o_.output_folder, s->id, samples, stats);
    s->out.clear();
    s->out.shrink_to_fit();
    s->written.store(true);
    shards_written_.fetch_add(1);
  }

  void worker() {
    for (;;) {
      Job j;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return closed_ || !queue_.empty(); });
        if (queue_.empty()) return;
        j = std::move(queue_.front());
        queue_.pop_front();
      }
      try {
        Settled r;
        r.img = process_image(j.body, o_);
        r.status = r.img.ok ? SampleStatus::Success : SampleStatus::FailedToResize;
        r.error = r.img.error;
        std::vector<uint8_t>().swap(j.body);
        settle(j.shard, j.i, std::move(r));
      } catch (...) {
        std::lock_guard<std::mutex> lk(mu_);
        if (!error_) error_ = std::current_exception();
      }
      queued_.fetch_sub(1);
    }
  }

  DownloadSummary run() {
    DownloadSummary sum;
    const double t0 = now_seconds();
    const int64_t n = int64_t(rows_.size());
    const int64_t nshards = (n + o_.shard_size - 1) / o_.shard_size;
    sum.shards = nshards;
    sum.count = n;
    std::vector<std::unique_ptr<Shard>> todo = shards_to_do(nshards, sum.shards_skipped);
    int64_t total = 0;
    for (auto& s : todo) total += s->end - s->begin;
    sum.fetched = total;
    FetchOptions fo = o_.fetch;
    fo.concurrency = std::max(1, o_.processes * o_.threads);
    Fetcher fetcher(fo);
    std::vector<std::thread> workers;
    for (int w = 0; w < std::max(1, o_.processes); ++w) workers.emplace_back([this] { worker(); });
    struct Joiner {
      Pipeline* p;
      std::vector<std::thread>* w;
      ~Joiner() {
        { std::lock_guard<std::mutex> lk(p->mu_); p->closed_ = true; }
        p->cv_.notify_all();
        for (auto& t : *w) t.join();
      }
    } joiner{this, &workers};
    fetch_all(fetcher, size_t(fo.concurrency), todo, total);
    data::write_sizes(o_.output_folder, nshards);
    add_shard_stats(nshards, sum);
    sum.seconds = now_seconds() - t0;
    return sum;
  }

  // The shards not written before (incremental mode), with their rows.
  std::vector<std::unique_ptr<Shard>> shards_to_do(int64_t nshards, int64_t& skipped) const {
    const int64_t n = int64_t(rows_.size());
    std::vector<std::unique_ptr<Shard>> todo;
    for (int64_t s = 0; s < nshards; ++s) {
      if (data::shard_done(o_.output_folder, s)) {
        ++skipped;
        continue;
      }
      auto sh = std::make_unique<Shard>();
      sh->id = s;
      sh->begin = s * o_.shard_size;
      sh->end = std::min(n, sh->begin + o_.shard_size);
      todo.push_back(std::move(sh));
    }
    return todo;
  }

  // The main thread's loop: keeps the fetcher fed with the next rows (at most kOpenShards
  // shards open, the decode queue bounded) and hands what it fetched to the workers, until
  // every shard is written.
  void fetch_all(Fetcher& fetcher, size_t concurrency, const std::vector<std::unique_ptr<Shard>>& todo, int64_t total) {
    data::Progress progress("download", total);
    const size_t max_queue = size_t(64 * std::max(1, o_.processes));
    FetchCursor c;
    while (true) {
      while (c.first_open < todo.size() && todo[c.first_open]->written.load()) ++c.first_open;
      while (c.shard < todo.size() && fetcher.in_flight() < concurrency && size_t(queued_.load()) < max_queue &&
             c.shard < c.first_open + kOpenShards)
        fetch_next_row(fetcher, todo, c);
      for (Fetched& f : fetcher.poll(50)) take_fetched(f, c);
      rethrow_worker_error();
      progress.update(done_.load(), ok_.load());
      // Done when every shard is written (not when every sample is settled: the last
      // shard may still be being written by a worker).
      if (shards_written_.load() == int64_t(todo.size())) break;
      if (fetcher.in_flight() == 0) {
        usleep(2000);  // throttled by the decode queue or the open-shard bound
      }
    }
    progress.finish();
    rethrow_worker_error();
  }

  void fetch_next_row(Fetcher& fetcher, const std::vector<std::unique_ptr<Shard>>& todo, FetchCursor& c) {
    Shard* s = todo[c.shard].get();
    if (c.row_in_shard == 0) {
      s->out.resize(size_t(s->end - s->begin));
      s->remaining.store(s->end - s->begin);
      s->start_time = unix_time();
    }
    c.by_tag[c.tag] = {s, c.row_in_shard};
    fetcher.add(c.tag++, rows_[size_t(s->begin + c.row_in_shard)].url);
    if (++c.row_in_shard == s->end - s->begin) ++c.shard, c.row_in_shard = 0;
  }

  // A failed fetch settles its sample; a body goes to the workers' queue.
  void take_fetched(Fetched& f, FetchCursor& c) {
    auto [s, i] = c.by_tag.at(f.index);
    c.by_tag.erase(f.index);
    if (!f.error.empty()) {
      Settled r;
      r.status = SampleStatus::FailedToDownload;
      r.error = std::move(f.error);
      settle(s, i, std::move(r));
    } else {
      queued_.fetch_add(1);
      {
        std::lock_guard<std::mutex> lk(mu_);
        queue_.push_back({s, i, std::move(f.body)});
      }
      cv_.notify_one();
    }
  }

  void rethrow_worker_error() {
    std::lock_guard<std::mutex> lk(mu_);
    if (error_) std::rethrow_exception(error_);
  }

  // The counts of every shard's stats file, those written before included.
  void add_shard_stats(int64_t nshards, DownloadSummary& sum) const {
    for (int64_t s = 0; s < nshards; ++s) {
      auto txt = fs::read_text(fs::join(o_.output_folder, data::stats_name(s)));
      if (!txt) continue;
      auto j = nlohmann::json::parse(*txt, nullptr, false);
      if (j.is_discarded()) continue;
      sum.successes += j.value("successes", int64_t(0));
      sum.failed_to_download += j.value("failed_to_download", int64_t(0));
      sum.failed_to_resize += j.value("failed_to_resize", int64_t(0));
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Job> queue_;
  bool closed_ = false;
  std::exception_ptr error_;

 private:
  const std::vector<UrlRow>& rows_;
  const DownloadOptions& o_;
  std::atomic<int64_t> done_{0}, ok_{0}, queued_{0}, shards_written_{0};
};

// --incremental-mode overwrite: remove earlier shards, stats and sizes.json (only those, not
// the whole folder, so a mistyped --output-folder cannot delete unrelated files).
void remove_previous(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) return;
  std::vector<std::string> victims;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    auto ends = [&](const std::string& suf) {
      return n.size() >= suf.size() && n.compare(n.size() - suf.size(), std::string::npos, suf) == 0;
    };
    if (ends(".tar") || ends("_stats.json") || n == "sizes.json") victims.push_back(fs::join(dir, n));
  }
  closedir(d);
  for (const auto& v : victims) ::unlink(v.c_str());
}

}  // namespace

DownloadSummary download(const std::vector<UrlRow>& rows, const DownloadOptions& o) {
  OC_CHECK(o.shard_size > 0, "shard size must be positive");
  fs::make_dirs(o.output_folder);
  if (o.overwrite) remove_previous(o.output_folder);
  Pipeline p(rows, o);
  return p.run();
}

}  // namespace oc::download
