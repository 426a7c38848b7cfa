// `openclip data shards`: local images (a CSV of path/caption rows, or a folder) to
// webdataset shards in img2dataset's layout, resized as img2dataset's resize modes, JPEG
// re-encoded. Resumable like img2dataset's incremental mode: a shard with its stats file
// is done; any other is (re)written whole, through a temporary file.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "image/image.h"

namespace oc::data {

enum class ShardResize { KeepRatio, CenterCrop, Border, No };
Result<ShardResize> parse_resize_mode(const std::string& s);

// img2dataset's resizer: keep_ratio = shortest side to `size`; center_crop = that, then a
// centered size x size crop; border = longest side to `size`, padded to a square with white;
// no = unchanged. Resampling is antialiased bicubic (img2dataset uses OpenCV INTER_AREA to
// shrink and LANCZOS4 to enlarge; the difference is a few levels per pixel).
ImageU8 resize_for_shard(const ImageU8& img, int size, ShardResize mode);

struct ShardInput {
  std::string path, caption;
};
// Rows of a CSV (paths relative to the CSV's folder) or the images under a folder, sorted;
// a folder image's caption is the sibling <stem>.txt, else its parent folder's name.
Result<std::vector<ShardInput>> inputs_from_csv(const std::string& csv, char sep, const std::string& img_key,
                                                const std::string& caption_key);
Result<std::vector<ShardInput>> inputs_from_folder(const std::string& dir);

struct ShardToolOptions {
  std::string out;
  int64_t shard_size = 10000;
  int image_size = 256;
  ShardResize resize_mode = ShardResize::KeepRatio;
  int quality = 95;
  bool first_caption_only = false;  // keep the caption's first line only
};

struct ShardToolResult {
  int64_t shards = 0, shards_skipped = 0, samples = 0, successes = 0, failed_to_read = 0, failed_to_resize = 0;
};
ShardToolResult write_shards(const std::vector<ShardInput>& in, const ShardToolOptions& opt);

}  // namespace oc::data
