// `openclip data download`: a URL list to webdataset shards in img2dataset's layout. One
// thread drives all transfers through libcurl's multi interface; worker threads decode,
// resize and JPEG-encode; a shard is written (tar, then NNNNN_stats.json) as soon as its last
// sample is settled. Memory is bounded by the transfers in flight (each body <= max_bytes),
// the decode queue, and at most kOpenShards shards of encoded results.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "data/shard_tool.h"
#include "download/fetch.h"
#include "download/url_list.h"

namespace oc::download {

struct DownloadOptions {
  std::string output_folder;
  int processes = 1;  // decode/resize/encode threads (see docs/DOWNLOAD.md)
  int threads = 64;   // transfers per "process": processes * threads in flight in total
  int image_size = 256;
  data::ShardResize resize_mode = data::ShardResize::Border;
  bool resize_only_if_bigger = false;
  int encode_quality = 95;
  int64_t shard_size = 10000;
  bool overwrite = false;  // --incremental-mode overwrite: delete earlier shards first
  int64_t max_pixels = 25'000'000;  // decoded area above this = decompression bomb
  FetchOptions fetch;      // concurrency is set from processes * threads
};

struct DownloadSummary {
  int64_t shards = 0, shards_skipped = 0, count = 0, successes = 0, failed_to_download = 0, failed_to_resize = 0;
  int64_t fetched = 0;  // URLs processed by this run (the shards not already done)
  double seconds = 0;
};

DownloadSummary download(const std::vector<UrlRow>& rows, const DownloadOptions& o);

// One downloaded body -> the sample's JPEG, as img2dataset's resizer: error strings
// "Image decoding error" and "image area too large" as img2dataset's.
struct Processed {
  bool ok = false;
  std::string error;
  std::vector<uint8_t> jpg;
  int width = 0, height = 0, original_width = 0, original_height = 0;
};
Processed process_image(std::span<const uint8_t> body, const DownloadOptions& o);

}  // namespace oc::download
