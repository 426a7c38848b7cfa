// The data tools: Fashion-MNIST import (counts, pixels equal the IDX file, captions,
// zero-shot task, idempotence), the img2dataset-style shard writer (layout, resize modes,
// resume), CSV split (no image on both sides), inspect, and the CLI entry points.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <set>

#include <fmt/format.h>

#include "core/check.h"
#include "core/fs.h"
#include "data/csv.h"
#include "data/csv_split.h"
#include "data/fashion_mnist.h"
#include "data/helpers.h"
#include "data/inspect.h"
#include "data/shard_tool.h"
#include "data/shard_writer.h"
#include "data/webdataset.h"
#include "image/codec.h"

namespace oc::data {
namespace {
using namespace oc::data::testing;

const char* kFmnist = "/usr/share/datasets/fashion-mnist";

std::vector<WdsSample> read_shard(const std::string& path) {
  static DataStats stats;
  bool given = false;
  TarSampleStream s([&]() -> std::optional<std::string> {
    if (given) return std::nullopt;
    given = true;
    return path;
  }, &stats, [](const std::string&) { return true; });
  std::vector<WdsSample> out;
  while (auto x = s.next()) out.push_back(std::move(*x));
  return out;
}

std::string str(const std::vector<uint8_t>* b) { return b ? std::string(b->begin(), b->end()) : "<none>"; }

TEST(FashionMnist, ImportsASubsetExactly) {
  if (!fs::exists(std::string(kFmnist) + "/train-images-idx3-ubyte.gz"))
    GTEST_SKIP() << "no Fashion-MNIST in " << kFmnist << " (Debian package dataset-fashion-mnist)";
  std::string out = temp_dir("fmnist");
  FashionMnistOptions o;
  o.out = out;
  o.limit = 50;
  o.shard_size = 20;
  auto res = import_fashion_mnist(o);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(res[0].samples, 50);
  EXPECT_EQ(res[0].shards, 3);
  EXPECT_FALSE(res[0].reused);
  auto sizes = nlohmann::json::parse(read_text(out + "/train/sizes.json"));
  EXPECT_EQ(sizes, (nlohmann::json{{"00000.tar", 20}, {"00001.tar", 20}, {"00002.tar", 10}}));

  auto idx = read_idx_images(std::string(kFmnist) + "/train-images-idx3-ubyte.gz", 50);
  auto lab = read_idx_labels(std::string(kFmnist) + "/train-labels-idx1-ubyte.gz", 50);
  ASSERT_TRUE(idx.ok() && lab.ok());
  // First train labels of Fashion-MNIST (formats.md, verified): 9 0 0 3 0 2 7 2 5 5.
  EXPECT_EQ(std::vector<uint8_t>(lab->begin(), lab->begin() + 10), (std::vector<uint8_t>{9, 0, 0, 3, 0, 2, 7, 2, 5, 5}));
  std::set<std::string> train_t(fashion_mnist_train_templates().begin(), fashion_mnist_train_templates().end());
  std::set<std::string> captions_seen;
  int64_t i = 0;
  for (int shard = 0; shard < 3; ++shard) {
    auto samples = read_shard(out + "/train/" + shard_name(shard));
    for (size_t k = 0; k < samples.size(); ++k, ++i) {
      const auto& s = samples[k];
      EXPECT_EQ(s.key, sample_key(shard, int64_t(k), 20));
      EXPECT_EQ(s.exts, (std::vector<std::string>{"cls", "json", "png", "txt"}));  // sorted, as TarWriter
      auto img = decode_image(*s.find("png"));
      ASSERT_TRUE(img.ok());
      ASSERT_EQ(img->width, 28);
      for (size_t p = 0; p < 784; ++p)  // lossless: gray -> R = G = B = the IDX pixel
        for (int c = 0; c < 3; ++c) ASSERT_EQ(img->rgb[3 * p + size_t(c)], idx->pixels[size_t(i) * 784 + p]) << i;
      int label = (*lab)[size_t(i)];
      EXPECT_EQ(str(s.find("cls")), std::to_string(label));
      std::string cap = str(s.find("txt"));
      bool from_template = false;
      for (auto& t : train_t) from_template |= fill_template(t, fashion_mnist_classnames()[size_t(label)]) == cap;
      EXPECT_TRUE(from_template) << cap;
      captions_seen.insert(cap.substr(0, cap.find(fashion_mnist_classnames()[size_t(label)])));
      auto meta = nlohmann::json::parse(str(s.find("json")));
      EXPECT_EQ(meta["label"], label);
      EXPECT_EQ(meta["index"], i);
    }
  }
  EXPECT_EQ(i, 50);
  EXPECT_GE(captions_seen.size(), 5u);  // the templates vary across samples

  auto task = nlohmann::json::parse(read_text(out + "/fashion_mnist_zeroshot.json"));
  EXPECT_EQ(task["classnames"].size(), 10u);
  EXPECT_EQ(task["classnames"][0], "t-shirt/top");
  for (auto& t : task["templates"]) EXPECT_EQ(train_t.count(t.get<std::string>()), 0u) << t;
  EXPECT_GE(fashion_mnist_train_templates().size(), 10u);

  // Idempotent: the second run reuses everything, and a different setting redoes the split.
  struct stat before {}, after {};
  ::stat((out + "/train/00000.tar").c_str(), &before);
  auto again = import_fashion_mnist(o);
  EXPECT_TRUE(again[0].reused && again[1].reused);
  ::stat((out + "/train/00000.tar").c_str(), &after);
  EXPECT_EQ(before.st_mtim.tv_nsec, after.st_mtim.tv_nsec);
  o.splits = {"test"};
  o.limit = 30;
  auto t = import_fashion_mnist(o);
  ASSERT_EQ(t.size(), 1u);
  EXPECT_FALSE(t[0].reused);
  EXPECT_EQ(t[0].samples, 30);
}

TEST(FashionMnist, IdxErrorsNameTheFile) {
  std::string d = temp_dir("idx");
  write_text(d + "/bad-images", std::string("\x00\x00\x08\x01\x00\x00\x00\x01", 8));
  auto r = read_idx_images(d + "/bad-images");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().find(d + "/bad-images: magic 0x00000801"), std::string::npos) << r.error();
  write_text(d + "/short-images", std::string("\x00\x00\x08\x03\x00\x00\x00\x05\x00\x00\x00\x1c\x00\x00\x00\x1c", 16) + "xx");
  auto s = read_idx_images(d + "/short-images");
  ASSERT_FALSE(s.ok());
  // A short file is refused from its header's claim, before the pixels are allocated.
  EXPECT_NE(s.error().find(d + "/short-images: the IDX header claims 5 x 784 bytes = 3920 bytes but only 2 are present"),
            std::string::npos)
      << s.error();
  auto m = read_idx_labels(d + "/nothere.gz");
  ASSERT_FALSE(m.ok());
  EXPECT_NE(m.error().find("nothere.gz: no such file"), std::string::npos);
  EXPECT_EQ(fill_template("a {c}.", "ankle boot"), "an ankle boot.");
  EXPECT_EQ(fill_template("this is a {c}.", "coat"), "this is a coat.");
}

ImageU8 solid(int w, int h, uint8_t v) {
  ImageU8 im;
  im.width = w;
  im.height = h;
  im.rgb.assign(size_t(w) * h * 3, v);
  return im;
}

TEST(ShardTool, ResizeModes) {
  ImageU8 im = solid(200, 100, 10);
  auto k = resize_for_shard(im, 64, ShardResize::KeepRatio);
  EXPECT_EQ(k.height, 64);
  EXPECT_EQ(k.width, 128);
  auto c = resize_for_shard(im, 64, ShardResize::CenterCrop);
  EXPECT_EQ(c.width, 64);
  EXPECT_EQ(c.height, 64);
  auto b = resize_for_shard(im, 64, ShardResize::Border);
  ASSERT_EQ(b.width, 64);
  ASSERT_EQ(b.height, 64);
  EXPECT_EQ(b.row(0)[0], 255);          // white padding above
  EXPECT_NEAR(b.row(32)[96], 10, 1);    // the image in the middle
  EXPECT_EQ(resize_for_shard(im, 64, ShardResize::No).width, 200);
  EXPECT_FALSE(parse_resize_mode("stretch").ok());
}

TEST(ShardTool, FolderToImg2datasetLayoutAndResume) {
  std::string src = temp_dir("shard_src"), out = temp_dir("shard_out");
  ASSERT_EQ(std::system(("mkdir -p " + src + "/cat " + src + "/dog_house").c_str()), 0);
  for (int i = 0; i < 5; ++i) {
    auto jpg = encode_image(solid(40 + i, 30, uint8_t(20 * i)), ImageFormat::Jpeg, 90);
    fs::write_atomic(src + fmt::format("/cat/{}.jpg", i), *jpg);
  }
  write_text(src + "/cat/1.txt", "first line\nsecond line\n");
  auto png = encode_image(solid(10, 20, 99), ImageFormat::Png);
  fs::write_atomic(src + "/dog_house/a.png", *png);
  write_text(src + "/dog_house/broken.jpg", "not a jpeg");
  auto in = inputs_from_folder(src);
  ASSERT_TRUE(in.ok()) << in.error();
  ASSERT_EQ(in->size(), 7u);
  EXPECT_EQ((*in)[0].caption, "cat");
  EXPECT_EQ((*in)[1].caption, "first line\nsecond line");
  EXPECT_EQ((*in)[6].caption, "dog house");

  ShardToolOptions o;
  o.out = out;
  o.shard_size = 3;
  o.image_size = 16;
  o.first_caption_only = true;
  auto r = write_shards(*in, o);
  EXPECT_EQ(r.shards, 3);
  EXPECT_EQ(r.successes, 6);
  EXPECT_EQ(r.failed_to_resize, 1);
  auto sizes = nlohmann::json::parse(read_text(out + "/sizes.json"));
  int64_t total = 0;
  for (auto& [k, v] : sizes.items()) total += v.get<int64_t>();
  EXPECT_EQ(total, 6);
  auto s0 = read_shard(out + "/00000.tar");
  ASSERT_EQ(s0.size(), 3u);
  EXPECT_EQ(s0[0].key, "000000");  // k = ceil(log10(3)) = 1 -> 6 digits
  EXPECT_EQ(s0[1].exts, (std::vector<std::string>{"jpg", "json", "txt"}));
  EXPECT_EQ(str(s0[1].find("txt")), "first line");
  auto img = decode_image(*s0[0].find("jpg"));
  ASSERT_TRUE(img.ok());
  EXPECT_EQ(img->height, 16);  // keep_ratio: shortest side 16
  auto meta = nlohmann::json::parse(str(s0[0].find("json")));
  EXPECT_EQ(meta["original_width"], 40);
  // Sorted input: cat/0..4.jpg, dog_house/a.png, dog_house/broken.jpg -> broken.jpg is the
  // only sample of shard 2; failed samples are not in the tar (img2dataset: keys have gaps).
  auto st2 = nlohmann::json::parse(read_text(out + "/00002_stats.json"));
  EXPECT_EQ(st2["count"], 1);
  EXPECT_EQ(st2["successes"], 0);
  EXPECT_EQ(st2["failed_to_resize"], 1);
  EXPECT_EQ(read_shard(out + "/00001.tar").size(), 3u);
  EXPECT_EQ(read_shard(out + "/00002.tar").size(), 0u);
  EXPECT_EQ(sizes["00002.tar"], 0);

  // Resume: finished shards are kept; a shard without stats (killed run) is rewritten.
  ASSERT_EQ(::unlink((out + "/00001_stats.json").c_str()), 0);
  write_text(out + "/00001.tar", "truncated");
  auto r2 = write_shards(*in, o);
  EXPECT_EQ(r2.shards_skipped, 2);
  EXPECT_EQ(r2.successes, 6);
  EXPECT_EQ(read_shard(out + "/00001.tar").size(), 3u);

  auto rep = inspect_shards({out + "/00000.tar", out + "/00001.tar", out + "/00002.tar"}, true);
  EXPECT_EQ(rep.usable, 6);
  EXPECT_EQ(rep.width.max, 23);  // 44x30 -> shortest side 16 -> 23.47 wide, rounded
}

TEST(CsvSplit, NoImageInBothSplits) {
  std::string d = temp_dir("split");
  std::string csv = "filepath\ttitle\n";
  for (int img = 0; img < 10; ++img)
    for (int c = 0; c < 3; ++c) csv += fmt::format("im{}.jpg\t\"caption {} of\timage {}\"\n", img, c, img);
  write_text(d + "/all.tsv", csv);
  SplitOptions o;
  o.csv = d + "/all.tsv";
  o.test_size = 3;
  o.seed = 1;
  auto r = split_csv(o);
  EXPECT_EQ(r.test_groups, 3);
  EXPECT_EQ(r.test_rows, 9);
  EXPECT_EQ(r.train_rows, 21);
  EXPECT_EQ(r.train_path, d + "/all_train.tsv");
  auto tr = read_csv_columns(r.train_path, '\t', {"filepath", "title"});
  auto te = read_csv_columns(r.test_path, '\t', {"filepath", "title"});
  ASSERT_TRUE(tr.ok() && te.ok());
  std::set<std::string> a(tr->cols[0].begin(), tr->cols[0].end()), b(te->cols[0].begin(), te->cols[0].end());
  for (auto& x : b) EXPECT_EQ(a.count(x), 0u) << x << " is in both";
  EXPECT_EQ(a.size() + b.size(), 10u);
  EXPECT_EQ(te->cols[1][0].find("caption 0 of\timage"), 0u);  // quoted separators survive
  auto r2 = split_csv(o);  // same seed: same split
  EXPECT_EQ(read_text(r.test_path), read_text(r2.test_path));
  o.test_size = 0.5;
  o.out_prefix = d + "/half";
  EXPECT_EQ(split_csv(o).test_groups, 5);
  o.group_by = "nope";
  EXPECT_THROW(split_csv(o), Error);
  o.group_by = "filepath";
  o.test_size = 10;
  EXPECT_THROW(split_csv(o), Error);  // nothing left to train on
}

TEST(Inspect, HeaderSizesAndFixtureCounts) {
  for (auto f : {ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Webp}) {
    auto b = encode_image(solid(37, 21, 7), f, 90);
    ASSERT_TRUE(b.ok());
    int w = 0, h = 0;
    std::string name;
    ASSERT_TRUE(image_header_size(*b, &w, &h, &name)) << int(f);
    EXPECT_EQ(w, 37);
    EXPECT_EQ(h, 21);
  }
  EXPECT_TRUE(valid_utf8("caf\xc3\xa9"));
  EXPECT_FALSE(valid_utf8("bad \xff\xfe"));
  EXPECT_FALSE(valid_utf8("\xc0\xaf"));  // overlong

  OC_NEED_FIXTURES();
  auto e = expected();
  std::vector<std::string> urls;
  for (auto& n : e["order"]) urls.push_back(fixture_dir() + "/" + n.get<std::string>());
  auto rep = inspect_shards(urls, false);
  EXPECT_EQ(rep.shards, 12);
  EXPECT_EQ(rep.shards_opened, 10);
  EXPECT_EQ(rep.skipped["no_caption"], 1);
  EXPECT_EQ(rep.skipped["no_image"], 3);
  EXPECT_EQ(rep.skipped["decode_error"], 2);  // empty + garbage: no image header
  EXPECT_EQ(rep.skipped["bad_caption"], 1);
  EXPECT_EQ(rep.problems.size(), 6u);  // 3 damaged, 1 empty, 1 directory, 1 missing
  bool offset_named = false;
  for (auto& [s, err] : rep.problems) offset_named |= err.find("trunc.tar: unexpected end of data") != std::string::npos;
  EXPECT_TRUE(offset_named);
  auto j = rep.json();
  EXPECT_EQ(j["skipped"]["no_image"], 3);
}

TEST(DataCli, CommandsRunFromTheBinary) {
  if (!fs::exists(OPENCLIP_BINARY)) GTEST_SKIP() << "the CLI is not built (full build builds it)";
  OC_NEED_FIXTURES();
  std::string out = run_capture(std::string(OPENCLIP_BINARY) + " data inspect '" + fixture_dir() +
                                "/{good,bad}.tar' --json");
  auto j = nlohmann::json::parse(out);
  EXPECT_EQ(j["samples"], 6 + 9);
  EXPECT_EQ(j["usable"], 6 + 4);
  std::string help = run_capture(std::string(OPENCLIP_BINARY) + " data --help");
  EXPECT_NE(help.find("fashion-mnist"), std::string::npos);
  EXPECT_NE(std::system((std::string(OPENCLIP_BINARY) + " data shards --out /nonexistent 2>/dev/null").c_str()), 0);
}

}  // namespace
}  // namespace oc::data
