// openclip data fashion-mnist: IDX files -> webdataset shards (called from cmd_data.cpp).
#include <cstdio>

#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/options.h"
#include "data/fashion_mnist.h"

namespace oc::cli {

int data_fashion_mnist(const std::vector<std::string>& args) {
  Options o("data fashion-mnist",
            "Fashion-MNIST to webdataset shards: PNG images (lossless), varied captions, .cls labels, "
            "sizes.json, and <out>/fashion_mnist_zeroshot.json (class names + evaluation templates).",
            {{"out", OptType::String, "", "output folder (gets train/ and test/)", ""},
             {"split", OptType::String, "both", "train, test or both", ""},
             {"image-size", OptType::Int, "28", "image side in pixels (28 = the original pixels)", ""},
             {"shard-size", OptType::Int, "2000", "samples per shard (2000: 30 train shards, enough for workers x ranks)", ""},
             {"source", OptType::String, "/usr/share/datasets/fashion-mnist",
              "folder with the IDX files (.gz or not; Debian package dataset-fashion-mnist)", ""},
             {"limit", OptType::Int, "-1", "only the first N images of each split (-1: all)", ""},
             {"seed", OptType::Int, "0", "seed of the caption template choice", ""}});
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  if (!o.has("out")) OC_USER_ERROR("data fashion-mnist: --out is required");
  data::FashionMnistOptions f;
  f.out = o.get("out");
  f.source = o.get("source");
  std::string split = o.get("split");
  if (split == "both") f.splits = {"train", "test"};
  else f.splits = {split};
  f.image_size = int(o.get_int("image-size"));
  f.shard_size = o.get_int("shard-size");
  f.limit = o.get_int("limit");
  f.seed = uint64_t(o.get_int("seed"));
  for (auto& r : data::import_fashion_mnist(f))
    std::printf("%-5s %7lld samples in %lld shard(s) at %s%s\n", r.name.c_str(), (long long)r.samples,
                (long long)r.shards, r.dir.c_str(), r.reused ? " (already complete)" : "");
  std::printf("zero-shot task: %s/fashion_mnist_zeroshot.json\n", f.out.c_str());
  return 0;
}

}  // namespace oc::cli
