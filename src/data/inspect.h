// `openclip data inspect`: what a shard set holds before training on it: samples, samples
// OpenCLIP would skip and why, extensions, image sizes (from the headers, or a full decode),
// caption lengths, and damaged shards with the byte offset of the damage.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace oc::data {

// Width and height from a JPEG (SOFn), PNG (IHDR) or WebP (VP8/VP8L/VP8X) header, without
// decoding. False when the bytes are none of these or the header is cut.
bool image_header_size(std::span<const uint8_t> bytes, int* w, int* h, std::string* format);
bool valid_utf8(std::string_view s);

struct InspectReport {
  struct Range {
    int64_t n = 0;
    double min = 0, max = 0, sum = 0;
    void add(double v);
    nlohmann::json json() const;
  };
  int64_t shards = 0, shards_opened = 0, samples = 0, usable = 0;
  std::map<std::string, int64_t> skipped;     // reason -> samples
  std::map<std::string, int64_t> extensions;  // extension -> members
  std::map<std::string, int64_t> formats;     // jpeg/png/webp/unknown
  Range width, height, caption_chars;
  std::vector<std::pair<std::string, std::string>> problems;  // shard -> error (damage, missing)
  std::map<std::string, int64_t> per_shard;   // shard -> samples (groups)
  nlohmann::json json() const;
  std::string text() const;
};

// Reads every shard of the pattern (brace expansion, `::`). decode = true decodes every
// image fully (slower; finds corrupt images whose header looks fine).
InspectReport inspect_shards(const std::vector<std::string>& urls, bool decode);
// The same report for a CSV dataset (one "shard"): rows with a field count other than the
// header's (skipped as malformed_row, as training skips them), unreadable image paths.
InspectReport inspect_csv(const std::string& path, char sep, const std::string& img_key,
                          const std::string& caption_key, bool decode);

}  // namespace oc::data
