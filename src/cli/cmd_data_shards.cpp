// openclip data shards: images from a CSV or a folder -> webdataset shards in img2dataset's
// layout (called from cmd_data.cpp).
#include <cstdio>

#include "cli/args.h"
#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/flags.h"
#include "data/csv.h"
#include "data/shard_tool.h"

namespace oc::cli {

int data_shards(const std::vector<std::string>& args) {
  DataToolArgs a;
  if (!parse_flags("data shards", args, &a)) return 0;
  if (a.from_csv.empty() == a.from_folder.empty())
    OC_USER_ERROR("data shards: give exactly one of --from-csv FILE or --from-folder DIR");
  if (a.out.empty()) OC_USER_ERROR("data shards: --out is required");
  Result<std::vector<data::ShardInput>> in = std::vector<data::ShardInput>{};
  if (!a.from_csv.empty()) {
    auto sep = data::parse_separator(a.csv_separator);
    if (!sep) OC_USER_ERROR("{}", sep.error());
    in = data::inputs_from_csv(a.from_csv, *sep, a.csv_img_key, a.csv_caption_key);
  } else {
    in = data::inputs_from_folder(a.from_folder);
  }
  if (!in) OC_USER_ERROR("{}", in.error());
  data::ShardToolOptions t;
  t.out = a.out;
  t.shard_size = a.shard_size;
  t.image_size = a.image_size;
  auto mode = data::parse_resize_mode(a.resize_mode);
  if (!mode) OC_USER_ERROR("{}", mode.error());
  t.resize_mode = *mode;
  t.quality = a.encode_quality;
  t.first_caption_only = a.first_caption_only;
  auto r = data::write_shards(*in, t);
  std::printf("%lld samples -> %lld shard(s) in %s (%lld already done): %lld written, %lld unreadable, "
              "%lld failed to decode\n",
              (long long)r.samples, (long long)r.shards, t.out.c_str(), (long long)r.shards_skipped,
              (long long)r.successes, (long long)r.failed_to_read, (long long)r.failed_to_resize);
  return 0;
}

}  // namespace oc::cli
