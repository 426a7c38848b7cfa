// Thrift compact protocol decoding of Parquet's FileMetaData and PageHeader (parquet.thrift
// field ids); unknown fields are skipped so newer writers' extra metadata is harmless.
#include "io/parquet_thrift.h"

#include <fmt/format.h>

#include "core/limits.h"

#include "io/parquet.h"

namespace oc::io {

void ThriftReader::fail(const std::string& what) {
  if (ok_) err_ = fmt::format("{} at byte {}", what, pos_);
  ok_ = false;
  pos_ = b_.size();
}

uint8_t ThriftReader::byte() {
  if (pos_ >= b_.size()) {
    fail("thrift: unexpected end of data");
    return 0;
  }
  return b_[pos_++];
}

uint64_t ThriftReader::varint() {
  uint64_t v = 0;
  for (int shift = 0; shift < 64 && ok_; shift += 7) {
    uint8_t c = byte();
    v |= uint64_t(c & 0x7f) << shift;
    if (!(c & 0x80)) return v;
  }
  fail("thrift: bad varint");
  return 0;
}

bool ThriftReader::next_field(int16_t* id, TType* type) {
  if (!ok_) return false;
  uint8_t h = byte();
  if (!ok_ || h == 0) return false;
  *type = TType(h & 0x0f);
  int delta = h >> 4;
  *id = delta ? int16_t(last_id_ + delta) : int16_t(zigzag());
  last_id_ = *id;
  return ok_;
}

int64_t ThriftReader::read_int(TType t) {
  if (t == TType::Byte) return int8_t(byte());
  if (t == TType::I16 || t == TType::I32 || t == TType::I64) return zigzag();
  fail(fmt::format("thrift: expected an integer, got type {}", int(t)));
  return 0;
}

std::string ThriftReader::binary() {
  uint64_t n = varint();
  if (!ok_ || n > b_.size() - pos_) {
    fail("thrift: string runs past the end");
    return {};
  }
  std::string s(reinterpret_cast<const char*>(b_.data() + pos_), n);
  pos_ += n;
  return s;
}

// Container lengths are bounded by the bytes present: every element takes at least one
// byte (bools inside lists and maps are a byte each, unlike bool fields), a map entry two.
void ThriftReader::check_count(const char* what, uint64_t n, uint64_t min_bytes) {
  if (!ok_) return;
  auto b = claimed_bytes("thrift", what, n, min_bytes, b_.size() - pos_);
  if (!b) fail(b.error());
}

void ThriftReader::list_header(TType* elem, int64_t* n) {
  uint8_t h = byte();
  *elem = TType(h & 0x0f);
  uint64_t count = h >> 4;
  if (count == 15) count = varint();
  check_count("a list header", count, 1);
  *n = ok_ ? int64_t(count) : 0;
}

void ThriftReader::skip_element(TType t) {
  if (t == TType::True || t == TType::False) byte();  // a bool element is a whole byte
  else skip(t);
}

void ThriftReader::begin_struct() {
  if (depth_ >= kMaxDepth) return fail("thrift: nesting too deep");
  last_id_stack_[depth_++] = last_id_, last_id_ = 0;
}

void ThriftReader::end_struct() {
  if (depth_ > 0) last_id_ = last_id_stack_[--depth_];
}

void ThriftReader::skip(TType t) {
  if (depth_ >= kMaxDepth) return fail("thrift: nesting too deep");
  ++depth_;
  switch (t) {
    case TType::True: case TType::False: break;  // value is in the field header
    case TType::Byte: byte(); break;
    case TType::I16: case TType::I32: case TType::I64: varint(); break;
    case TType::Double: for (int i = 0; i < 8; ++i) byte(); break;
    case TType::Binary: binary(); break;
    case TType::List: case TType::Set: {
      TType e; int64_t n;
      list_header(&e, &n);
      for (int64_t i = 0; i < n && ok_; ++i) skip_element(e);
      break;
    }
    case TType::Map: {
      const uint64_t n = varint();
      check_count("a map header", n, 2);
      if (n > 0 && ok_) {
        uint8_t kv = byte();
        for (uint64_t i = 0; i < n && ok_; ++i) skip_element(TType(kv >> 4)), skip_element(TType(kv & 0x0f));
      }
      break;
    }
    case TType::Struct: {
      begin_struct();
      int16_t id; TType ft;
      while (next_field(&id, &ft)) skip(ft);
      end_struct();
      break;
    }
    default: fail(fmt::format("thrift: unknown type {}", int(t)));
  }
  --depth_;
}

namespace {

template <class F>
void read_struct(ThriftReader& r, F&& on_field) {
  r.begin_struct();
  int16_t id; TType t;
  while (r.next_field(&id, &t)) on_field(id, t);
  r.end_struct();
}

template <class F>
void read_list(ThriftReader& r, TType t, F&& on_elem) {
  if (t != TType::List) return r.skip(t);
  TType e; int64_t n;
  r.list_header(&e, &n);
  for (int64_t i = 0; i < n && r.ok(); ++i) on_elem(e);
}

ParquetColumnChunk read_column_chunk(ThriftReader& r) {
  ParquetColumnChunk c;
  read_struct(r, [&](int16_t id, TType t) {
    if (id != 3 || t != TType::Struct) return r.skip(t);
    read_struct(r, [&](int16_t mid, TType mt) {
      switch (mid) {
        case 1: c.physical_type = int(r.read_int(mt)); break;
        case 3: read_list(r, mt, [&](TType e) { c.path.push_back(r.binary()); }); break;
        case 4: c.codec = int(r.read_int(mt)); break;
        case 5: c.num_values = r.read_int(mt); break;
        case 7: c.total_compressed_size = r.read_int(mt); break;
        case 9: c.data_page_offset = r.read_int(mt); break;
        case 11: c.dictionary_page_offset = r.read_int(mt); break;
        default: r.skip(mt);
      }
    });
  });
  return c;
}

}  // namespace

Result<ParquetMeta> parse_parquet_footer(std::span<const uint8_t> footer) {
  ThriftReader r(footer);
  ParquetMeta m;
  struct Elem { std::string name; int type = -1, rep = 0, children = 0; };
  std::vector<Elem> schema;
  read_struct(r, [&](int16_t id, TType t) {
    switch (id) {
      case 2:
        read_list(r, t, [&](TType e) {
          Elem el;
          read_struct(r, [&](int16_t sid, TType st) {
            switch (sid) {
              case 1: el.type = int(r.read_int(st)); break;
              case 3: el.rep = int(r.read_int(st)); break;
              case 4: el.name = r.binary(); break;
              case 5: el.children = int(r.read_int(st)); break;
              default: r.skip(st);
            }
          });
          schema.push_back(std::move(el));
        });
        break;
      case 3: m.num_rows = r.read_int(t); break;
      case 4:
        read_list(r, t, [&](TType e) {
          ParquetRowGroup g;
          read_struct(r, [&](int16_t gid, TType gt) {
            if (gid == 1) read_list(r, gt, [&](TType) { g.columns.push_back(read_column_chunk(r)); });
            else if (gid == 3) g.num_rows = r.read_int(gt);
            else r.skip(gt);
          });
          m.row_groups.push_back(std::move(g));
        });
        break;
      default: r.skip(t);
    }
  });
  if (!r.ok()) return Err{"parquet footer: " + r.error()};
  if (schema.empty()) return Err{"parquet footer: no schema"};
  // schema[0] is the root; a flat file has only leaves below it.
  for (size_t i = 1; i < schema.size(); ++i) {
    if (schema[i].children > 0)
      return Err{fmt::format("parquet: column '{}' is nested (a group); only flat schemas are supported",
                             schema[i].name)};
    m.columns.push_back({schema[i].name, schema[i].type, schema[i].rep});
  }
  for (const auto& g : m.row_groups)
    if (g.columns.size() != m.columns.size())
      return Err{fmt::format("parquet: a row group has {} column chunks for {} columns", g.columns.size(),
                             m.columns.size())};
  return m;
}

Result<PageHeader> parse_page_header(std::span<const uint8_t> b) {
  ThriftReader r(b);
  PageHeader h;
  read_struct(r, [&](int16_t id, TType t) {
    switch (id) {
      case 1: h.type = int(r.read_int(t)); break;
      case 2: h.uncompressed_size = int32_t(r.read_int(t)); break;
      case 3: h.compressed_size = int32_t(r.read_int(t)); break;
      case 5:
        read_struct(r, [&](int16_t did, TType dt) {
          if (did == 1) h.num_values = int32_t(r.read_int(dt));
          else if (did == 2) h.encoding = int32_t(r.read_int(dt));
          else if (did == 3) h.def_encoding = int32_t(r.read_int(dt));
          else r.skip(dt);
        });
        break;
      case 7:
        read_struct(r, [&](int16_t did, TType dt) {
          if (did == 1) h.num_values = int32_t(r.read_int(dt));
          else if (did == 2) h.encoding = int32_t(r.read_int(dt));
          else r.skip(dt);
        });
        break;
      case 8:
        read_struct(r, [&](int16_t did, TType dt) {
          switch (did) {
            case 1: h.num_values = int32_t(r.read_int(dt)); break;
            case 2: h.v2_num_nulls = int32_t(r.read_int(dt)); break;
            case 4: h.encoding = int32_t(r.read_int(dt)); break;
            case 5: h.v2_def_len = int32_t(r.read_int(dt)); break;
            case 6: h.v2_rep_len = int32_t(r.read_int(dt)); break;
            case 7: h.v2_compressed = r.bool_value(dt); break;
            default: r.skip(dt);
          }
        });
        break;
      default: r.skip(t);
    }
  });
  if (!r.ok()) return Err{"page header: " + r.error()};
  if (h.compressed_size < 0 || h.uncompressed_size < 0) return Err{"page header: negative page size"};
  h.header_size = r.pos();
  return h;
}

}  // namespace oc::io
