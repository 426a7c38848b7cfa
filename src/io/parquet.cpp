// Parquet column reading: footer, pages (v1/v2, dictionary), codecs, definition levels.
#include "io/parquet.h"

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <snappy-c.h>
#include <zlib.h>
#include <zstd.h>

#include "io/parquet_thrift.h"

namespace oc::io {

namespace {

uint32_t le32(const uint8_t* p) { uint32_t v; std::memcpy(&v, p, 4); return v; }

// A page bigger than this is damage, not data (a URL list's pages are a few MB).
constexpr size_t kMaxPage = size_t(1) << 28;

}  // namespace

Result<std::vector<uint8_t>> parquet_decompress(int codec, std::span<const uint8_t> in, size_t n) {
  if (n > kMaxPage) return Err{fmt::format("page claims {} bytes uncompressed", n)};
  std::vector<uint8_t> out(n);
  switch (codec) {
    case 0:
      if (in.size() != n) return Err{fmt::format("uncompressed page of {} bytes, header says {}", in.size(), n)};
      if (n) std::memcpy(out.data(), in.data(), n);
      return out;
    case 1: {
      size_t len = n;
      if (snappy_uncompress(reinterpret_cast<const char*>(in.data()), in.size(), reinterpret_cast<char*>(out.data()),
                            &len) != SNAPPY_OK || len != n)
        return Err{"snappy: bad compressed page"};
      return out;
    }
    case 2: {
      z_stream z{};
      if (inflateInit2(&z, 15 + 32) != Z_OK) return Err{"gzip: inflateInit failed"};  // +32: gzip or zlib header
      z.next_in = const_cast<Bytef*>(in.data());
      z.avail_in = uInt(in.size());
      z.next_out = out.data();
      z.avail_out = uInt(n);
      int rc = inflate(&z, Z_FINISH);
      size_t got = n - z.avail_out;
      inflateEnd(&z);
      if (rc != Z_STREAM_END || got != n) return Err{"gzip: bad compressed page"};
      return out;
    }
    case 6: {
      size_t got = ZSTD_decompress(out.data(), n, in.data(), in.size());
      if (ZSTD_isError(got) || got != n)
        return Err{fmt::format("zstd: bad compressed page ({})", ZSTD_isError(got) ? ZSTD_getErrorName(got) : "size")};
      return out;
    }
    default:
      return Err{fmt::format("compression codec {} is not supported (uncompressed, snappy, gzip and zstd are)",
                             codec)};
  }
}

bool decode_rle_hybrid(std::span<const uint8_t> in, int bit_width, size_t count, std::vector<uint32_t>* out) {
  out->clear();
  out->reserve(std::min<size_t>(count, in.size() * 8 + 64));
  if (bit_width < 0 || bit_width > 32) return false;
  size_t p = 0;
  const size_t vbytes = (bit_width + 7) / 8;
  while (out->size() < count) {
    uint64_t h = 0;
    int shift = 0;
    for (;;) {
      if (p >= in.size() || shift > 35) return false;
      uint8_t c = in[p++];
      h |= uint64_t(c & 0x7f) << shift;
      shift += 7;
      if (!(c & 0x80)) break;
    }
    if (h & 1) {  // bit-packed: (h>>1) groups of 8 values, LSB first
      size_t n = size_t(h >> 1) * 8;
      size_t bytes = size_t(h >> 1) * bit_width;
      if (bytes > in.size() - p) return false;
      uint64_t acc = 0;
      int bits = 0;
      size_t q = p;
      const uint32_t mask = bit_width == 32 ? 0xffffffffu : (1u << bit_width) - 1;
      // Stops at `count`: at bit width 0 a group takes no input bytes, so a 6-byte header
      // could claim ~2^44 values (found by fuzz_thrift).
      for (size_t i = 0; i < n && out->size() < count; ++i) {
        while (bits < bit_width) acc |= uint64_t(in[q++]) << bits, bits += 8;
        out->push_back(uint32_t(acc) & mask);
        acc >>= bit_width;
        bits -= bit_width;
      }
      p += bytes;
    } else {  // run: (h>>1) copies of one value
      size_t n = size_t(h >> 1);
      if (vbytes > in.size() - p) return false;
      uint32_t v = 0;
      for (size_t i = 0; i < vbytes; ++i) v |= uint32_t(in[p + i]) << (8 * i);
      p += vbytes;
      if (n == 0) return false;  // a zero-length run never ends the loop
      for (size_t i = 0; i < n && out->size() < count; ++i) out->push_back(v);
    }
  }
  return true;
}

Result<ParquetFile> ParquetFile::open(const std::string& path) {
  auto f = ReadFile::open(path);
  if (!f) return Err{f.error()};
  uint64_t size = f->size();
  if (size < 12) return Err{fmt::format("{}: not a parquet file ({} bytes)", path, size)};
  auto tail = f->read(size - 8, 8);
  if (!tail) return Err{tail.error()};
  if (std::memcmp(tail->data() + 4, "PAR1", 4) != 0) return Err{fmt::format("{}: no PAR1 magic at the end", path)};
  uint32_t flen = le32(tail->data());
  if (flen > size - 12) return Err{fmt::format("{}: footer length {} does not fit the file", path, flen)};
  auto footer = f->read(size - 8 - flen, flen);
  if (!footer) return Err{footer.error()};
  auto m = parse_parquet_footer(*footer);
  if (!m) return Err{fmt::format("{}: {} (footer at byte {})", path, m.error(), size - 8 - flen)};
  // Row counts must agree, and be plausible for the file's size (RLE can claim billions of
  // rows in a few bytes; a URL list never does), so damage cannot make us allocate without bound.
  int64_t rows = 0;
  for (const auto& g : m->row_groups) {
    if (g.num_rows < 0) return Err{fmt::format("{}: negative row count in a row group", path)};
    rows += g.num_rows;
    for (const auto& c : g.columns)
      if (c.num_values != g.num_rows)
        return Err{fmt::format("{}: column '{}' has {} values in a row group of {} rows", path,
                               c.path.empty() ? "?" : c.path.back(), c.num_values, g.num_rows)};
  }
  if (rows != m->num_rows) return Err{fmt::format("{}: row groups hold {} rows, the footer says {}", path, rows, m->num_rows)};
  if (uint64_t(rows) > std::max<uint64_t>(1 << 20, size * 64))
    return Err{fmt::format("{}: {} rows is implausible for a {}-byte file", path, rows, size)};
  return ParquetFile(std::move(*f), std::move(*m));
}

std::vector<std::string> ParquetFile::column_names() const {
  std::vector<std::string> n;
  for (const auto& c : meta_.columns) n.push_back(c.name);
  return n;
}

namespace {

using Strings = std::vector<std::optional<std::string>>;

// PLAIN BYTE_ARRAY: 4-byte little-endian length, then the bytes.
bool plain_strings(std::span<const uint8_t> b, size_t count, std::vector<std::string>* out) {
  size_t p = 0;
  for (size_t i = 0; i < count; ++i) {
    if (b.size() - p < 4) return false;
    uint32_t n = le32(b.data() + p);
    p += 4;
    if (n > b.size() - p) return false;
    out->emplace_back(reinterpret_cast<const char*>(b.data() + p), n);
    p += n;
  }
  return true;
}

// The index of the BYTE_ARRAY, non-repeated column `column` (errors list the columns there are).
Result<size_t> string_column(const ParquetMeta& meta, const std::string& path, const std::string& column) {
  int ci = -1;
  for (size_t i = 0; i < meta.columns.size(); ++i)
    if (meta.columns[i].name == column) ci = int(i);
  if (ci < 0) {
    std::string have;
    for (const auto& c : meta.columns) have += (have.empty() ? "" : ", ") + c.name;
    return Err{fmt::format("{}: no column '{}' (columns: {})", path, column, have)};
  }
  const auto& sc = meta.columns[ci];
  if (sc.physical_type != 6)
    return Err{
        fmt::format("{}: column '{}' has physical type {}, not BYTE_ARRAY (strings)", path, column, sc.physical_type)};
  if (sc.repetition == 2) return Err{fmt::format("{}: column '{}' is repeated (a list)", path, column)};
  return size_t(ci);
}

// A column chunk being read: where its bytes start in the file, for error messages.
struct ChunkPlace {
  const std::string& path;
  const std::string& column;
  size_t group;
  int64_t start;
  std::string where(size_t at) const {
    return fmt::format("{}: column '{}' row group {} page at byte {}", path, column, group, start + int64_t(at));
  }
};

// A data page's encoded definition levels and values; `page` owns the bytes they view when
// they had to be decompressed.
struct DataPage {
  std::vector<uint8_t> page;
  std::span<const uint8_t> levels, values;
};

// Data page v1: levels (4-byte length, RLE) and values compressed together. v2: levels
// uncompressed before the values, which may be compressed.
Status split_data_page(const PageHeader& h, std::span<const uint8_t> raw, int codec, bool optional,
                       const ChunkPlace& chunk, size_t page_at, DataPage& out) {
  auto where = [&] { return chunk.where(page_at); };
  if (h.type == 0) {
    auto d = parquet_decompress(codec, raw, size_t(h.uncompressed_size));
    if (!d) return Err{where() + ": " + d.error()};
    out.page = std::move(*d);
    size_t q = 0;
    if (optional) {
      if (h.def_encoding != 3) return Err{where() + ": definition levels not RLE-encoded"};
      if (out.page.size() < 4 || le32(out.page.data()) > out.page.size() - 4)
        return Err{where() + ": bad level length"};
      out.levels = std::span(out.page).subspan(4, le32(out.page.data()));
      q = 4 + out.levels.size();
    }
    out.values = std::span(out.page).subspan(q);
    return Status::success();
  }
  size_t lv = size_t(h.v2_def_len) + size_t(h.v2_rep_len);
  if (lv > raw.size()) return Err{where() + ": level bytes past the page"};
  if (h.v2_rep_len) return Err{where() + ": repetition levels in a flat column"};
  out.levels = raw.subspan(0, size_t(h.v2_def_len));
  if (h.v2_compressed && codec != 0) {
    auto d = parquet_decompress(codec, raw.subspan(lv), size_t(h.uncompressed_size) - lv);
    if (!d) return Err{where() + ": " + d.error()};
    out.page = std::move(*d);
    out.values = out.page;
  } else {
    out.values = raw.subspan(lv);
  }
  return Status::success();
}

// The `present` values of a data page: PLAIN, or dictionary indices (RLE, bit width first).
Status decode_page_values(const PageHeader& h, std::span<const uint8_t> values, size_t present,
                          const std::vector<std::string>& dict, const ChunkPlace& chunk, size_t page_at,
                          std::vector<std::string>& vals) {
  auto where = [&] { return chunk.where(page_at); };
  vals.reserve(present);
  if (h.encoding == 0) {
    if (!plain_strings(values, present, &vals)) return Err{where() + ": truncated PLAIN values"};
  } else if (h.encoding == 2 || h.encoding == 8) {
    if (present > 0) {
      if (values.empty()) return Err{where() + ": missing dictionary index bit width"};
      std::vector<uint32_t> idx;
      if (!decode_rle_hybrid(values.subspan(1), values[0], present, &idx))
        return Err{where() + ": truncated dictionary indices"};
      for (uint32_t i : idx) {
        if (i >= dict.size())
          return Err{fmt::format("{}: dictionary index {} >= dictionary size {}", where(), i, dict.size())};
        vals.push_back(dict[i]);
      }
    }
  } else {
    return Err{fmt::format("{}: value encoding {} is not supported (PLAIN and dictionary are)", where(), h.encoding)};
  }
  return Status::success();
}

// Appends a data page's n rows to `out`: its values, and nulls where an optional column's
// definition level is 0.
Status read_data_page(const PageHeader& h, std::span<const uint8_t> raw, int codec, bool optional,
                      const std::vector<std::string>& dict, const ChunkPlace& chunk, size_t page_at, Strings& out) {
  const size_t n = size_t(h.num_values);
  DataPage page;
  if (Status s = split_data_page(h, raw, codec, optional, chunk, page_at, page); !s) return s;
  std::vector<uint32_t> def;
  size_t present = n;
  if (optional) {
    if (!decode_rle_hybrid(page.levels, 1, n, &def)) return Err{chunk.where(page_at) + ": truncated definition levels"};
    present = 0;
    for (uint32_t v : def) present += v != 0;
  }
  std::vector<std::string> vals;
  if (Status s = decode_page_values(h, page.values, present, dict, chunk, page_at, vals); !s) return s;
  size_t k = 0;
  for (size_t i = 0; i < n; ++i) {
    if (optional && def[i] == 0)
      out.emplace_back(std::nullopt);
    else
      out.emplace_back(std::move(vals[k++]));
  }
  return Status::success();
}

// One row group's chunk of the column, page by page: the dictionary page (if any) first, then
// data pages until the chunk's values are read; other pages are skipped.
Status read_chunk_strings(const ParquetColumnChunk& cc, std::span<const uint8_t> chunk_bytes, bool optional,
                          const ChunkPlace& chunk, Strings& out) {
  std::vector<std::string> dict;
  int64_t seen = 0;
  size_t p = 0;
  while (seen < cc.num_values) {
    if (p >= chunk_bytes.size()) return Err{chunk.where(p) + ": chunk ends before all values were read"};
    auto h = parse_page_header(chunk_bytes.subspan(p));
    if (!h) return Err{chunk.where(p) + ": " + h.error()};
    size_t body = p + h->header_size;
    if (size_t(h->compressed_size) > chunk_bytes.size() - body)
      return Err{chunk.where(p) + ": page runs past the chunk"};
    std::span<const uint8_t> raw(chunk_bytes.data() + body, size_t(h->compressed_size));
    const size_t page_at = p;
    p = body + size_t(h->compressed_size);
    if (h->type == 2) {  // dictionary page: PLAIN values
      auto d = parquet_decompress(cc.codec, raw, size_t(h->uncompressed_size));
      if (!d) return Err{chunk.where(page_at) + ": " + d.error()};
      dict.clear();
      if (!plain_strings(*d, size_t(h->num_values), &dict)) return Err{chunk.where(page_at) + ": truncated dictionary"};
      continue;
    }
    if (h->type != 0 && h->type != 3) continue;  // index pages etc.
    if (h->num_values < 0 || h->num_values > cc.num_values - seen)
      return Err{fmt::format("{}: page of {} values, {} left in the chunk", chunk.where(page_at), h->num_values,
                             cc.num_values - seen)};
    if (Status s = read_data_page(*h, raw, cc.codec, optional, dict, chunk, page_at, out); !s) return s;
    seen += int64_t(h->num_values);
  }
  return Status::success();
}

}  // namespace

Result<Strings> ParquetFile::read_strings(const std::string& column) const {
  auto ci = string_column(meta_, f_.path(), column);
  if (!ci) return Err{ci.error()};
  const bool optional = meta_.columns[*ci].repetition == 1;
  Strings out;
  out.reserve(size_t(meta_.num_rows));
  for (size_t g = 0; g < meta_.row_groups.size(); ++g) {
    const ParquetColumnChunk& cc = meta_.row_groups[g].columns[*ci];
    int64_t start = cc.dictionary_page_offset >= 0 && cc.dictionary_page_offset < cc.data_page_offset
                        ? cc.dictionary_page_offset
                        : cc.data_page_offset;
    if (start < 0 || cc.total_compressed_size < 0 || uint64_t(start + cc.total_compressed_size) > f_.size())
      return Err{fmt::format("{}: column '{}' row group {}: chunk [{}, +{}) outside the file", f_.path(), column, g,
                             start, cc.total_compressed_size)};
    auto chunk = f_.read(uint64_t(start), uint64_t(cc.total_compressed_size));
    if (!chunk) return Err{chunk.error()};
    if (Status s = read_chunk_strings(cc, *chunk, optional, ChunkPlace{f_.path(), column, g, start}, out); !s)
      return Err{s.error()};
  }
  return out;
}

}  // namespace oc::io
