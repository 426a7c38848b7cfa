// The model queue's own bounds (issue 40, items 6 and 7): work whose client went away is
// dropped before the next batch, the queue is bounded in inputs as well as jobs, and stop()
// drops what is queued instead of computing it. The worker is held by a 60 s --max-wait-ms
// (the oldest job waits for company), so nothing here depends on timing.
#include "serve/batcher.h"

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <thread>

#include "model/inference.h"

namespace oc::serve {
namespace {

TEST(Batcher, GoneClientsAreDroppedTheQueueIsBoundedInInputsAndStopDropsTheRest) {
  InferenceOptions io;
  io.model = "test-tiny";
  io.max_batch = 8;
  InferenceModel enc(io);
  Batcher b(enc, {8, 60000, 256}, nullptr);  // at most 8 x 8 = 64 inputs queued
  const size_t L = size_t(enc.context_length());
  auto gone = std::make_shared<std::atomic<bool>>(false);
  auto a = std::async(std::launch::async, [&] {
    const CancelScope scope(gone);
    return b.run(Kind::Text, std::vector<int32_t>(L, 1), {}, 1);
  });
  while (b.queue_depth() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  gone->store(true);  // its client left: dropped when the queue is next looked at
  auto second = std::async(std::launch::async, [&] { return b.run(Kind::Text, std::vector<int32_t>(L, 1), {}, 1); });
  EXPECT_THROW(a.get(), ClientGone);
  while (b.queue_depth() != 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // 1 + 64 inputs is over the 64 the queue may hold (one large job alone would be taken).
  EXPECT_THROW(b.run(Kind::Text, std::vector<int32_t>(64 * L, 1), {}, 64), QueueFull);
  b.stop();  // the second job is dropped, not computed (the drain deadline relies on it)
  EXPECT_THROW(second.get(), ShuttingDown);
  EXPECT_THROW(b.run(Kind::Text, std::vector<int32_t>(L, 1), {}, 1), ShuttingDown);
}

}  // namespace
}  // namespace oc::serve
