// The per-address request rate of `openclip serve` (issue 40, item 4; --rate-limit,
// --rate-burst): a token bucket per client address (IPv4 whole, IPv6 by its /64, as the
// connection cap counts them). Each request takes a token; tokens come back at `per_second`
// up to `burst`. A request without a token is refused with 429 and Retry-After: the seconds
// until the next token. Time is passed in (tests inject it); one thread uses an instance.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>
#include <unordered_map>

namespace oc::serve {

class RateLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  // per_second <= 0: no limit. burst < 1 is taken as 1.
  RateLimiter(double per_second, double burst);
  bool enabled() const { return rate_ > 0; }
  // 0 when the request may go ahead (its token is taken); otherwise the seconds until the
  // address has a token again (nothing is taken).
  double take(const std::string& key, Clock::time_point now);
  // Addresses tracked. Buckets that have refilled are forgotten whenever the table has
  // doubled since the last pruning, so the table holds only recently active addresses.
  size_t tracked() const { return buckets_.size(); }

 private:
  struct Bucket {
    double tokens;
    Clock::time_point at;
  };
  void prune(Clock::time_point now);
  double rate_, burst_;
  size_t prune_at_ = 1024;
  std::unordered_map<std::string, Bucket> buckets_;
};

}  // namespace oc::serve
