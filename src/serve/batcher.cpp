#include "serve/batcher.h"

#include <algorithm>
#include <utility>

#include "core/check.h"
#include "image/transform.h"

namespace oc::serve {

using Clock = std::chrono::steady_clock;

namespace {
thread_local std::shared_ptr<std::atomic<bool>> t_gone;
}

CancelScope::CancelScope(std::shared_ptr<std::atomic<bool>> gone) : prev_(std::exchange(t_gone, std::move(gone))) {}
CancelScope::~CancelScope() { t_gone = std::move(prev_); }

Batcher::Batcher(InferenceModel& enc, BatcherOptions opt, Metrics* metrics)
    : enc_(enc), opt_(opt), metrics_(metrics) {
  if (opt_.max_queued_inputs <= 0) opt_.max_queued_inputs = 8 * int64_t(opt_.max_batch);
  OC_CHECK(opt_.max_batch >= 1 && opt_.max_batch <= enc.max_batch(), "max_batch {} (the model planned {})",
           opt_.max_batch, enc.max_batch());
  worker_ = std::thread([this] { loop(); });
}

Batcher::~Batcher() { stop(); }

void Batcher::stop() {
  {
    std::lock_guard<std::mutex> l(mu_);
    stopping_ = true;
    for (auto& j : q_) j->done.set_exception(std::make_exception_ptr(ShuttingDown()));
    q_.clear();
    queued_inputs_ = 0;
  }
  cv_.notify_all();
  if (worker_.joinable()) worker_.join();
}

int64_t Batcher::queue_depth() const {
  std::lock_guard<std::mutex> l(mu_);
  return int64_t(q_.size());
}

std::vector<float> Batcher::run(Kind kind, std::vector<int32_t> ids, std::vector<uint8_t> hwc, int64_t n) {
  auto job = std::make_unique<Job>(Job{kind, std::move(ids), std::move(hwc), n, Clock::now(), {}, t_gone});
  auto fut = job->done.get_future();
  {
    std::lock_guard<std::mutex> l(mu_);
    if (stopping_) throw ShuttingDown();
    if (t_gone && t_gone->load()) throw ClientGone();  // nobody would read the answer
    drop_gone();
    // Bounded in jobs and in inputs: 256 jobs of 64 texts were 16,384 forward rows queued.
    if (int64_t(q_.size()) >= opt_.max_queue || (!q_.empty() && queued_inputs_ + n > opt_.max_queued_inputs)) {
      if (metrics_) metrics_->rejected();
      throw QueueFull();
    }
    q_.push_back(std::move(job));
    queued_inputs_ += n;
    if (metrics_) metrics_->set_queue_depth(int64_t(q_.size()));
  }
  cv_.notify_all();
  return fut.get();
}

// Waits (lock held) until the oldest job's kind has max_batch inputs queued, its wait is
// over, or the server stops; then removes jobs of that kind, oldest first, up to max_batch
// inputs (a larger single job goes alone and is split into passes by forward()).
auto Batcher::take_batch(std::unique_lock<std::mutex>& lock) -> std::vector<std::unique_ptr<Job>> {
  cv_.wait(lock, [&] { return stopping_ || !q_.empty(); });
  if (q_.empty()) return {};
  const Kind kind = q_.front()->kind;
  const auto deadline = q_.front()->arrived + std::chrono::milliseconds(opt_.max_wait_ms);
  auto queued = [&] {
    int64_t n = 0;
    for (auto& j : q_) n += j->kind == kind ? j->n : 0;
    return n;
  };
  cv_.wait_until(lock, deadline, [&] { return stopping_ || queued() >= opt_.max_batch; });
  drop_gone();
  if (q_.empty()) return {};
  std::vector<std::unique_ptr<Job>> batch;
  int64_t n = 0;
  for (auto it = q_.begin(); it != q_.end();) {
    if ((*it)->kind == kind && (batch.empty() || n + (*it)->n <= opt_.max_batch)) {
      n += (*it)->n;
      queued_inputs_ -= (*it)->n;
      batch.push_back(std::move(*it));
      it = q_.erase(it);
    } else {
      ++it;
    }
  }
  if (metrics_) metrics_->set_queue_depth(int64_t(q_.size()));
  return batch;
}

void Batcher::drop_gone() {
  for (auto it = q_.begin(); it != q_.end();) {
    if ((*it)->gone && (*it)->gone->load()) {
      (*it)->done.set_exception(std::make_exception_ptr(ClientGone()));
      queued_inputs_ -= (*it)->n;
      it = q_.erase(it);
    } else {
      ++it;
    }
  }
  if (metrics_) metrics_->set_queue_depth(int64_t(q_.size()));
}

void Batcher::forward(std::vector<std::unique_ptr<Job>>& jobs) {
  const Kind kind = jobs[0]->kind;
  const int64_t E = enc_.embed_dim(), B = opt_.max_batch;
  const int S = enc_.image_size();
  const size_t row = kind == Kind::Text ? size_t(enc_.context_length()) : size_t(3 * S * S);
  int64_t total = 0;
  for (auto& j : jobs) total += j->n;
  std::vector<int32_t> ids;
  for (auto& j : jobs)
    if (kind == Kind::Text) ids.insert(ids.end(), j->ids.begin(), j->ids.end());
  // Images: one job (a full batch in one request) is read where it is; several are gathered
  // into hwc_. hwc_ and pixels_ live as long as the batcher: a batch of 64 images is 9.6 MB of
  // pixels and 38.5 MB of floats, which fresh vectors would zero and fault in page by page on
  // every batch, on the cores the model runs on.
  const uint8_t* hwc = nullptr;
  if (kind == Kind::Image && jobs.size() == 1) {
    hwc = jobs[0]->hwc.data();
  } else if (kind == Kind::Image) {
    hwc_.clear();
    for (auto& j : jobs) hwc_.insert(hwc_.end(), j->hwc.begin(), j->hwc.end());
    hwc = hwc_.data();
  }
  if (kind == Kind::Image && pixels_.size() < size_t(std::min(B, total)) * row) pixels_.resize(size_t(std::min(B, total)) * row);
  std::vector<float> out(size_t(total * E));
  for (int64_t i = 0; i < total; i += B) {
    const int64_t n = std::min(B, total - i);
    if (kind == Kind::Text) {
      enc_.encode_tokens(ids.data() + size_t(i) * row, n, out.data() + i * E);
    } else {  // this pass's floats, exactly as preprocess_eval's float form computes them
      for (int64_t r = 0; r < n; ++r)
        normalize_chw(hwc + size_t(i + r) * row, S, enc_.preprocess_cfg(), {pixels_.data() + size_t(r) * row, row});
      enc_.encode_pixels(pixels_.data(), n, out.data() + i * E);
    }
    if (metrics_) metrics_->batch(kind == Kind::Text ? "text" : "image", int(n));
  }
  int64_t at = 0;
  for (auto& j : jobs) {
    j->done.set_value(std::vector<float>(out.begin() + at * E, out.begin() + (at + j->n) * E));
    at += j->n;
  }
}

void Batcher::loop() {
  for (;;) {
    std::vector<std::unique_ptr<Job>> batch;
    {
      std::unique_lock<std::mutex> lock(mu_);
      batch = take_batch(lock);
      if (batch.empty() && stopping_) return;  // stopping and nothing left
    }
    if (batch.empty()) continue;  // every job waiting was dropped (its client went away)
    try {
      forward(batch);
    } catch (...) {
      for (auto& j : batch) j->done.set_exception(std::current_exception());
    }
  }
}

}  // namespace oc::serve
