#include "data/csv.h"

#include <algorithm>

#include <fmt/format.h>

namespace oc::data {

Result<char> parse_separator(const std::string& t) {
  if (t == "\t" || t == "\\t" || t == "tab" || t == "TAB") return '\t';
  if (t == "comma") return ',';
  if (t == "semicolon") return ';';
  if (t.size() == 1 && t[0] != '"' && t[0] != '\n' && t[0] != '\r') return t[0];
  return Err{fmt::format("--csv-separator '{}': give one character (or \\t / tab)", t)};
}

std::string separator_name(char sep) {
  if (sep == '\t') return "TAB '\\t'";
  if (sep == ',') return "',' (comma)";
  return fmt::format("'{}'", sep);
}

CsvReader::CsvReader(std::unique_ptr<ByteStream> s, std::string path, char sep)
    : r_(std::move(s)), path_(std::move(path)), sep_(sep), chunk_(1 << 16) {}

int CsvReader::get() {
  if (unget_ != -2) {
    int c = unget_;
    unget_ = -2;
    return c;
  }
  if (pos_ == end_) {
    if (eof_) return -1;
    auto n = r_.read(chunk_.data(), chunk_.size());
    if (!n || *n == 0) {  // a read error ends the file; the caller sees a short table
      eof_ = true;
      return -1;
    }
    pos_ = 0;
    end_ = *n;
  }
  return chunk_[pos_++];
}

Result<bool> CsvReader::next(std::vector<std::string>* fields) {
  for (;;) {
    fields->clear();
    int c = get();
    if (first_) {
      first_ = false;
      if (c == 0xEF) {  // UTF-8 BOM
        int c2 = get(), c3 = get();
        if (c2 != 0xBB || c3 != 0xBF) return Err{fmt::format("{}: line 1: stray bytes at the start", path_)};
        c = get();
      }
    }
    if (c == -1) return false;
    line_ = cur_line_;
    std::string f;
    bool in_quotes = false, field_start = true, had_quotes = false;
    for (;;) {
      if (in_quotes) {
        if (c == -1) return Err{fmt::format("{}: line {}: a quoted field is never closed", path_, line_)};
        if (c == '"') {
          int d = get();
          if (d == '"') {
            f += '"';
            c = get();
          } else {
            in_quotes = false;
            c = d;
          }
          continue;
        }
        if (c == '\n') ++cur_line_;
        f += char(c);
        c = get();
        continue;
      }
      if (c == -1 || c == '\n' || c == '\r') {  // end of record (\n, \r\n or a lone \r)
        if (c == '\r') {
          int d = get();
          if (d != '\n') unget_ = d;
        }
        if (c != -1) ++cur_line_;
        fields->push_back(std::move(f));
        if (fields->size() == 1 && (*fields)[0].empty() && !had_quotes) break;  // blank line
        return true;
      }
      if (c == (unsigned char)sep_) {
        fields->push_back(std::move(f));
        f.clear();
        field_start = true;
        c = get();
        continue;
      }
      if (c == '"' && field_start) {
        in_quotes = had_quotes = true;
        field_start = false;
        c = get();
        continue;
      }
      f += char(c);
      field_start = false;
      c = get();
    }
  }
}

Result<CsvColumns> read_csv_columns(const std::string& path, char sep, const std::vector<std::string>& required,
                                    const std::vector<std::string>& optional) {
  auto s = open_stream(path);
  if (!s) return Err{s.error()};
  CsvReader rd(std::move(*s), path, sep);
  CsvColumns out;
  auto h = rd.next(&out.header);
  if (!h) return Err{h.error()};
  if (!*h) return Err{fmt::format("{}: empty file (no header row)", path)};
  std::vector<std::string> names = required;
  names.insert(names.end(), optional.begin(), optional.end());
  std::vector<int> idx;
  for (size_t i = 0; i < names.size(); ++i) {
    auto it = std::find(out.header.begin(), out.header.end(), names[i]);
    if (it == out.header.end()) {
      if (i >= required.size()) {
        idx.push_back(-1);
        continue;
      }
      std::string found;
      for (auto& c : out.header) found += (found.empty() ? "" : ", ") + fmt::format("'{}'", c);
      std::string hint;
      if (out.header.size() == 1 && sep == '\t' && out.header[0].find(',') != std::string::npos)
        hint = "; the header contains commas: pass --csv-separator ','";
      return Err{fmt::format("{}: no column '{}' (columns found: {}; separator used: {}){}", path, names[i], found,
                             separator_name(sep), hint)};
    }
    idx.push_back(int(it - out.header.begin()));
  }
  out.cols.resize(names.size());
  std::vector<std::string> row;
  for (;;) {
    auto r = rd.next(&row);
    if (!r) return Err{r.error()};
    if (!*r) break;
    if (row.size() != out.header.size()) {
      out.malformed.push_back({rd.line(), row.size()});
      continue;
    }
    for (size_t i = 0; i < names.size(); ++i)
      out.cols[i].push_back(idx[i] >= 0 ? row[size_t(idx[i])] : std::string());
    ++out.rows;
  }
  return out;
}

std::string csv_field(const std::string& s, char sep) {
  if (s.find_first_of(std::string{sep, '"', '\n', '\r'}) == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) {
    if (c == '"') q += '"';
    q += c;
  }
  return q + "\"";
}

std::string csv_row(const std::vector<std::string>& fields, char sep) {
  std::string out;
  for (size_t i = 0; i < fields.size(); ++i) {
    if (i) out += sep;
    out += csv_field(fields[i], sep);
  }
  return out + "\n";
}

}  // namespace oc::data
