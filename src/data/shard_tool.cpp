#include "data/shard_tool.h"

#include <dirent.h>
#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/real_path.h"
#include "core/timer.h"
#include "data/csv.h"
#include "data/shard_writer.h"
#include "image/codec.h"
#include "image/transform.h"

namespace oc::data {

Result<ShardResize> parse_resize_mode(const std::string& s) {
  if (s == "keep_ratio") return ShardResize::KeepRatio;
  if (s == "center_crop") return ShardResize::CenterCrop;
  if (s == "border") return ShardResize::Border;
  if (s == "no") return ShardResize::No;
  return Err{fmt::format("--resize-mode '{}': choose keep_ratio, center_crop, border or no", s)};
}

ImageU8 resize_for_shard(const ImageU8& img, int size, ShardResize mode) {
  if (mode == ShardResize::No) return img;
  const int w = img.width, h = img.height;
  auto scaled = [&](bool by_shortest) {
    double s = double(size) / (by_shortest ? std::min(w, h) : std::max(w, h));
    int nw = std::max(1, int(std::lround(w * s))), nh = std::max(1, int(std::lround(h * s)));
    if (by_shortest) (w <= h ? nw : nh) = size;  // the resized side is exactly `size`
    else (w >= h ? nw : nh) = size;
    return (nw == w && nh == h) ? img : resize(img, nw, nh, Interp::Bicubic);
  };
  if (mode == ShardResize::KeepRatio) return scaled(true);
  if (mode == ShardResize::CenterCrop) {
    ImageU8 r = scaled(true);
    return crop(r, (r.width - size) / 2, (r.height - size) / 2, size, size);
  }
  ImageU8 r = scaled(false);  // border: pad to a square with white, centered
  ImageU8 out;
  out.width = out.height = size;
  out.rgb.assign(size_t(size) * size * 3, 255);
  const int ox = (size - r.width) / 2, oy = (size - r.height) / 2;
  for (int y = 0; y < r.height; ++y)
    std::copy(r.row(y), r.row(y) + size_t(r.width) * 3, out.row(y + oy) + size_t(ox) * 3);
  return out;
}

Result<std::vector<ShardInput>> inputs_from_csv(const std::string& csv, char sep, const std::string& img_key,
                                                const std::string& caption_key) {
  auto cols = read_csv_columns(csv, sep, {img_key, caption_key});
  if (!cols) return Err{cols.error()};
  if (!cols->malformed.empty())
    log::warn("{}: skipped {} malformed row(s) with a field count other than the header's {} (first at line {})", csv,
              cols->malformed.size(), cols->header.size(), cols->malformed[0].line);
  std::vector<ShardInput> out;
  const std::string base = fs::dirname(csv);
  for (int64_t i = 0; i < cols->rows; ++i) {
    std::string p = cols->cols[0][size_t(i)];
    if (!p.empty() && p[0] != '/') p = fs::join(base, p);
    out.push_back({p, cols->cols[1][size_t(i)]});
  }
  return out;
}

Result<std::vector<ShardInput>> inputs_from_folder(const std::string& dir) {
  if (!fs::is_dir(dir)) return Err{fmt::format("{}: not a folder", dir)};
  // Each real folder once (a link loop is walked once), no link out of the folder.
  fs::WalkCounts c;
  const auto files = fs::walk_files(
      dir, [](std::string_view n) { return has_image_extension(n); }, &c);
  if (c.links_outside > 0)
    log::warn("{}: skipped {} symlink(s) that lead outside the folder (the first: {})", dir, c.links_outside,
              c.first_outside);
  std::vector<ShardInput> out;
  for (auto& f : files) {
    std::string stem = f.substr(0, f.rfind('.'));
    std::string caption;
    if (auto t = fs::read_text(stem + ".txt"); t) {
      caption = *t;
      while (!caption.empty() && (caption.back() == '\n' || caption.back() == '\r')) caption.pop_back();
    } else {
      std::string parent = fs::basename(fs::dirname(f));
      std::replace(parent.begin(), parent.end(), '_', ' ');
      caption = parent;
    }
    out.push_back({f, caption});
  }
  if (out.empty()) return Err{fmt::format("{}: no .jpg/.jpeg/.png/.webp images", dir)};
  return out;
}

namespace {

// A shard written before (img2dataset's incremental mode): its counts from its stats file.
void count_written_shard(const std::string& out, int64_t shard, ShardToolResult& res) {
  ++res.shards_skipped;
  auto st = nlohmann::json::parse(*fs::read_text(fs::join(out, stats_name(shard))), nullptr, false);
  if (!st.is_discarded()) {
    res.successes += st.value("successes", int64_t(0));
    res.failed_to_read += st.value("failed_to_download", int64_t(0));
    res.failed_to_resize += st.value("failed_to_resize", int64_t(0));
  }
}

// Reads, decodes, resizes and re-encodes one input into `s` (whose key is set): jpg, txt and
// json as img2dataset writes them. Returns img2dataset's status; `error` says why when it is
// not "success".
std::string make_sample(const ShardInput& x, const ShardToolOptions& opt, ShardSample& s, std::string& error) {
  std::string caption = x.caption;
  if (opt.first_caption_only) caption = caption.substr(0, caption.find('\n'));
  nlohmann::json meta = {{"url", x.path}, {"caption", caption}, {"key", s.key}};
  auto bytes = fs::read_file(x.path);
  if (!bytes) {
    error = bytes.error();
    return "failed_to_download";
  }
  auto img = decode_image(*bytes);
  if (!img) {
    error = "Image decoding error: " + img.error();
    return "failed_to_resize";
  }
  ImageU8 r = resize_for_shard(*img, opt.image_size, opt.resize_mode);
  auto jpg = encode_image(r, ImageFormat::Jpeg, opt.quality);
  if (!jpg) {
    error = jpg.error();
    return "failed_to_resize";
  }
  meta["status"] = "success";
  meta["error_message"] = nullptr;
  meta["width"] = r.width;
  meta["height"] = r.height;
  meta["original_width"] = img->width;
  meta["original_height"] = img->height;
  s.add("jpg", std::move(*jpg));
  s.add("txt", caption);
  s.add("json", meta.dump(4));
  return "success";
}

struct ShardCounts {
  int64_t successes = 0, failed_to_read = 0, failed_to_resize = 0;
};

// Makes shard `shard` from inputs [first, first + count) in parallel and writes it with its
// stats file. Failed samples are not in the tar (keys have gaps), as in img2dataset.
ShardCounts build_shard(const std::vector<ShardInput>& in, int64_t shard, int64_t first, int64_t count,
                        const ShardToolOptions& opt) {
  const int64_t S = opt.shard_size;
  const double t0 = now_seconds();
  const std::time_t start = std::time(nullptr);
  std::vector<ShardSample> samples(static_cast<size_t>(count));
  std::vector<std::string> status(static_cast<size_t>(count)), error(static_cast<size_t>(count));
#pragma omp parallel for schedule(dynamic, 8)
  for (int64_t i = 0; i < count; ++i) {
    ShardSample& s = samples[size_t(i)];
    s.key = sample_key(shard, i, S);
    status[size_t(i)] = make_sample(in[size_t(first + i)], opt, s, error[size_t(i)]);
  }
  std::vector<ShardSample> ok;
  nlohmann::json status_dict = nlohmann::json::object();
  ShardCounts c;
  for (int64_t i = 0; i < count; ++i) {
    const std::string& st = status[size_t(i)];
    std::string k = st == "success" ? "success" : error[size_t(i)];
    status_dict[k] = status_dict.value(k, 0) + 1;
    if (st == "success")
      ++c.successes, ok.push_back(std::move(samples[size_t(i)]));
    else if (st == "failed_to_download")
      ++c.failed_to_read;
    else
      ++c.failed_to_resize;
  }
  nlohmann::json stats = {{"count", count},
                          {"successes", c.successes},
                          {"failed_to_download", c.failed_to_read},
                          {"failed_to_resize", c.failed_to_resize},
                          {"duration", now_seconds() - t0},
                          {"start_time", double(start)},
                          {"end_time", double(std::time(nullptr))},
                          {"status_dict", status_dict}};
  write_shard(opt.out, shard, ok, stats);
  return c;
}

}  // namespace

ShardToolResult write_shards(const std::vector<ShardInput>& in, const ShardToolOptions& opt) {
  if (opt.shard_size < 1) OC_USER_ERROR("--shard-size must be >= 1");
  if (opt.quality < 1 || opt.quality > 100) OC_USER_ERROR("--encode-quality {}: choose 1..100", opt.quality);
  fs::make_dirs(opt.out);
  ShardToolResult res;
  const int64_t S = opt.shard_size, n = int64_t(in.size());
  res.shards = (n + S - 1) / S;
  res.samples = n;
  Progress prog("shards", n);
  int64_t done = 0;
  for (int64_t shard = 0; shard < res.shards; ++shard) {
    const int64_t first = shard * S, count = std::min(S, n - first);
    if (shard_done(opt.out, shard)) {  // img2dataset's incremental mode
      count_written_shard(opt.out, shard, res);
      done += count;
      continue;
    }
    const ShardCounts c = build_shard(in, shard, first, count, opt);
    res.successes += c.successes;
    res.failed_to_read += c.failed_to_read;
    res.failed_to_resize += c.failed_to_resize;
    done += count;
    prog.update(done, res.successes);
  }
  prog.finish();
  write_sizes(opt.out, res.shards);
  return res;
}

}  // namespace oc::data
