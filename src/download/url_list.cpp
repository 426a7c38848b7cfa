// Reading URL lists in img2dataset's input formats.
#include "download/url_list.h"

#include <dirent.h>

#include <algorithm>
#include <sstream>
#include <unordered_set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "data/csv.h"
#include "io/parquet.h"

namespace oc::download {

namespace {

Result<std::vector<UrlRow>> read_one(const std::string& path, const std::string& format, const std::string& url_col,
                                     const std::string& caption_col) {
  std::vector<UrlRow> rows;
  if (format == "parquet") {
    auto f = io::ParquetFile::open(path);
    if (!f) return Err{f.error()};
    auto urls = f->read_strings(url_col);
    if (!urls) return Err{urls.error()};
    std::vector<std::optional<std::string>> caps;
    if (!caption_col.empty()) {
      auto c = f->read_strings(caption_col);
      if (!c) return Err{c.error()};
      caps = std::move(*c);
    }
    rows.resize(urls->size());
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i].url = (*urls)[i].value_or("");
      if (!caption_col.empty()) rows[i].caption = caps[i];
    }
    return rows;
  }
  if (format == "csv" || format == "tsv") {
    std::vector<std::string> req{url_col};
    if (!caption_col.empty()) req.push_back(caption_col);
    auto c = data::read_csv_columns(path, format == "csv" ? ',' : '\t', req);
    if (!c) return Err{c.error()};
    rows.resize(size_t(c->rows));
    for (size_t i = 0; i < rows.size(); ++i) {
      rows[i].url = c->cols[0][i];
      if (!caption_col.empty()) rows[i].caption = c->cols[1][i];
    }
    return rows;
  }
  auto text = fs::read_text(path, {.allow_pipe = true});  // --url-list <(zcat urls.gz) is fine
  if (!text) return Err{text.error()};
  std::istringstream in(*text);
  std::string line;
  int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (format == "txt") {
      rows.push_back({line, std::nullopt});  // txt has no header and no captions
      continue;
    }
    if (format != "jsonl") return Err{fmt::format("--input-format '{}': choose parquet, csv, tsv, jsonl or txt", format)};
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return Err{fmt::format("{}:{}: not a JSON object", path, lineno)};
    if (!j.contains(url_col) || !j[url_col].is_string())
      return Err{fmt::format("{}:{}: no string field '{}'", path, lineno, url_col)};
    UrlRow r{j[url_col].get<std::string>(), std::nullopt};
    if (!caption_col.empty() && j.contains(caption_col) && j[caption_col].is_string())
      r.caption = j[caption_col].get<std::string>();
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace

Result<std::vector<UrlRow>> read_url_list(const std::string& path, const std::string& format,
                                          const std::string& url_col, const std::string& caption_col) {
  static const char* kFormats[] = {"parquet", "csv", "tsv", "jsonl", "txt"};
  if (std::find(std::begin(kFormats), std::end(kFormats), format) == std::end(kFormats))
    return Err{fmt::format("--input-format '{}': choose parquet, csv, tsv, jsonl or txt", format)};
  if (!fs::is_dir(path)) return read_one(path, format, url_col, caption_col);
  std::vector<std::string> files;
  if (DIR* d = opendir(path.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > format.size() + 1 && n.compare(n.size() - format.size() - 1, std::string::npos, "." + format) == 0)
        files.push_back(fs::join(path, n));
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  if (files.empty()) return Err{fmt::format("{}: no *.{} files in this folder", path, format)};
  std::vector<UrlRow> all;
  for (const auto& f : files) {
    auto r = read_one(f, format, url_col, caption_col);
    if (!r) return r;
    all.insert(all.end(), std::make_move_iterator(r->begin()), std::make_move_iterator(r->end()));
  }
  return all;
}

std::vector<UrlRow> first_caption_per_url(std::vector<UrlRow> rows) {
  std::unordered_set<std::string> seen;
  std::vector<UrlRow> out;
  for (auto& r : rows)
    if (seen.insert(r.url).second) out.push_back(std::move(r));
  return out;
}

}  // namespace oc::download
