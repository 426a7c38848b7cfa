// Shard lists as OpenCLIP builds them: brace expansion (the `braceexpand` package's rules:
// {a,b} lists, {00..11} zero-padded ranges, {a..e}, steps, nesting), `::` between sources,
// per-source upsampling weights, and the dataset size from sizes.json / __len__.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"

namespace oc::data {

// Expands one pattern (no `::` handling). Unbalanced braces are an error, as in braceexpand;
// a brace group that is neither a list nor a range ("{x}", "{}") stays literal.
// A pattern expands to at most kMaxBraceExpansion names ({0..99999999999} is an error
// at once, before anything is generated).
inline constexpr uint64_t kMaxBraceExpansion = 1'000'000;
Result<std::vector<std::string>> expand_braces(const std::string& pattern);

struct ShardList {
  std::vector<std::string> urls;
  std::vector<double> weights;  // one per url when upsampling factors were given, else empty
};

// Splits on `::`, expands each source. `upsampling_factors` ("1::0.5", one per source) gives
// every shard of a source that weight (OpenCLIP's expand_urls(urls, weights)).
Result<ShardList> expand_shards(const std::string& pattern, const std::string& upsampling_factors = "");

// Number of samples listed for these shards: each shard's folder's sizes.json (basename ->
// count), else that folder's __len__ (a total, counted once per folder). An error names the
// folder or shard that has no size, and says to pass --train-num-samples.
Result<int64_t> dataset_size(const std::vector<std::string>& urls);

// "a/b/00001.tar" -> "a/b"; "http://h/x/00001.tar" -> "http://h/x"; "00001.tar" -> "".
std::string url_dirname(const std::string& url);
std::string url_basename(const std::string& url);
std::string url_join(const std::string& dir, const std::string& name);

}  // namespace oc::data
