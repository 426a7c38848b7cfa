#include "data/inspect.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>

#include "core/fs.h"
#include "data/csv.h"
#include "data/stats.h"
#include "data/urls.h"
#include "data/webdataset.h"
#include "image/codec.h"

namespace oc::data {
namespace {
uint32_t be16(const uint8_t* p) { return uint32_t(p[0]) << 8 | p[1]; }
uint32_t be32(const uint8_t* p) { return be16(p) << 16 | be16(p + 2); }
uint32_t le16(const uint8_t* p) { return uint32_t(p[1]) << 8 | p[0]; }
uint32_t le24(const uint8_t* p) { return uint32_t(p[2]) << 16 | le16(p); }
}  // namespace

bool image_header_size(std::span<const uint8_t> b, int* w, int* h, std::string* format) {
  const size_t n = b.size();
  if (n >= 24 && std::memcmp(b.data(), "\x89PNG\r\n\x1a\n", 8) == 0 && std::memcmp(b.data() + 12, "IHDR", 4) == 0) {
    *format = "png";
    *w = int(be32(&b[16]));
    *h = int(be32(&b[20]));
    return *w > 0 && *h > 0;
  }
  if (n >= 4 && b[0] == 0xFF && b[1] == 0xD8) {
    *format = "jpeg";
    size_t i = 2;
    while (i + 4 <= n) {
      if (b[i] != 0xFF) return false;
      uint8_t m = b[i + 1];
      if (m == 0xFF) {  // fill byte
        ++i;
        continue;
      }
      if (m == 0xD8 || m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {  // no length
        i += 2;
        continue;
      }
      if (m == 0xD9 || m == 0xDA) return false;  // end / scan before a frame header
      uint32_t len = be16(&b[i + 2]);
      if (m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
        if (i + 9 > n) return false;
        *h = int(be16(&b[i + 5]));
        *w = int(be16(&b[i + 7]));
        return *w > 0 && *h > 0;
      }
      i += 2 + len;
    }
    return false;
  }
  if (n >= 30 && std::memcmp(b.data(), "RIFF", 4) == 0 && std::memcmp(b.data() + 8, "WEBP", 4) == 0) {
    *format = "webp";
    const uint8_t* c = b.data() + 12;
    if (std::memcmp(c, "VP8 ", 4) == 0) {
      *w = int(le16(c + 14) & 0x3fff);
      *h = int(le16(c + 16) & 0x3fff);
    } else if (std::memcmp(c, "VP8L", 4) == 0) {
      uint32_t bits = uint32_t(c[9]) | uint32_t(c[10]) << 8 | uint32_t(c[11]) << 16 | uint32_t(c[12]) << 24;
      *w = int((bits & 0x3fff) + 1);
      *h = int(((bits >> 14) & 0x3fff) + 1);
    } else if (std::memcmp(c, "VP8X", 4) == 0) {
      *w = int(le24(c + 12) + 1);
      *h = int(le24(c + 15) + 1);
    } else {
      return false;
    }
    return *w > 0 && *h > 0;
  }
  *format = "unknown";
  return false;
}

bool valid_utf8(std::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    int len = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
    if (len == 0 || i + size_t(len) > s.size()) return false;
    uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1f) : len == 3 ? (c & 0x0f) : (c & 0x07);
    for (int k = 1; k < len; ++k) {
      unsigned char d = static_cast<unsigned char>(s[i + size_t(k)]);
      if ((d >> 6) != 2) return false;
      cp = (cp << 6) | (d & 0x3f);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid, as in Python's decoder.
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) || cp > 0x10ffff ||
        (cp >= 0xd800 && cp <= 0xdfff))
      return false;
    i += size_t(len);
  }
  return true;
}

void InspectReport::Range::add(double v) {
  min = n ? std::min(min, v) : v;
  max = n ? std::max(max, v) : v;
  sum += v;
  ++n;
}

nlohmann::json InspectReport::Range::json() const {
  if (!n) return nullptr;
  return {{"min", min}, {"max", max}, {"mean", sum / double(n)}};
}

nlohmann::json InspectReport::json() const {
  nlohmann::json p = nlohmann::json::array();
  for (auto& [s, e] : problems) p.push_back({{"shard", s}, {"error", e}});
  return {{"shards", shards},          {"shards_opened", shards_opened}, {"samples", samples},
          {"usable", usable},          {"skipped", skipped},            {"extensions", extensions},
          {"image_formats", formats},  {"width", width.json()},         {"height", height.json()},
          {"caption_chars", caption_chars.json()}, {"problems", p},     {"samples_per_shard", per_shard}};
}

std::string InspectReport::text() const {
  std::string o = fmt::format("shards     {} listed, {} opened\n", shards, shards_opened);
  o += fmt::format("samples    {} ({} usable by OpenCLIP's filter)\n", samples, usable);
  std::string sk;
  for (auto& [k, v] : skipped) sk += fmt::format("{}{} {}", sk.empty() ? "" : ", ", k, v);
  o += fmt::format("skipped    {}\n", sk.empty() ? "none" : sk);
  std::string ex;
  for (auto& [k, v] : extensions) ex += fmt::format("{}.{} {}", ex.empty() ? "" : ", ", k, v);
  o += fmt::format("extensions {}\n", ex);
  std::string fm;
  for (auto& [k, v] : formats) fm += fmt::format("{}{} {}", fm.empty() ? "" : ", ", k, v);
  o += fmt::format("images     {}\n", fm.empty() ? "none" : fm);
  if (width.n)
    o += fmt::format("size       width {:.0f}..{:.0f} (mean {:.1f}), height {:.0f}..{:.0f} (mean {:.1f})\n", width.min,
                     width.max, width.sum / double(width.n), height.min, height.max, height.sum / double(height.n));
  if (caption_chars.n)
    o += fmt::format("captions   {:.0f}..{:.0f} bytes (mean {:.1f})\n", caption_chars.min, caption_chars.max,
                     caption_chars.sum / double(caption_chars.n));
  o += fmt::format("problems   {}\n", problems.empty() ? "none" : std::to_string(problems.size()));
  for (auto& [s, e] : problems) o += fmt::format("  {}\n", e);
  return o;
}

namespace {
// One sample that passed the field selection: its image format and size (from the header, or
// by decoding), whether OpenCLIP would use it, and the statistics of the usable ones.
void add_sample(std::span<const uint8_t> image, std::string_view caption, bool decode, InspectReport* rep) {
  int w = 0, h = 0;
  std::string fmt_name;
  bool ok = image_header_size(image, &w, &h, &fmt_name);
  rep->formats[fmt_name]++;
  if (decode) {
    auto img = decode_image(image);
    ok = img.ok();
    if (ok) w = img->width, h = img->height;
  }
  if (!ok) {
    rep->skipped[skip_name(Skip::DecodeError)]++;
  } else if (!valid_utf8(caption)) {
    rep->skipped[skip_name(Skip::BadCaption)]++;
  } else {
    ++rep->usable;
    rep->width.add(w);
    rep->height.add(h);
    rep->caption_chars.add(double(caption.size()));
  }
}
}  // namespace

InspectReport inspect_shards(const std::vector<std::string>& urls, bool decode) {
  InspectReport rep;
  rep.shards = int64_t(urls.size());
  DataStats stats;
  stats.set_quiet(true);
  std::string current;
  stats.set_observer([&](Skip, const std::string& detail) { rep.problems.emplace_back(current, detail); });
  for (const auto& url : urls) {
    current = url;
    bool given = false;
    TarSampleStream s([&]() -> std::optional<std::string> {
      if (given) return std::nullopt;
      given = true;
      return url;
    }, &stats);
    int64_t in_shard = 0;
    while (auto x = s.next()) {
      ++rep.samples;
      ++in_shard;
      for (auto& e : x->exts) rep.extensions[e]++;
      Skip why;
      auto sel = select_fields(*x, &why);
      if (!sel) {
        rep.skipped[skip_name(why)]++;
        continue;
      }
      add_sample(*sel->image,
                 std::string_view(reinterpret_cast<const char*>(sel->caption->data()), sel->caption->size()), decode,
                 &rep);
    }
    rep.shards_opened += s.shards_opened();
    rep.per_shard[url_basename(url)] = in_shard;
  }
  return rep;
}

InspectReport inspect_csv(const std::string& path, char sep, const std::string& img_key,
                          const std::string& caption_key, bool decode) {
  InspectReport rep;
  rep.shards = 1;
  auto cols = read_csv_columns(path, sep, {img_key, caption_key});
  if (!cols) {
    rep.problems.emplace_back(path, cols.error());
    return rep;
  }
  rep.shards_opened = 1;
  rep.samples = cols->rows + int64_t(cols->malformed.size());
  rep.per_shard[url_basename(path)] = rep.samples;
  for (const auto& m : cols->malformed) {
    rep.skipped[skip_name(Skip::MalformedRow)]++;
    rep.problems.emplace_back(path, fmt::format("{}: line {} has {} fields, the header {}", path, m.line, m.fields,
                                                cols->header.size()));
  }
  const std::string base = fs::dirname(path);
  for (int64_t i = 0; i < cols->rows; ++i) {
    const std::string& p = cols->cols[0][size_t(i)];
    const std::string& cap = cols->cols[1][size_t(i)];
    const std::string file = p.empty() || p[0] == '/' || fs::exists(p) ? p : fs::join(base, p);
    auto bytes = fs::read_file(file);
    if (!bytes) {
      rep.skipped[skip_name(Skip::FileError)]++;
      rep.problems.emplace_back(path, fmt::format("row {}: {}", i + 1, bytes.error()));
      continue;
    }
    add_sample(*bytes, cap, decode, &rep);
  }
  return rep;
}

}  // namespace oc::data
