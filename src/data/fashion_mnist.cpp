#include "data/fashion_mnist.h"

#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/limits.h"
#include "core/log.h"
#include "core/rng.h"
#include "data/epoch.h"
#include "data/shard_writer.h"
#include "image/codec.h"
#include "image/transform.h"

namespace oc::data {
namespace {

struct GzCloser {
  void operator()(gzFile_s* f) const { gzclose(f); }
};
using Gz = std::unique_ptr<gzFile_s, GzCloser>;

// gzopen reads plain files too, so .gz and uncompressed IDX files both work.
Result<Gz> open_gz(const std::string& path) {
  if (!fs::exists(path)) return Err{fmt::format("{}: no such file", path)};
  gzFile f = gzopen(path.c_str(), "rb");
  if (!f) return Err{fmt::format("{}: cannot open", path)};
  gzbuffer(f, 1 << 20);
  return Gz(f);
}

Status read_exact(gzFile f, const std::string& path, void* dst, size_t n, const char* what) {
  size_t done = 0;
  while (done < n) {
    unsigned step = unsigned(std::min<size_t>(n - done, 1u << 30));
    int r = gzread(f, static_cast<uint8_t*>(dst) + done, step);
    if (r < 0) {
      int errnum = 0;
      return Err{fmt::format("{}: {} (reading {})", path, gzerror(f, &errnum), what)};
    }
    if (r == 0) return Err{fmt::format("{}: file ends early (reading {}: {} of {} bytes)", path, what, done, n)};
    done += size_t(r);
  }
  return Status::success();
}

uint32_t be32(const uint8_t* p) { return uint32_t(p[0]) << 24 | uint32_t(p[1]) << 16 | uint32_t(p[2]) << 8 | p[3]; }

Result<std::vector<uint32_t>> read_header(gzFile f, const std::string& path, uint32_t magic, int dims) {
  uint8_t h[16];
  if (auto st = read_exact(f, path, h, 4, "the magic number"); !st) return Err{st.error()};
  if (be32(h) != magic)
    return Err{fmt::format("{}: magic 0x{:08x}, expected 0x{:08x} (an IDX {} file of unsigned bytes)", path, be32(h),
                           magic, dims == 3 ? "image" : "label")};
  if (auto st = read_exact(f, path, h + 4, size_t(4 * dims), "the header"); !st) return Err{st.error()};
  std::vector<uint32_t> d;
  for (int i = 0; i < dims; ++i) d.push_back(be32(h + 4 + 4 * i));
  return d;
}

// The most bytes the rest of an IDX file can hold after its header: the file's size for a
// plain file; for gzip, 1032 times it (deflate's largest expansion ratio, zlib's
// "technical details"), so a 116-byte header claiming 5 GB of pixels is refused before
// anything is allocated.
uint64_t idx_bytes_present(gzFile f, const std::string& path, int dims) {
  const int64_t size = fs::file_size(path);
  const uint64_t header = 4 + 4 * uint64_t(dims);
  if (size < 0) return 0;
  if (gzdirect(f)) return uint64_t(size) > header ? uint64_t(size) - header : 0;
  return uint64_t(size) * 1032;
}

Status check_idx_claim(gzFile f, const std::string& path, int dims, uint64_t count, uint64_t item_bytes) {
  auto b = claimed_bytes(path, "the IDX header", count, item_bytes, idx_bytes_present(f, path, dims));
  if (!b) return Err{b.error()};
  return within_cap(path, "the IDX array", *b, kIdxCap);
}

std::string find_idx(const std::string& dir, const std::string& stem) {
  for (const char* ext : {".gz", ""}) {
    std::string p = fs::join(dir, stem + ext);
    if (fs::exists(p)) return p;
  }
  return fs::join(dir, stem + ".gz");  // the error will name the expected file
}

}  // namespace

Result<IdxImages> read_idx_images(const std::string& path, int64_t limit) {
  auto f = open_gz(path);
  if (!f) return Err{f.error()};
  auto d = read_header(f->get(), path, 0x00000803, 3);
  if (!d) return Err{d.error()};
  IdxImages im;
  im.count = (*d)[0];
  im.rows = int((*d)[1]);
  im.cols = int((*d)[2]);
  if (im.rows <= 0 || im.cols <= 0 || im.rows > 4096 || im.cols > 4096)
    return Err{fmt::format("{}: implausible image size {}x{}", path, im.rows, im.cols)};
  if (limit >= 0) im.count = std::min<int64_t>(im.count, limit);
  if (Status s = check_idx_claim(f->get(), path, 3, uint64_t(im.count), uint64_t(im.rows) * uint64_t(im.cols)); !s)
    return Err{s.error()};
  im.pixels.resize(size_t(im.count) * size_t(im.rows) * size_t(im.cols));
  if (auto st = read_exact(f->get(), path, im.pixels.data(), im.pixels.size(), "the pixels"); !st) return Err{st.error()};
  return im;
}

Result<std::vector<uint8_t>> read_idx_labels(const std::string& path, int64_t limit) {
  auto f = open_gz(path);
  if (!f) return Err{f.error()};
  auto d = read_header(f->get(), path, 0x00000801, 1);
  if (!d) return Err{d.error()};
  int64_t n = (*d)[0];
  if (limit >= 0) n = std::min<int64_t>(n, limit);
  if (Status s = check_idx_claim(f->get(), path, 1, uint64_t(n), 1); !s) return Err{s.error()};
  std::vector<uint8_t> labels(static_cast<size_t>(n));
  if (auto st = read_exact(f->get(), path, labels.data(), labels.size(), "the labels"); !st) return Err{st.error()};
  for (size_t i = 0; i < labels.size(); ++i)
    if (labels[i] > 9) return Err{fmt::format("{}: label {} at index {} is not a class 0-9", path, labels[i], i)};
  return labels;
}

const std::vector<std::string>& fashion_mnist_classnames() {
  static const std::vector<std::string> v = {"t-shirt/top", "trouser", "pullover", "dress", "coat",
                                             "sandal",      "shirt",   "sneaker",  "bag",   "ankle boot"};
  return v;
}

const std::vector<std::string>& fashion_mnist_train_templates() {
  static const std::vector<std::string> v = {
      "a photo of a {c}.",         "a {c}.",
      "an image of a {c}.",        "a black and white photo of the {c}.",
      "a grayscale picture of a {c}.", "a small photo of a {c}.",
      "a product photo of a {c}.", "a {c} on a dark background.",
      "a low resolution image of a {c}.", "this is a {c}.",
      "a picture of the {c}.",     "a centered photo of a {c}.",
  };
  return v;
}

const std::vector<std::string>& fashion_mnist_eval_templates() {
  static const std::vector<std::string> v = {
      "a photo of the {c}.",        "a close-up photo of a {c}.", "a cropped photo of a {c}.",
      "a bad photo of a {c}.",      "itap of a {c}.",             "a {c}, a type of fashion item.",
      "a blurry photo of the {c}.",
  };
  return v;
}

std::string fill_template(const std::string& t, const std::string& c) {
  std::string out;
  size_t pos = t.find("{c}");
  if (pos == std::string::npos) return t;
  std::string before = t.substr(0, pos);
  bool vowel = !c.empty() && std::strchr("aeiouAEIOU", c[0]) != nullptr;
  if (vowel && (before == "a " || before.ends_with(" a "))) before.insert(before.size() - 1, "n");
  return before + c + t.substr(pos + 3);
}

namespace {

// A complete earlier import of this split with the same settings (`marker`, kept in its
// _done.json): fills r and returns true.
bool reuse_split(const nlohmann::json& marker, FashionMnistSplit& r) {
  auto old = fs::read_text(fs::join(r.dir, "_done.json"));
  if (!old) return false;
  auto j = nlohmann::json::parse(*old, nullptr, false);
  if (j.is_discarded() || j.value("settings", nlohmann::json()) != marker) return false;
  r.samples = j.value("samples", int64_t(0));
  r.shards = j.value("shards", int64_t(0));
  r.reused = true;
  return true;
}

// Sample idx of a split as a shard sample: the grey image as RGB PNG (resized to
// opt.image_size), a caption drawn from the training templates by (seed, split, index), the
// label and OpenCLIP-style json. "" on success, else what failed.
std::string make_sample(const FashionMnistOptions& opt, const std::string& split, const IdxImages& images,
                        const std::vector<uint8_t>& labels, int64_t idx, ShardSample& s) {
  const auto& classes = fashion_mnist_classnames();
  const auto& tmpls = fashion_mnist_train_templates();
  const size_t px = size_t(images.rows) * size_t(images.cols);
  ImageU8 im;
  im.width = images.cols;
  im.height = images.rows;
  im.rgb.resize(px * 3);
  const uint8_t* g = images.pixels.data() + size_t(idx) * px;
  for (size_t p = 0; p < px; ++p) im.rgb[3 * p] = im.rgb[3 * p + 1] = im.rgb[3 * p + 2] = g[p];
  if (opt.image_size != im.width || opt.image_size != im.height)
    im = resize(im, opt.image_size, opt.image_size, Interp::Bicubic);
  auto png = encode_image(im, ImageFormat::Png);
  if (!png) return png.error();
  const int label = labels[size_t(idx)];
  Rng rng(stream_seed(opt.seed, 0, SeedUse::Caption, split == "train" ? 0 : 1, uint64_t(idx)));
  std::string caption = fill_template(tmpls[size_t(rng.below(tmpls.size()))], classes[size_t(label)]);
  s.add("png", std::move(*png));
  s.add("txt", caption);
  s.add("cls", std::to_string(label));
  nlohmann::json meta = {{"key", s.key},          {"index", idx},          {"split", split},
                         {"label", label},        {"class", classes[size_t(label)]},
                         {"caption", caption},    {"width", opt.image_size}, {"height", opt.image_size},
                         {"status", "success"}};
  s.add("json", meta.dump(4));
  return "";
}

// One split (train or test) into r.dir: shards of opt.shard_size samples, then _done.json.
void import_split(const FashionMnistOptions& opt, const std::string& split, const nlohmann::json& marker,
                  FashionMnistSplit& r) {
  const std::string prefix = split == "train" ? "train" : "t10k";
  const std::string img_path = find_idx(opt.source, prefix + "-images-idx3-ubyte");
  const std::string lab_path = find_idx(opt.source, prefix + "-labels-idx1-ubyte");
  auto images = read_idx_images(img_path, opt.limit);
  if (!images) OC_USER_ERROR("{}", images.error());
  auto labels = read_idx_labels(lab_path, opt.limit);
  if (!labels) OC_USER_ERROR("{}", labels.error());
  if (int64_t(labels->size()) != images->count)
    OC_USER_ERROR("{} has {} images but {} has {} labels", img_path, images->count, lab_path, labels->size());
  if (images->count == 0) OC_USER_ERROR("{}: no images to import (--limit {})", img_path, opt.limit);
  fs::make_dirs(r.dir);
  const int64_t n = images->count, S = opt.shard_size;
  r.samples = n;
  r.shards = (n + S - 1) / S;
  Progress prog("fashion-mnist " + split, n);
  for (int64_t shard = 0; shard < r.shards; ++shard) {
    const int64_t first = shard * S, count = std::min(S, n - first);
    std::vector<ShardSample> samples(static_cast<size_t>(count));
    std::vector<std::string> errors(static_cast<size_t>(count));
#pragma omp parallel for schedule(dynamic, 64)
    for (int64_t i = 0; i < count; ++i) {
      samples[size_t(i)].key = sample_key(shard, i, S);
      errors[size_t(i)] = make_sample(opt, split, *images, *labels, first + i, samples[size_t(i)]);
    }
    for (auto& e : errors)
      if (!e.empty()) OC_USER_ERROR("fashion-mnist: encoding failed: {}", e);
    nlohmann::json stats = {{"count", count}, {"successes", count}, {"failed_to_download", 0},
                            {"failed_to_resize", 0}, {"status_dict", {{"success", count}}}};
    write_shard(r.dir, shard, samples, stats);
    prog.update(first + count, first + count);
  }
  prog.finish();
  write_sizes(r.dir, r.shards);
  fs::write_atomic(fs::join(r.dir, "_done.json"),
                   nlohmann::json{{"settings", marker}, {"samples", n}, {"shards", r.shards}}.dump(2));
}

}  // namespace

std::vector<FashionMnistSplit> import_fashion_mnist(const FashionMnistOptions& opt) {
  OC_CHECK(!opt.out.empty(), "no output folder");
  if (opt.image_size < 8 || opt.image_size > 1024) OC_USER_ERROR("--image-size {}: choose 8..1024", opt.image_size);
  if (opt.shard_size < 1) OC_USER_ERROR("--shard-size must be >= 1");
  fs::make_dirs(opt.out);
  std::vector<FashionMnistSplit> result;
  for (const auto& split : opt.splits) {
    if (split != "train" && split != "test") OC_USER_ERROR("--split '{}': choose train, test or both", split);
    FashionMnistSplit r;
    r.name = split;
    r.dir = fs::join(opt.out, split);
    nlohmann::json marker = {{"format", "openclip fashion-mnist shards v1"}, {"split", split},
                             {"image_size", opt.image_size}, {"shard_size", opt.shard_size},
                             {"limit", opt.limit}, {"seed", opt.seed}};
    if (!reuse_split(marker, r)) import_split(opt, split, marker, r);
    result.push_back(r);
  }
  nlohmann::json task = {{"name", "fashion-mnist"},
                         {"classnames", fashion_mnist_classnames()},
                         {"templates", fashion_mnist_eval_templates()},
                         {"train_templates", fashion_mnist_train_templates()},
                         {"note", "templates use {c}; the evaluation templates are not among the training captions"}};
  fs::write_atomic(fs::join(opt.out, "fashion_mnist_zeroshot.json"), task.dump(2));
  return result;
}

}  // namespace oc::data
