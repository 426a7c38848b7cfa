// openclip data fashion-mnist: IDX files -> webdataset shards (called from cmd_data.cpp).
#include <cstdio>

#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/flags.h"
#include "data/fashion_mnist.h"

namespace oc::cli {

int data_fashion_mnist(const std::vector<std::string>& args) {
  Options o = options_for("data fashion-mnist");
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
