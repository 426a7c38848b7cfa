// openclip data fashion-mnist: IDX files -> webdataset shards (called from cmd_data.cpp).
#include <cstdio>

#include "cli/args.h"
#include "cli/cmd_data.h"
#include "core/check.h"
#include "core/flags.h"
#include "data/fashion_mnist.h"

namespace oc::cli {

int data_fashion_mnist(const std::vector<std::string>& args) {
  DataToolArgs a;
  if (!parse_flags("data fashion-mnist", args, &a)) return 0;
  if (a.out.empty()) OC_USER_ERROR("data fashion-mnist: --out is required");
  data::FashionMnistOptions f;
  f.out = a.out;
  f.source = a.source;
  const std::string& split = a.split;
  if (split == "both") f.splits = {"train", "test"};
  else f.splits = {split};
  f.image_size = a.image_size;
  f.shard_size = a.shard_size;
  f.limit = a.limit;
  f.seed = uint64_t(a.seed);
  for (auto& r : data::import_fashion_mnist(f))
    std::printf("%-5s %7lld samples in %lld shard(s) at %s%s\n", r.name.c_str(), (long long)r.samples,
                (long long)r.shards, r.dir.c_str(), r.reused ? " (already complete)" : "");
  std::printf("zero-shot task: %s/fashion_mnist_zeroshot.json\n", f.out.c_str());
  return 0;
}

}  // namespace oc::cli
