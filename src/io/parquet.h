// A small Parquet reader for URL lists (img2dataset's input): flat schemas, string
// (BYTE_ARRAY) columns read whole, PLAIN and dictionary (PLAIN_DICTIONARY / RLE_DICTIONARY)
// encodings, optional columns (RLE/bit-packed definition levels), data pages v1 and v2,
// uncompressed / snappy / gzip / zstd, any number of row groups. Debian ships no Arrow, and a
// URL list needs nothing more. Damage is an error naming the path, column and byte offset.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"
#include "io/file.h"

namespace oc::io {

struct ParquetColumnChunk {
  int physical_type = -1;  // 6 = BYTE_ARRAY
  int codec = 0;           // 0 none, 1 snappy, 2 gzip, 6 zstd
  int64_t num_values = 0, data_page_offset = 0, dictionary_page_offset = -1, total_compressed_size = 0;
  std::vector<std::string> path;
};

struct ParquetRowGroup {
  int64_t num_rows = 0;
  std::vector<ParquetColumnChunk> columns;
};

struct ParquetSchemaColumn {
  std::string name;
  int physical_type = -1;
  int repetition = 0;  // 0 required, 1 optional, 2 repeated
};

struct ParquetMeta {
  int64_t num_rows = 0;
  std::vector<ParquetSchemaColumn> columns;  // leaf columns of a flat schema, in file order
  std::vector<ParquetRowGroup> row_groups;
};

// Decodes the FileMetaData (Thrift compact protocol) of a footer.
Result<ParquetMeta> parse_parquet_footer(std::span<const uint8_t> footer);

class ParquetFile {
 public:
  static Result<ParquetFile> open(const std::string& path);
  const ParquetMeta& meta() const { return meta_; }
  int64_t num_rows() const { return meta_.num_rows; }
  std::vector<std::string> column_names() const;
  // All values of a string column, row order; a null is std::nullopt.
  Result<std::vector<std::optional<std::string>>> read_strings(const std::string& column) const;

 private:
  ParquetFile(ReadFile f, ParquetMeta m) : f_(std::move(f)), meta_(std::move(m)) {}
  ReadFile f_;
  ParquetMeta meta_;
};

// Exposed for tests: page decompression and the RLE/bit-packed hybrid.
Result<std::vector<uint8_t>> parquet_decompress(int codec, std::span<const uint8_t> in, size_t uncompressed_size);
// Decodes `count` values of `bit_width` bits; false when the input ends early.
bool decode_rle_hybrid(std::span<const uint8_t> in, int bit_width, size_t count, std::vector<uint32_t>* out);

}  // namespace oc::io
