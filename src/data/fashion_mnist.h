// Fashion-MNIST (IDX files, gzipped or not) to webdataset shards in img2dataset's layout,
// with varied captions for training, a .cls label, and a zero-shot task file whose
// templates differ from the training ones (so zero-shot accuracy measures generalisation,
// not template recall). Images are PNG: lossless, so a decoded sample equals the IDX pixels.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"

namespace oc::data {

struct IdxImages {
  int64_t count = 0;
  int rows = 0, cols = 0;
  std::vector<uint8_t> pixels;  // count * rows * cols, row-major
};
// Reads at most `limit` items (all when < 0). Errors name the file and what is wrong.
Result<IdxImages> read_idx_images(const std::string& path, int64_t limit = -1);
Result<std::vector<uint8_t>> read_idx_labels(const std::string& path, int64_t limit = -1);

const std::vector<std::string>& fashion_mnist_classnames();
const std::vector<std::string>& fashion_mnist_train_templates();  // captions of the shards
const std::vector<std::string>& fashion_mnist_eval_templates();   // the zero-shot task's
// "a photo of a {c}." with c, and "a" -> "an" before a vowel.
std::string fill_template(const std::string& tmpl, const std::string& classname);

struct FashionMnistOptions {
  std::string source = "/usr/share/datasets/fashion-mnist";
  std::string out;
  std::vector<std::string> splits = {"train", "test"};
  int image_size = 28;        // 28 keeps the original pixels; otherwise bicubic resize
  int64_t shard_size = 2000;  // 30 train shards: room for workers x ranks, finer shard shuffling
  int64_t limit = -1;         // first N images per split (tests, quick demos)
  uint64_t seed = 0;          // caption template choice
};

struct FashionMnistSplit {
  std::string name, dir;
  int64_t samples = 0, shards = 0;
  bool reused = false;  // already complete with the same settings: nothing written
};

// Writes <out>/<split>/{00000..}.tar + sizes.json + _stats files, and
// <out>/fashion_mnist_zeroshot.json. Idempotent: a split whose marker (<split>/_done.json)
// records the same settings is left alone. Throws oc::Error on bad input or write errors.
std::vector<FashionMnistSplit> import_fashion_mnist(const FashionMnistOptions& opt);

}  // namespace oc::data
