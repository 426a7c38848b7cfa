#include "serve/rate_limit.h"

#include <algorithm>

namespace oc::serve {

RateLimiter::RateLimiter(double per_second, double burst) : rate_(per_second), burst_(std::max(1.0, burst)) {}

double RateLimiter::take(const std::string& key, Clock::time_point now) {
  if (rate_ <= 0) return 0;
  if (buckets_.size() >= prune_at_) prune(now);
  auto [it, fresh] = buckets_.try_emplace(key, Bucket{burst_, now});
  Bucket& b = it->second;
  if (!fresh && now > b.at) {
    b.tokens = std::min(burst_, b.tokens + std::chrono::duration<double>(now - b.at).count() * rate_);
    b.at = now;
  }
  if (b.tokens >= 1) {
    b.tokens -= 1;
    return 0;
  }
  return (1 - b.tokens) / rate_;
}

void RateLimiter::prune(Clock::time_point now) {
  for (auto it = buckets_.begin(); it != buckets_.end();) {
    const double refill = std::chrono::duration<double>(now - it->second.at).count() * rate_;
    it = it->second.tokens + refill >= burst_ ? buckets_.erase(it) : std::next(it);
  }
  prune_at_ = std::max<size_t>(1024, 2 * buckets_.size());
}

}  // namespace oc::serve
