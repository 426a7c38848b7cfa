// openclip data download: img2dataset's download() as a subcommand (see docs/DOWNLOAD.md).
// Flags are img2dataset's with dashes; the options table documents each one.
#include "cli/data_download.h"

#include <cctype>
#include <cstdio>
#include <sstream>

#include "core/check.h"
#include "core/flags.h"
#include "download/downloader.h"

namespace oc::cli {

int run_data_download(const std::vector<std::string>& args) {
  Options o = options_for("data download");
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  if (!o.has("url-list")) OC_USER_ERROR("data download: --url-list is required");
  if (o.get("output-format") != "webdataset")
    OC_USER_ERROR("data download: --output-format '{}' is not built; only webdataset is", o.get("output-format"));
  if (o.get("encode-format") != "jpg")
    OC_USER_ERROR("data download: --encode-format '{}' is not built; only jpg is", o.get("encode-format"));
  const std::string mode = o.get("incremental-mode");
  if (mode != "incremental" && mode != "overwrite")
    OC_USER_ERROR("data download: --incremental-mode '{}': choose incremental or overwrite", mode);

  auto rows = download::read_url_list(o.get("url-list"), o.get("input-format"), o.get("url-col"), o.get("caption-col"));
  if (!rows) OC_USER_ERROR("data download: {}", rows.error());
  if (o.flag("first-caption-only")) *rows = download::first_caption_per_url(std::move(*rows));

  download::DownloadOptions d;
  d.output_folder = o.get("output-folder");
  d.processes = int(o.get_int("processes-count"));
  d.threads = int(o.get_int("thread-count"));
  d.image_size = int(o.get_int("image-size"));
  auto rm = data::parse_resize_mode(o.get("resize-mode"));
  if (!rm) OC_USER_ERROR("{}", rm.error());
  d.resize_mode = *rm;
  d.resize_only_if_bigger = o.flag("resize-only-if-bigger");
  d.encode_quality = int(o.get_int("encode-quality"));
  d.shard_size = o.get_int("number-sample-per-shard");
  d.overwrite = mode == "overwrite";
  d.max_pixels = o.get_int("max-image-area");
  if (d.processes < 1 || d.threads < 1 || d.image_size < 1 || d.shard_size < 1)
    OC_USER_ERROR("data download: --processes-count, --thread-count, --image-size and --number-sample-per-shard "
                  "must be positive");
  d.fetch.timeout_s = o.get_float("timeout");
  d.fetch.retries = int(o.get_int("retries"));
  d.fetch.max_redirects = int(o.get_int("max-redirects"));
  d.fetch.max_bytes = o.get_int("max-body-bytes");
  d.fetch.user_agent_token = o.get("user-agent-token");
  d.fetch.user_agent = o.get("user-agent");
  std::stringstream ss(o.get("disallowed-header-directives"));
  for (std::string t; std::getline(ss, t, ',');) {
    for (char& c : t) c = char(std::tolower((unsigned char)c));
    if (!t.empty()) d.fetch.disallowed.push_back(t);
  }
  auto s = download::download(*rows, d);
  std::printf("%lld urls -> %lld shard(s) in %s (%lld already done): %lld success, %lld failed to download, "
              "%lld failed to resize (%.1f%% success) in %.1f s, %.1f urls/s\n",
              (long long)s.count, (long long)s.shards, d.output_folder.c_str(), (long long)s.shards_skipped,
              (long long)s.successes, (long long)s.failed_to_download, (long long)s.failed_to_resize,
              s.count ? 100.0 * s.successes / s.count : 0.0, s.seconds,
              s.seconds > 0 ? s.fetched / s.seconds : 0.0);
  return 0;
}

}  // namespace oc::cli
