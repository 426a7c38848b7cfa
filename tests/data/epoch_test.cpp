// Epoch arithmetic (OpenCLIP's rounding), the shard order, node/worker splits, resampling
// and webdataset's shuffle buffer.
#include "data/epoch.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

#include "data/shuffle.h"
#include "../test_util.h"

namespace oc::data {
namespace {

TEST(Epoch, OpenClipExample) {
  // data.py's comment: 10968539 samples (CC12M), bs 320, 4 GPUs, 4 workers.
  auto e = wds_epoch_size(10968539, 320, 4, 4);
  EXPECT_EQ(e.num_batches, 8572);
  EXPECT_EQ(e.num_samples, 10972160);
  EXPECT_EQ(e.worker_batches, 2143);
  auto z = wds_epoch_size(100, 10, 1, 0);  // workers 0 counts as 1
  EXPECT_EQ(z.num_batches, 10);
  EXPECT_EQ(z.worker_batches, 10);
  auto r = wds_epoch_size(101, 10, 1, 4);  // 11 batches -> 3 per worker -> 12
  EXPECT_EQ(r.num_batches, 12);
  EXPECT_EQ(r.num_samples, 120);
}

std::vector<std::string> names(int n) {
  std::vector<std::string> v;
  for (int i = 0; i < n; ++i) v.push_back(std::to_string(i));
  return v;
}

TEST(Epoch, ShardOrderIsAPureFunctionOfSeedAndEpoch) {
  auto urls = names(50);
  auto a = shard_order(urls, 7, 3, true), b = shard_order(urls, 7, 3, true), c = shard_order(urls, 7, 4, true);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, urls);
  auto s = a;
  std::sort(s.begin(), s.end());
  auto u = urls;
  std::sort(u.begin(), u.end());
  EXPECT_EQ(s, u);
  EXPECT_EQ(shard_order(urls, 7, 3, false), urls);
}

TEST(Epoch, SplitByNodeThenWorkerPartitionsTheShards) {
  auto urls = names(23);
  auto order = shard_order(urls, 1, 0, true);
  std::multiset<std::string> all;
  for (int rank = 0; rank < 2; ++rank)
    for (int w = 0; w < 3; ++w) {
      auto mine = worker_shards(urls, 1, 0, true, rank, 2, w, 3);
      // [rank::world][worker::workers]: shard i of the order goes to rank i%2, then worker (i/2)%3.
      for (size_t k = 0; k < mine.size(); ++k) EXPECT_EQ(mine[k], order[size_t(rank) + 2 * (size_t(w) + 3 * k)]);
      all.insert(mine.begin(), mine.end());
    }
  EXPECT_EQ(all.size(), urls.size());
  EXPECT_EQ(std::set<std::string>(all.begin(), all.end()).size(), urls.size());
  EXPECT_EQ(every_nth(std::vector<int>{0, 1, 2, 3, 4, 5, 6}, 1, 3), (std::vector<int>{1, 4}));
}

TEST(Epoch, ResamplerFollowsWeights) {
  ShardResampler r({"a", "b", "c"}, {1, 1, 2}, 0, 0, 0, 0);
  std::map<std::string, int> n;
  const int N = 20000;
  for (int i = 0; i < N; ++i) n[r.next()]++;
  // Binomial: sd = sqrt(N p (1-p)) <= 71; 5 sd bounds make a false failure negligible.
  EXPECT_NEAR(n["a"], N / 4, 360);
  EXPECT_NEAR(n["c"], N / 2, 360);
  ShardResampler r1({"a", "b", "c"}, {}, 0, 0, 0, 0), r2({"a", "b", "c"}, {}, 0, 0, 1, 0), r3({"a", "b", "c"}, {}, 0, 0, 0, 0);
  std::string s1, s2, s3;
  for (int i = 0; i < 40; ++i) s1 += r1.next(), s2 += r2.next(), s3 += r3.next();
  EXPECT_EQ(s1, s3);  // same rank/worker/epoch: same stream
  EXPECT_NE(s1, s2);  // another rank: another stream
}

TEST(Epoch, PermutationAndDistributedSplit) {
  auto p = permutation(10, 5);
  auto s = p;
  std::sort(s.begin(), s.end());
  EXPECT_EQ(s, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(p, permutation(10, 5));
  EXPECT_NE(p, permutation(10, 6));
  std::vector<int64_t> o = {4, 3, 2, 1, 0};
  EXPECT_EQ(distributed_split(o, 0, 2), (std::vector<int64_t>{4, 2, 0}));
  EXPECT_EQ(distributed_split(o, 1, 2), (std::vector<int64_t>{3, 1, 4}));  // padded with the first
  EXPECT_EQ(distributed_split(o, 0, 1), o);
}

TEST(Shuffle, WebdatasetBufferSemantics) {
  int pulled = 0;
  const int n = 100;
  ShuffleBuffer<int> sb([&]() -> std::optional<int> { return pulled < n ? std::optional<int>(pulled++) : std::nullopt; },
                        20, 10, 42);
  std::vector<int> out;
  auto first = sb.next();
  ASSERT_TRUE(first);
  // Two items are pulled per step until the buffer holds `initial`: the first pick comes
  // after exactly 10 pulls, and it is one of them.
  EXPECT_EQ(pulled, 10);
  EXPECT_LT(*first, 10);
  out.push_back(*first);
  while (auto x = sb.next()) out.push_back(*x);
  ASSERT_EQ(out.size(), size_t(n));
  auto s = out;
  std::sort(s.begin(), s.end());
  for (int i = 0; i < n; ++i) EXPECT_EQ(s[size_t(i)], i);
  // A buffer bounds how far an item can move forward: item k appears no earlier than
  // position k - bufsize... and the order is not the identity.
  bool moved = false;
  for (int i = 0; i < n; ++i) {
    EXPECT_GE(i, out[size_t(i)] - 20) << i;
    moved |= out[size_t(i)] != i;
  }
  EXPECT_TRUE(moved);
  std::vector<int> in(n);
  for (int i = 0; i < n; ++i) in[size_t(i)] = i;
  EXPECT_EQ(shuffle_list(in, 20, 10, 42), out);  // same seed, same order
  EXPECT_EQ(shuffle_list(in, 1, 1, 42), in);     // bufsize 1: no shuffle
}


// OpenCLIP's order for the same seed: tests/reference/shard_order_ref.py runs detshuffle2 +
// webdataset's _shuffle with CPython's random.Random; every position must be equal. Shard
// counts cover "fewer than initial" (12), "between initial and bufsize" (700) and "more than
// bufsize" (2500, where the buffer is full and pulls one item per pick).
std::vector<std::string> python_json_list(const std::string& args) {
  return test::run_flat_json_list("/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/shard_order_ref.py " + args);
}

TEST(Epoch, ShardOrderEqualsOpenClipsForTheSameSeed) {
  for (int n : {12, 700, 2500})
    for (uint64_t seed : {0ull, 1ull, 42ull, 4294967296ull + 7})
      for (int64_t epoch : {0, 3}) {
        auto urls = names(n);
        auto ours = shard_order(urls, seed, epoch, true);
        auto ref = python_json_list(fmt::format("order {} {} {}", n, seed, epoch));
        ASSERT_EQ(ours, ref) << "n " << n << " seed " << seed << " epoch " << epoch;
      }
  // One worker of one rank: [rank::world][worker::workers] of the same order.
  auto urls = names(97);
  EXPECT_EQ(worker_shards(urls, 5, 2, true, 1, 2, 1, 3), python_json_list("worker 97 5 2 1 2 1 3"));
}

}  // namespace
}  // namespace oc::data
