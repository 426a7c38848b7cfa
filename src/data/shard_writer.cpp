#include "data/shard_writer.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include <fmt/format.h>

#include "core/check.h"
#include "core/fs.h"
#include "core/timer.h"
#include "data/tar.h"

namespace oc::data {

int key_digits(int64_t shard_size) {
  int k = 0;
  for (int64_t p = 1; p < shard_size; p *= 10) ++k;  // ceil(log10(shard_size)), exact in integers
  return k + 5;
}

std::string sample_key(int64_t shard, int64_t index, int64_t shard_size) {
  int k = key_digits(shard_size) - 5;
  int64_t mult = 1;
  for (int i = 0; i < k; ++i) mult *= 10;
  return fmt::format("{:0{}d}", shard * mult + index, k + 5);
}

std::string shard_name(int64_t shard) { return fmt::format("{:05d}.tar", shard); }
std::string stats_name(int64_t shard) { return fmt::format("{:05d}_stats.json", shard); }

void write_shard(const std::string& dir, int64_t shard, const std::vector<ShardSample>& samples,
                 const nlohmann::json& stats) {
  const std::string path = fs::join(dir, shard_name(shard));
  fs::write_atomic(path, [&](const fs::Sink& sink) {
    TarWriter w(sink, int64_t(std::time(nullptr)));
    for (const auto& s : samples) {
      auto members = s.members;
      std::stable_sort(members.begin(), members.end(), [](auto& a, auto& b) { return a.first < b.first; });
      for (auto& [ext, bytes] : members) w.add(s.key + "." + ext, bytes);
    }
    w.finish();
  });
  // The stats file marks the shard complete, so it is written only after the tar is in place.
  fs::write_atomic(fs::join(dir, stats_name(shard)), stats.dump(4));
}

bool shard_done(const std::string& dir, int64_t shard) {
  return fs::exists(fs::join(dir, shard_name(shard))) && fs::exists(fs::join(dir, stats_name(shard)));
}

void write_sizes(const std::string& dir, int64_t num_shards) {
  nlohmann::json sizes = nlohmann::json::object();
  for (int64_t s = 0; s < num_shards; ++s) {
    auto txt = fs::read_text(fs::join(dir, stats_name(s)));
    if (!txt) OC_USER_ERROR("{}", txt.error());
    auto j = nlohmann::json::parse(*txt, nullptr, false);
    if (j.is_discarded() || !j.contains("successes"))
      OC_USER_ERROR("{}: not a shard stats file", fs::join(dir, stats_name(s)));
    sizes[shard_name(s)] = j["successes"];
  }
  fs::write_atomic(fs::join(dir, "sizes.json"), sizes.dump());
}

Progress::Progress(std::string what, int64_t total)
    : what_(std::move(what)), total_(total), t0_(now_seconds()), tty_(::isatty(2) != 0) {}

void Progress::update(int64_t done, int64_t ok) {
  if (!tty_) return;
  double t = now_seconds();
  if (t - last_ < 0.1 && done < total_) return;
  last_ = t;
  const int width = 30;
  int fill = total_ > 0 ? int(width * std::min<int64_t>(done, total_) / total_) : width;
  std::fprintf(stderr, "\r%s [%s%s] %lld/%lld (%lld ok) %.1f/s ", what_.c_str(), std::string(size_t(fill), '#').c_str(),
               std::string(size_t(width - fill), '.').c_str(), (long long)done, (long long)total_, (long long)ok,
               done / std::max(1e-9, t - t0_));
  std::fflush(stderr);
}

void Progress::finish() {
  if (tty_) std::fprintf(stderr, "\n");
}

}  // namespace oc::data
