// CSV/TSV as OpenCLIP reads them with pandas.read_csv(sep=...): a header row, RFC 4180
// quoting (separators and newlines inside quotes, "" for a quote), CRLF, a UTF-8 BOM and
// blank lines tolerated. Streamed row by row, so a 3M-row file is never held as text.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "data/stream.h"

namespace oc::data {

// "\t", "\\t", "tab", "TAB" -> '\t'; "," "comma" -> ','; ";" "|" ... any single character.
Result<char> parse_separator(const std::string& text);
std::string separator_name(char sep);  // "TAB '\t'", "',' (comma)"

class CsvReader {
 public:
  CsvReader(std::unique_ptr<ByteStream> s, std::string path, char sep);
  // The next record; false at the end. An unterminated quote is an error with the line.
  Result<bool> next(std::vector<std::string>* fields);
  int64_t line() const { return line_; }  // 1-based line where the last record started

 private:
  int get();  // next byte or -1
  BufferedReader r_;
  std::string path_;
  char sep_;
  std::vector<uint8_t> chunk_;
  size_t pos_ = 0, end_ = 0;
  int64_t line_ = 0, cur_line_ = 1;
  int unget_ = -2;  // one byte of push-back (-2 = none)
  bool first_ = true, eof_ = false;
};

// The columns a dataset needs, read from a CSV with a header. `required` missing: an error
// that lists the columns found and the separator used (the comma-CSV-with-TAB mistake).
// A data row with fewer or more fields than the header is skipped (a missing caption must
// not become "") and recorded in `malformed`, for the caller to count and report.
struct CsvColumns {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> cols;  // cols[i] = values of the i-th requested name
  int64_t rows = 0;                            // rows kept
  struct Malformed {
    int64_t line;   // 1-based line where the row starts
    size_t fields;  // fields it has (the header has header.size())
  };
  std::vector<Malformed> malformed;
};
Result<CsvColumns> read_csv_columns(const std::string& path, char sep, const std::vector<std::string>& required,
                                    const std::vector<std::string>& optional = {});

// A field quoted when it holds the separator, a quote or a newline (pandas' QUOTE_MINIMAL).
std::string csv_field(const std::string& s, char sep);
std::string csv_row(const std::vector<std::string>& fields, char sep);

}  // namespace oc::data
