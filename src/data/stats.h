// Counts of skipped samples and damaged shards, by reason, shared by the loader's workers.
// Warnings are rate-limited: the first few of each reason in full, then a summary with the
// running counts at most every 30 seconds, so a bad shard set cannot flood the log.
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>

namespace oc::data {

enum class Skip : int {
  NoCaption,      // a sample without .txt
  NoImage,        // a sample without jpg/png/jpeg/webp
  DecodeError,    // image bytes that do not decode (corrupt, truncated, too large, empty)
  BadCaption,     // caption that is not valid UTF-8
  BadLabel,       // .cls that is not an integer (the sample is kept, label -1)
  ShardError,     // truncated or corrupt tar: the rest of that shard is lost
  ShardMissing,   // shard that cannot be opened (missing, a directory, unreachable URL)
  ShardEmpty,     // zero-byte shard
  FileError,      // CSV image path that cannot be read
  MalformedRow,   // CSV row with fewer or more fields than the header
  kCount
};
const char* skip_name(Skip s);

class DataStats {
 public:
  // Counts one occurrence and logs it (rate-limited). `detail` says where (path, offset, key).
  void skip(Skip why, const std::string& detail);
  void add_samples(int64_t n) { samples_.fetch_add(n, std::memory_order_relaxed); }
  void add_shard() { shards_.fetch_add(1, std::memory_order_relaxed); }
  int64_t count(Skip why) const { return counts_[size_t(why)].load(std::memory_order_relaxed); }
  int64_t samples() const { return samples_.load(); }
  int64_t shards() const { return shards_.load(); }
  int64_t skipped_samples() const;  // samples dropped (not shard events, not bad labels)
  std::map<std::string, int64_t> counts() const;  // non-zero reasons by name
  std::string summary() const;  // "no_caption 3, decode_error 1"
  // While quiet (fast-forward after a resume), counts are kept but nothing is logged.
  void set_quiet(bool q) { quiet_ = q; }
  void set_full_warnings(int n) { full_warnings_ = n; }
  // Called (under a lock) for every counted event, quiet or not; for tools that list them.
  void set_observer(std::function<void(Skip, const std::string&)> f) { observer_ = std::move(f); }
  void reset();

 private:
  std::array<std::atomic<int64_t>, size_t(Skip::kCount)> counts_{};
  std::atomic<int64_t> samples_{0}, shards_{0};
  std::atomic<bool> quiet_{false};
  int full_warnings_ = 5;
  std::mutex mu_;
  std::function<void(Skip, const std::string&)> observer_;
  std::array<int, size_t(Skip::kCount)> logged_{};
  double last_summary_ = 0;
};

}  // namespace oc::data
