// Thrift compact protocol, only as much as Parquet's footer and page headers need: a
// bounded cursor that decodes varints, zigzag integers, strings, list/struct headers and
// skips any field it does not use. Internal to the Parquet reader.
#pragma once
#include <cstdint>
#include <span>
#include <string>

#include "core/result.h"

namespace oc::io {

enum class TType : uint8_t { Stop = 0, True = 1, False = 2, Byte = 3, I16 = 4, I32 = 5, I64 = 6, Double = 7,
                             Binary = 8, List = 9, Set = 10, Map = 11, Struct = 12 };

class ThriftReader {
 public:
  explicit ThriftReader(std::span<const uint8_t> b) : b_(b) {}
  bool ok() const { return ok_; }
  size_t pos() const { return pos_; }
  const std::string& error() const { return err_; }

  // Next field header of the current struct; false at STOP (or on error).
  bool next_field(int16_t* id, TType* type);
  // Structs and skipped containers nest at most kMaxDepth deep (a hostile footer cannot
  // recurse the stack away).
  static constexpr int kMaxDepth = 60;
  void begin_struct();
  void end_struct();
  uint64_t varint();
  int64_t zigzag() { uint64_t v = varint(); return int64_t(v >> 1) ^ -int64_t(v & 1); }
  int64_t read_int(TType t);  // I16/I32/I64/Byte
  std::string binary();
  void list_header(TType* elem, int64_t* n);
  void skip(TType t);
  void skip_element(TType t);  // a list/set/map element (bools take a byte here)
  bool bool_value(TType t) { return t == TType::True; }
  void fail(const std::string& what);

 private:
  uint8_t byte();
  void check_count(const char* what, uint64_t n, uint64_t min_bytes);
  std::span<const uint8_t> b_;
  size_t pos_ = 0;
  bool ok_ = true;
  std::string err_;
  int16_t last_id_ = 0;
  int16_t last_id_stack_[64] = {};
  int depth_ = 0;
};

struct PageHeader {
  int type = -1;  // 0 data v1, 2 dictionary, 3 data v2
  int32_t uncompressed_size = 0, compressed_size = 0;
  int32_t num_values = 0, encoding = 0, def_encoding = 3;
  int32_t v2_def_len = 0, v2_rep_len = 0, v2_num_nulls = 0;
  bool v2_compressed = true;
  size_t header_size = 0;  // bytes the header itself took
};
// Parses a PageHeader at the start of `b` (its size is not known in advance).
Result<PageHeader> parse_page_header(std::span<const uint8_t> b);

}  // namespace oc::io
