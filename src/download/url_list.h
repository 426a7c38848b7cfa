// img2dataset's input: a URL list (one file, or a folder of files of one format) as
// parquet, csv, tsv, jsonl or txt, with a URL column and an optional caption column.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace oc::download {

struct UrlRow {
  std::string url;
  std::optional<std::string> caption;
};

// format: parquet | csv | tsv | jsonl | txt. caption_col "" = no captions. A folder reads
// every file ending in .<format>, sorted by name.
Result<std::vector<UrlRow>> read_url_list(const std::string& path, const std::string& format,
                                          const std::string& url_col, const std::string& caption_col);

// Keeps the first row of every URL (MSCOCO lists a URL once per caption; the seed keeps one).
std::vector<UrlRow> first_caption_per_url(std::vector<UrlRow> rows);

}  // namespace oc::download
