// openclip data shards: images from a CSV or a folder -> webdataset shards in img2dataset's
// layout (called from cmd_data.cpp).
#include <cstdio>

#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/flags.h"
#include "data/csv.h"
#include "data/shard_tool.h"

namespace oc::cli {

int data_shards(const std::vector<std::string>& args) {
  Options o = options_for("data shards");
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  if (o.has("from-csv") == o.has("from-folder"))
    OC_USER_ERROR("data shards: give exactly one of --from-csv FILE or --from-folder DIR");
  if (!o.has("out")) OC_USER_ERROR("data shards: --out is required");
  Result<std::vector<data::ShardInput>> in = std::vector<data::ShardInput>{};
  if (o.has("from-csv")) {
    auto sep = data::parse_separator(o.get("csv-separator"));
    if (!sep) OC_USER_ERROR("{}", sep.error());
    in = data::inputs_from_csv(o.get("from-csv"), *sep, o.get("csv-img-key"), o.get("csv-caption-key"));
  } else {
    in = data::inputs_from_folder(o.get("from-folder"));
  }
  if (!in) OC_USER_ERROR("{}", in.error());
  data::ShardToolOptions t;
  t.out = o.get("out");
  t.shard_size = o.get_int("shard-size");
  t.image_size = int(o.get_int("image-size"));
  auto mode = data::parse_resize_mode(o.get("resize-mode"));
  if (!mode) OC_USER_ERROR("{}", mode.error());
  t.resize_mode = *mode;
  t.quality = int(o.get_int("encode-quality"));
  t.first_caption_only = o.flag("first-caption-only");
  auto r = data::write_shards(*in, t);
  std::printf("%lld samples -> %lld shard(s) in %s (%lld already done): %lld written, %lld unreadable, "
              "%lld failed to decode\n",
              (long long)r.samples, (long long)r.shards, t.out.c_str(), (long long)r.shards_skipped,
              (long long)r.successes, (long long)r.failed_to_read, (long long)r.failed_to_resize);
  return 0;
}

}  // namespace oc::cli
