// openclip data fashion-mnist | shards | split | inspect | download: dataset tools (docs/DATA.md).
#include <cstdio>

#include "cli/cmd_data.h"
#include "cli/command.h"
#include "cli/data_download.h"
#include "core/check.h"

namespace oc::cli {
namespace {

const char* kUsage =
    "usage: openclip data <tool> [options]   (openclip data <tool> --help)\n\n"
    "tools:\n"
    "  fashion-mnist  Fashion-MNIST IDX files -> webdataset shards + a zero-shot task file\n"
    "  shards         images from a CSV or a folder -> webdataset shards (img2dataset layout)\n"
    "  split          a CSV -> train/test CSVs with no image in both\n"
    "  inspect        what a shard set holds: samples, skips by reason, sizes, damage\n"
    "  download       a URL list -> webdataset shards (img2dataset's options and layout)\n";

int run(const std::vector<std::string>& args) {
  if (args.empty()) return std::fprintf(stderr, "%s", kUsage), 2;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  const std::string& t = args[0];
  if (t == "fashion-mnist") return data_fashion_mnist(rest);
  if (t == "shards") return data_shards(rest);
  if (t == "split") return data_split(rest);
  if (t == "inspect") return data_inspect(rest);
  if (t == "download") return run_data_download(rest);
  if (t == "--help" || t == "-h") return std::printf("%s", kUsage), 0;
  OC_USER_ERROR("data: unknown tool '{}'; choose fashion-mnist, shards, split, inspect or download", t);
}

OC_REGISTER_COMMAND("data", "dataset tools: fashion-mnist | shards | split | inspect | download", run);

}  // namespace
}  // namespace oc::cli
