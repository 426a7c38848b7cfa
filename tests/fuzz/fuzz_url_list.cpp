// libFuzzer target: img2dataset URL lists in the text formats (csv, tsv, jsonl, txt; parquet
// has its own target). The first byte picks the format.
#include "download/url_list.h"
#include "fuzz_util.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  static const char* kFormats[] = {"csv", "tsv", "jsonl", "txt"};
  const std::string format = kFormats[data[0] % 4];
  std::string path = fuzz::write_input(data + 1, size - 1, "." + format);
  fuzz::guarded([&] {
    auto rows = download::read_url_list(path, format, "url", data[0] & 4 ? "caption" : "");
    if (rows.ok()) (void)download::first_caption_per_url(std::move(*rows));
  });
  return 0;
}
