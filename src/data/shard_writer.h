// Writing webdataset shards in img2dataset's layout: {00000..}.tar, keys shard*10^k + index
// zero-padded to k+5 digits (k = ceil(log10(shard_size))), members sorted by extension as
// webdataset's TarWriter does, NNNNN_stats.json after the tar (the completion marker for
// resuming), sizes.json for the whole folder. Tars are written to a temporary file and
// renamed, so a killed run never leaves a truncated shard under a real name.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace oc::data {

struct ShardSample {
  std::string key;
  std::vector<std::pair<std::string, std::vector<uint8_t>>> members;  // extension -> bytes
  void add(const std::string& ext, std::vector<uint8_t> bytes) { members.emplace_back(ext, std::move(bytes)); }
  void add(const std::string& ext, const std::string& text) {
    members.emplace_back(ext, std::vector<uint8_t>(text.begin(), text.end()));
  }
};

int key_digits(int64_t shard_size);                        // 9 for 10000
std::string sample_key(int64_t shard, int64_t index, int64_t shard_size);
std::string shard_name(int64_t shard);                     // "00003.tar"
std::string stats_name(int64_t shard);                     // "00003_stats.json"

// Writes <dir>/<shard_name(shard)> atomically, then <dir>/<stats_name(shard)> with `stats`
// (img2dataset fields: count, successes, failed_to_download, failed_to_resize, ...).
void write_shard(const std::string& dir, int64_t shard, const std::vector<ShardSample>& samples,
                 const nlohmann::json& stats);
// True when the shard's tar and stats file both exist (img2dataset's "done" test).
bool shard_done(const std::string& dir, int64_t shard);
// sizes.json from the stats files of shards [0, num_shards): basename -> successes.
void write_sizes(const std::string& dir, int64_t num_shards);

// "[#####.....] 1234/5000 (1234 ok) 310.2/s" on stderr, redrawn in place, only when stderr
// is a terminal.
class Progress {
 public:
  Progress(std::string what, int64_t total);
  void update(int64_t done, int64_t ok);
  void finish();

 private:
  std::string what_;
  int64_t total_;
  double t0_, last_ = 0;
  bool tty_;
};

}  // namespace oc::data
