// webdataset samples as OpenCLIP reads them: tar members grouped by key
// (tarfile_to_samples_nothrow = tar_file_expander + group_by_keys_nothrow), `__*__`
// metadata skipped, and OpenCLIP's filter (a `txt` and one of jpg/png/jpeg/webp). A shard
// that cannot be opened or is damaged is counted and the stream goes on with the next one.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "data/stats.h"
#include "data/tar.h"

namespace oc::data {

// base_plus_ext: `^((?:.*/|)[^.]+)[.]([^/]*)$`. False when the name has no key/extension.
bool split_key(std::string_view name, std::string* key, std::string* ext);
// tar_file_iterator's metadata test: a name without '/' that starts and ends with "__".
bool is_meta_name(std::string_view name);

struct WdsSample {
  std::string key, url;
  std::vector<std::string> exts;  // every extension seen, in member order (lower-cased)
  std::vector<std::pair<std::string, std::vector<uint8_t>>> fields;  // the kept ones, with bytes
  // Image payloads not read yet (lazy mode): where they are in the local shard file.
  struct Lazy {
    std::string ext;
    uint64_t offset = 0, size = 0;
  };
  std::vector<Lazy> lazy;
  const std::vector<uint8_t>* find(std::string_view ext) const;
  bool has(std::string_view ext) const;
  // Reads the lazy payloads into `fields` (pread from the shard file).
  Status materialize();
};

// Which extensions to keep the bytes of (others are seen, for grouping, but skipped unread).
using KeepFn = std::function<bool(const std::string& ext)>;
bool keep_for_training(const std::string& ext);  // jpg png jpeg webp txt cls

// Samples from a sequence of shards; `next_url` returns nullopt when there are no more
// (a resampled stream never ends). Groups run across shard boundaries, as in webdataset.
class TarSampleStream {
 public:
  using UrlFn = std::function<std::optional<std::string>()>;
  TarSampleStream(UrlFn next_url, DataStats* stats, KeepFn keep = keep_for_training);
  std::optional<WdsSample> next();
  void set_stats(DataStats* stats) { stats_ = stats; }
  // Lazy mode (local files only): image payloads are skipped with a seek and recorded by
  // offset, for a resume's fast-forward where most samples are dropped unread.
  void set_lazy_images(bool lazy) { lazy_ = lazy; }
  // Shards opened so far (for tests and inspect).
  int64_t shards_opened() const { return shards_opened_; }

 private:
  bool open_next();
  UrlFn next_url_;
  DataStats* stats_;
  KeepFn keep_;
  std::unique_ptr<TarReader> reader_;
  std::string url_;
  std::optional<WdsSample> cur_;
  bool urls_done_ = false, lazy_ = false;
  int64_t shards_opened_ = 0, barren_shards_ = 0;
  bool yielded_since_open_ = false;
};

// OpenCLIP's selection: caption = txt, image = the first of jpg, png, jpeg, webp.
struct Selected {
  const std::vector<uint8_t>* image = nullptr;
  const std::vector<uint8_t>* caption = nullptr;
  const std::vector<uint8_t>* cls = nullptr;  // optional label (zero-shot)
  std::string image_ext;
};
// nullopt + *why when the sample lacks a caption or an image.
std::optional<Selected> select_fields(const WdsSample& s, Skip* why);

// A `.cls` payload ("3", "3\n") as an integer.
std::optional<int64_t> parse_label(std::string_view text);

}  // namespace oc::data
