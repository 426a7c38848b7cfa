// openclip data download: img2dataset's download() as a subcommand (see docs/DOWNLOAD.md).
// Flags are img2dataset's with dashes; the options table documents each one.
#include "cli/data_download.h"

#include <cctype>
#include <cstdio>
#include <sstream>

#include "cli/args.h"
#include "core/check.h"
#include "core/flags.h"
#include "download/downloader.h"

namespace oc::cli {

int run_data_download(const std::vector<std::string>& args) {
  DownloadArgs a;
  if (!parse_flags("data download", args, &a)) return 0;
  if (a.url_list.empty()) OC_USER_ERROR("data download: --url-list is required");
  if (a.output_format != "webdataset")
    OC_USER_ERROR("data download: --output-format '{}' is not built; only webdataset is", a.output_format);
  if (a.encode_format != "jpg")
    OC_USER_ERROR("data download: --encode-format '{}' is not built; only jpg is", a.encode_format);
  const std::string& mode = a.incremental_mode;
  if (mode != "incremental" && mode != "overwrite")
    OC_USER_ERROR("data download: --incremental-mode '{}': choose incremental or overwrite", mode);

  auto rows = download::read_url_list(a.url_list, a.input_format, a.url_col, a.caption_col);
  if (!rows) OC_USER_ERROR("data download: {}", rows.error());
  if (a.first_caption_only) *rows = download::first_caption_per_url(std::move(*rows));

  download::DownloadOptions& d = a;  // the folder, threads, sizes, quality, limits and fetching: from the flags
  auto rm = data::parse_resize_mode(a.resize_mode_name);
  if (!rm) OC_USER_ERROR("{}", rm.error());
  d.resize_mode = *rm;
  d.overwrite = mode == "overwrite";
  if (d.processes < 1 || d.threads < 1 || d.image_size < 1 || d.shard_size < 1)
    OC_USER_ERROR("data download: --processes-count, --thread-count, --image-size and --number-sample-per-shard "
                  "must be positive");
  std::stringstream ss(a.disallowed_header_directives);
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
