// The per-address token bucket of `openclip serve` (--rate-limit, --rate-burst) with an
// injected clock: no test here depends on how fast the machine is.
#include "serve/rate_limit.h"

#include <gtest/gtest.h>

#include <string>

namespace oc::serve {
namespace {

using Clock = RateLimiter::Clock;
using std::chrono::milliseconds;

TEST(RateLimiter, BurstThenOneTokenPerPeriodAndRetryAfter) {
  RateLimiter r(2, 3);  // 2 requests/s, 3 at once
  const Clock::time_point t0{};
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.take("a", t0), 0) << i;
  // Empty: the next token is due in 1 / 2 s.
  EXPECT_DOUBLE_EQ(r.take("a", t0), 0.5);
  EXPECT_DOUBLE_EQ(r.take("a", t0 + milliseconds(250)), 0.25);  // a refusal takes nothing
  EXPECT_EQ(r.take("a", t0 + milliseconds(500)), 0);
  EXPECT_GT(r.take("a", t0 + milliseconds(500)), 0);
  // Another address has its own bucket.
  EXPECT_EQ(r.take("b", t0 + milliseconds(500)), 0);
  // Refill stops at the burst: after an hour, 3 requests, not 7200.
  const auto later = t0 + std::chrono::hours(1);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(r.take("a", later), 0) << i;
  EXPECT_GT(r.take("a", later), 0);
}

TEST(RateLimiter, OffWhenTheRateIsZero) {
  RateLimiter r(0, 0);
  EXPECT_FALSE(r.enabled());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(r.take("a", Clock::time_point{}), 0);
  EXPECT_EQ(r.tracked(), 0u);
}

TEST(RateLimiter, ForgetsAddressesWhoseBucketsRefilled) {
  RateLimiter r(1, 1);
  const Clock::time_point t0{};
  for (int i = 0; i < 5000; ++i) r.take("addr" + std::to_string(i), t0);
  EXPECT_LE(r.tracked(), 5000u);
  // 10 s later every bucket is full again: the table shrinks to the active addresses as it
  // grows, instead of holding every address ever seen.
  const auto later = t0 + std::chrono::seconds(10);
  for (int i = 0; i < 5000; ++i) r.take("new" + std::to_string(i), later);
  EXPECT_LT(r.tracked(), 8000u);
  // A forgotten address starts with a full bucket, as a new one does.
  EXPECT_EQ(r.take("addr0", later), 0);
}

}  // namespace
}  // namespace oc::serve
