#include "data/stats.h"

#include "core/log.h"
#include "core/timer.h"

namespace oc::data {

const char* skip_name(Skip s) {
  switch (s) {
    case Skip::NoCaption: return "no_caption";
    case Skip::NoImage: return "no_image";
    case Skip::DecodeError: return "decode_error";
    case Skip::BadCaption: return "bad_caption";
    case Skip::BadLabel: return "bad_label";
    case Skip::ShardError: return "shard_error";
    case Skip::ShardMissing: return "shard_missing";
    case Skip::ShardEmpty: return "shard_empty";
    case Skip::FileError: return "file_error";
    case Skip::MalformedRow: return "malformed_row";
    case Skip::kCount: break;
  }
  return "?";
}

int64_t DataStats::skipped_samples() const {
  return count(Skip::NoCaption) + count(Skip::NoImage) + count(Skip::DecodeError) + count(Skip::BadCaption) +
         count(Skip::FileError);
}

std::map<std::string, int64_t> DataStats::counts() const {
  std::map<std::string, int64_t> m;
  for (int i = 0; i < int(Skip::kCount); ++i)
    if (int64_t c = count(Skip(i))) m[skip_name(Skip(i))] = c;
  return m;
}

std::string DataStats::summary() const {
  std::string s;
  for (auto& [k, v] : counts()) s += (s.empty() ? "" : ", ") + k + " " + std::to_string(v);
  return s.empty() ? "none" : s;
}

void DataStats::skip(Skip why, const std::string& detail) {
  int64_t n = counts_[size_t(why)].fetch_add(1, std::memory_order_relaxed) + 1;
  std::lock_guard lock(mu_);
  if (observer_) observer_(why, detail);
  if (quiet_) return;
  if (logged_[size_t(why)] < full_warnings_) {
    ++logged_[size_t(why)];
    log::warn("data: skipped ({}, #{}): {}{}", skip_name(why), n, detail,
              logged_[size_t(why)] == full_warnings_ ? " (further ones are summarised)" : "");
    return;
  }
  double t = now_seconds();
  if (t - last_summary_ >= 30.0) {
    last_summary_ = t;
    log::warn("data: skipped so far: {} (latest: {})", summary(), detail);
  }
}

void DataStats::reset() {
  for (auto& c : counts_) c = 0;
  samples_ = 0;
  shards_ = 0;
  std::lock_guard lock(mu_);
  logged_.fill(0);
}

}  // namespace oc::data
