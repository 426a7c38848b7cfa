#include "io/zip.h"

#include <zlib.h>

#include <algorithm>

#include <fmt/format.h>

#include "core/check.h"
#include "io/le.h"

namespace oc::io {

namespace {
constexpr uint32_t kLocalSig = 0x04034b50, kCentralSig = 0x02014b50, kEocdSig = 0x06054b50;
constexpr uint32_t kZip64EocdSig = 0x06064b50, kZip64LocatorSig = 0x07064b50;
constexpr uint32_t kMax32 = 0xFFFFFFFFu;
constexpr uint16_t kMax16 = 0xFFFF;
constexpr size_t kEocdSize = 22, kZip64EocdSize = 56, kLocatorSize = 20, kCentralSize = 46, kLocalSize = 30;
// DOS date/time of every entry: 1980-01-01 00:00, so equal inputs give equal archives.
constexpr uint16_t kDosTime = 0, kDosDate = (1 << 5) | 1;
}  // namespace

uint32_t crc32(std::span<const uint8_t> bytes, uint32_t crc) {
  return uint32_t(::crc32_z(crc, bytes.data(), bytes.size()));
}

// ---------------------------------------------------------------------------------------
// Reader

namespace {
Err bad_zip(const std::string& path, uint64_t at, const std::string& what) {
  return Err{fmt::format("{}: not a valid zip archive: {} (byte {})", path, what, at)};
}

// Where the central directory lies, as the end records say.
struct CentralDir {
  uint64_t eocd_pos = 0;  // the classic end record
  uint64_t n_entries = 0, size = 0, offset = 0;
  uint64_t limit = 0;  // the central directory must end before this
};

// End of central directory: the last record whose comment runs exactly to the end of file.
Result<CentralDir> read_end_record(const ReadFile& file, const std::string& path) {
  const uint64_t size = file.size();
  const uint64_t tail_len = std::min<uint64_t>(size, kEocdSize + kMax16);
  auto tail = file.read(size - tail_len, tail_len);
  if (!tail) return Err{tail.error()};
  int64_t eocd_in_tail = -1;
  for (int64_t i = int64_t(tail_len - kEocdSize); i >= 0; --i) {
    const uint8_t* p = tail->data() + i;
    if (load_le<uint32_t>(p) == kEocdSig && i + kEocdSize + load_le<uint16_t>(p + 20) == tail_len) {
      eocd_in_tail = i;
      break;
    }
  }
  if (eocd_in_tail < 0) return bad_zip(path, size, "no end-of-central-directory record (truncated or not a zip file)");
  CentralDir cd;
  cd.eocd_pos = size - tail_len + uint64_t(eocd_in_tail);
  const uint8_t* e = tail->data() + eocd_in_tail;
  cd.n_entries = load_le<uint16_t>(e + 10);
  cd.size = load_le<uint32_t>(e + 12);
  cd.offset = load_le<uint32_t>(e + 16);
  if (load_le<uint16_t>(e + 4) != 0 || load_le<uint16_t>(e + 6) != 0 ||
      load_le<uint16_t>(e + 8) != load_le<uint16_t>(e + 10))
    return bad_zip(path, cd.eocd_pos, "multi-disk archives are not supported");
  cd.limit = cd.eocd_pos;
  return cd;
}

// zip64: the locator sits right before the classic record; its end record's values replace
// the classic ones. Returns whether there is a locator.
Result<bool> read_zip64_end(const ReadFile& file, const std::string& path, CentralDir& cd) {
  if (cd.eocd_pos < kLocatorSize) return false;
  const uint64_t loc_pos = cd.eocd_pos - kLocatorSize;
  uint8_t loc[kLocatorSize];
  if (Status s = file.read(loc_pos, loc); !s) return Err{s.error()};
  if (load_le<uint32_t>(loc) != kZip64LocatorSig) return false;
  const uint64_t z64_pos = load_le<uint64_t>(loc + 8);
  if (z64_pos > loc_pos || loc_pos - z64_pos < kZip64EocdSize)
    return bad_zip(path, loc_pos, fmt::format("zip64 end record offset {} is out of bounds", z64_pos));
  uint8_t r[kZip64EocdSize];
  if (Status s = file.read(z64_pos, r); !s) return Err{s.error()};
  if (load_le<uint32_t>(r) != kZip64EocdSig) return bad_zip(path, z64_pos, "bad zip64 end record signature");
  if (load_le<uint32_t>(r + 16) != 0 || load_le<uint32_t>(r + 20) != 0 ||
      load_le<uint64_t>(r + 24) != load_le<uint64_t>(r + 32))
    return bad_zip(path, z64_pos, "multi-disk archives are not supported");
  cd.n_entries = load_le<uint64_t>(r + 32);
  cd.size = load_le<uint64_t>(r + 40);
  cd.offset = load_le<uint64_t>(r + 48);
  cd.limit = z64_pos;
  return true;
}

Status check_central_dir(const std::string& path, const CentralDir& cd, bool has_zip64) {
  if (!has_zip64 && (cd.n_entries == kMax16 || cd.size == kMax32 || cd.offset == kMax32))
    return bad_zip(path, cd.eocd_pos, "end record needs zip64 values but there is no zip64 locator");
  if (cd.offset > cd.limit || cd.size > cd.limit - cd.offset)
    return bad_zip(path, cd.eocd_pos,
                   fmt::format("central directory [{}, +{}) is out of bounds (must end by byte {})", cd.offset, cd.size,
                               cd.limit));
  if (cd.n_entries > cd.size / kCentralSize)
    return bad_zip(path, cd.eocd_pos,
                   fmt::format("{} entries cannot fit a {}-byte central directory", cd.n_entries, cd.size));
  return Status::success();
}

// zip64 extra (id 1) of the central entry `name` at byte `at`: the 64-bit values of the fields
// saturated in the classic header, in this order.
Status read_zip64_extra(const std::string& path, uint64_t at, const std::string& name, std::span<const uint8_t> extra,
                        uint64_t& uncomp, uint64_t& comp, uint64_t& local) {
  const uint8_t* x = extra.data();
  const size_t extra_len = extra.size();
  for (size_t q = 0; q + 4 <= extra_len;) {
    const uint16_t id = load_le<uint16_t>(x + q), len = load_le<uint16_t>(x + q + 2);
    if (q + 4 + len > extra_len)
      return bad_zip(path, at, fmt::format("entry '{}': extra field runs past its end", name));
    if (id == 1) {
      size_t r = q + 4, end = q + 4 + len;
      for (uint64_t* v : {&uncomp, &comp, &local}) {
        if (*v != kMax32) continue;
        if (r + 8 > end) return bad_zip(path, at, fmt::format("entry '{}': zip64 extra field is too short", name));
        *v = load_le<uint64_t>(x + r);
        r += 8;
      }
    }
    q += 4 + len;
  }
  return Status::success();
}

// Central directory entry `i` at cd[p] (file byte `cd_offset + p`): its name, CRC, size and
// local header offset; only stored, unencrypted entries of disk 0. Advances p past it.
Result<ZipEntry> read_central_entry(const std::string& path, std::span<const uint8_t> cd, uint64_t cd_offset,
                                    uint64_t i, size_t& p, bool list_compressed) {
  const uint64_t at = cd_offset + p;
  if (cd.size() - p < kCentralSize) return bad_zip(path, at, fmt::format("central directory entry {} is truncated", i));
  const uint8_t* h = cd.data() + p;
  if (load_le<uint32_t>(h) != kCentralSig)
    return bad_zip(path, at, fmt::format("central directory entry {} has a bad signature", i));
  const uint16_t flags = load_le<uint16_t>(h + 8), method = load_le<uint16_t>(h + 10);
  const size_t name_len = load_le<uint16_t>(h + 28), extra_len = load_le<uint16_t>(h + 30),
               comment_len = load_le<uint16_t>(h + 32);
  if (cd.size() - p - kCentralSize < name_len + extra_len + comment_len)
    return bad_zip(path, at, fmt::format("central directory entry {} runs past the directory", i));
  ZipEntry ent;
  ent.name.assign(reinterpret_cast<const char*>(h + kCentralSize), name_len);
  ent.crc32 = load_le<uint32_t>(h + 16);
  uint64_t comp = load_le<uint32_t>(h + 20), uncomp = load_le<uint32_t>(h + 24);
  uint64_t local = load_le<uint32_t>(h + 42);
  const uint16_t disk = load_le<uint16_t>(h + 34);
  if (Status s = read_zip64_extra(path, at, ent.name, {h + kCentralSize + name_len, extra_len}, uncomp, comp, local);
      !s)
    return Err{s.error()};
  p += kCentralSize + name_len + extra_len + comment_len;

  if (disk != 0 && disk != kMax16) return bad_zip(path, at, fmt::format("entry '{}' is on another disk", ent.name));
  if (flags & 1) return bad_zip(path, at, fmt::format("entry '{}' is encrypted", ent.name));
  if (method != 0 && !list_compressed)
    return bad_zip(
        path, at,
        fmt::format("entry '{}' is compressed (method {}); only stored entries are supported", ent.name, method));
  ent.method = method;
  if (method != 0) uncomp = comp;  // the payload's bytes, for the bounds checks; never read
  if (comp != uncomp)
    return bad_zip(path, at,
                   fmt::format("entry '{}' is stored but its compressed size {} differs from its size {}", ent.name,
                               comp, uncomp));
  ent.size = uncomp;
  ent.header_offset = local;
  if (local > cd_offset || cd_offset - local < kLocalSize)
    return bad_zip(path, at, fmt::format("entry '{}': local header offset {} is out of bounds", ent.name, local));
  return ent;
}

// The entry's local header: its signature and name length, and where the payload starts
// (which must end before the central directory).
Status locate_payload(const ReadFile& file, const std::string& path, uint64_t cd_offset, ZipEntry& ent) {
  const uint64_t local = ent.header_offset;
  std::vector<uint8_t> lh(kLocalSize);
  if (Status s = file.read(local, lh); !s) return Err{s.error()};
  if (load_le<uint32_t>(lh.data()) != kLocalSig)
    return bad_zip(path, local, fmt::format("entry '{}': bad local header signature", ent.name));
  const uint64_t lname = load_le<uint16_t>(lh.data() + 26), lextra = load_le<uint16_t>(lh.data() + 28);
  ent.data_offset = local + kLocalSize + lname + lextra;
  if (ent.data_offset > cd_offset || ent.size > cd_offset - ent.data_offset)
    return bad_zip(path, local,
                   fmt::format("entry '{}': payload [{}, +{}) overlaps the central directory at byte {}", ent.name,
                               ent.data_offset, ent.size, cd_offset));
  if (lname != ent.name.size())
    return bad_zip(path, local, fmt::format("entry '{}': local header name length differs", ent.name));
  return Status::success();
}
}  // namespace

Result<ZipReader> ZipReader::open(const std::string& path, bool list_compressed) {
  auto f = ReadFile::open(path);
  if (!f) return Err{f.error()};
  ZipReader z(std::move(*f));
  const uint64_t size = z.file_.size();
  if (size < kEocdSize) return bad_zip(path, 0, fmt::format("file is only {} bytes", size));
  auto cd = read_end_record(z.file_, path);
  if (!cd) return Err{cd.error()};
  auto has_zip64 = read_zip64_end(z.file_, path, *cd);
  if (!has_zip64) return Err{has_zip64.error()};
  if (Status s = check_central_dir(path, *cd, *has_zip64); !s) return Err{s.error()};

  auto dir = z.file_.read(cd->offset, cd->size);
  if (!dir) return Err{dir.error()};
  z.entries_.reserve(size_t(cd->n_entries));
  size_t p = 0;
  for (uint64_t i = 0; i < cd->n_entries; ++i) {
    const uint64_t at = cd->offset + p;
    auto ent = read_central_entry(path, *dir, cd->offset, i, p, list_compressed);
    if (!ent) return Err{ent.error()};
    if (Status s = locate_payload(z.file_, path, cd->offset, *ent); !s) return Err{s.error()};
    if (z.index_.count(ent->name)) return bad_zip(path, at, fmt::format("duplicate entry '{}'", ent->name));
    z.index_.emplace(ent->name, z.entries_.size());
    z.entries_.push_back(std::move(*ent));
  }
  return z;
}

Status ZipReader::compressed_error(const ZipEntry& e) const {
  return Err{
      fmt::format("{}: not a valid zip archive: entry '{}' is compressed (method {}); only stored entries are "
                  "supported (byte {})",
                  path(), e.name, e.method, e.header_offset)};
}

const ZipEntry* ZipReader::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &entries_[it->second];
}

Status ZipReader::read(const ZipEntry& e, uint64_t offset, std::span<uint8_t> out) const {
  if (e.method != 0) return compressed_error(e);
  if (offset > e.size || out.size() > e.size - offset)
    return Err{fmt::format("{}: entry '{}': read of {} bytes at {} leaves its {} bytes", path(), e.name, out.size(),
                           offset, e.size)};
  return file_.read(e.data_offset + offset, out);
}

Status ZipReader::read_all(const ZipEntry& e, std::span<uint8_t> out) const {
  if (e.method != 0) return compressed_error(e);
  if (out.size() != e.size)
    return Err{fmt::format("{}: entry '{}' has {} bytes, expected {}", path(), e.name, e.size, out.size())};
  // Read and checksum 1 MiB at a time, so the CRC runs over bytes still in cache.
  constexpr size_t kChunk = size_t(1) << 20;
  uint32_t c = 0;
  for (size_t pos = 0; pos < out.size(); pos += kChunk) {
    auto part = out.subspan(pos, std::min(kChunk, out.size() - pos));
    if (Status s = file_.read(e.data_offset + pos, part); !s) return s;
    if (e.crc32 != 0) c = crc32(part, c);
  }
  if (e.crc32 != 0) {
    if (c != e.crc32)
      return Err{fmt::format("{}: entry '{}' (byte {}) fails its CRC-32 check: {:08x} != recorded {:08x}", path(),
                             e.name, e.data_offset, c, e.crc32)};
  }
  return {};
}

Result<std::vector<uint8_t>> ZipReader::read_all(const ZipEntry& e) const {
  std::vector<uint8_t> out(e.size);
  if (Status s = read_all(e, out); !s) return Err{s.error()};
  return out;
}

// ---------------------------------------------------------------------------------------
// Writer

ZipWriter::ZipWriter(fs::Sink sink, Options opt) : sink_(std::move(sink)), opt_(opt) {
  OC_CHECK(opt_.alignment >= 1 && opt_.alignment <= 4096, "alignment {}", opt_.alignment);
}

void ZipWriter::put(std::span<const uint8_t> bytes) {
  sink_(bytes);
  pos_ += bytes.size();
}

void ZipWriter::add(std::string_view name, std::string_view text) {
  add(name, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

void ZipWriter::add(std::string_view name, std::span<const uint8_t> data) {
  OC_CHECK(!finished_, "zip entry '{}' added after finish()", name);
  OC_CHECK(!name.empty() && name.size() < kMax16, "zip entry name '{}'", name);
  const uint64_t offset = pos_, size = data.size();
  const uint32_t crc = crc32(data);
  const bool z64 = opt_.force_zip64 || size >= kMax32 || offset >= kMax32;
  std::vector<uint8_t> h;
  h.reserve(kLocalSize + name.size() + 20 + 4 + opt_.alignment);
  append_le<uint32_t>(h, kLocalSig);
  append_le<uint16_t>(h, z64 ? 45 : 20);  // version needed
  append_le<uint16_t>(h, 0x0800);          // UTF-8 names; sizes are in this header, no descriptor
  append_le<uint16_t>(h, 0);               // stored
  append_le<uint16_t>(h, kDosTime);
  append_le<uint16_t>(h, kDosDate);
  append_le<uint32_t>(h, crc);
  append_le<uint32_t>(h, z64 ? kMax32 : uint32_t(size));
  append_le<uint32_t>(h, z64 ? kMax32 : uint32_t(size));
  append_le<uint16_t>(h, uint16_t(name.size()));
  const size_t extra_at = h.size();
  append_le<uint16_t>(h, 0);  // extra length, set below
  append_bytes(h, name.data(), name.size());
  if (z64) {  // local zip64 extra carries both sizes
    append_le<uint16_t>(h, 1);
    append_le<uint16_t>(h, 16);
    append_le<uint64_t>(h, size);
    append_le<uint64_t>(h, size);
  }
  if (opt_.alignment > 1) {  // 'FB' padding so the payload starts on the boundary
    const uint64_t start = offset + h.size() + 4;
    const uint16_t pad = uint16_t((opt_.alignment - start % opt_.alignment) % opt_.alignment);
    h.push_back('F');
    h.push_back('B');
    append_le<uint16_t>(h, pad);
    h.insert(h.end(), pad, 'Z');
  }
  const uint16_t extra_len = uint16_t(h.size() - kLocalSize - name.size());
  std::memcpy(h.data() + extra_at, &extra_len, 2);
  put(h);
  put(data);
  written_.push_back({std::string(name), size, offset, crc});
}

void ZipWriter::finish() {
  OC_CHECK(!finished_, "zip finish() called twice");
  finished_ = true;
  const uint64_t cd_offset = pos_;
  std::vector<uint8_t> cd;
  for (const Written& w : written_) {
    const bool big_size = opt_.force_zip64 || w.size >= kMax32, big_off = opt_.force_zip64 || w.offset >= kMax32;
    std::vector<uint8_t> z64;
    if (big_size) append_le<uint64_t>(z64, w.size), append_le<uint64_t>(z64, w.size);
    if (big_off) append_le<uint64_t>(z64, w.offset);
    const uint16_t extra_len = z64.empty() ? 0 : uint16_t(4 + z64.size());
    append_le<uint32_t>(cd, kCentralSig);
    append_le<uint16_t>(cd, 45);  // made by: MS-DOS, spec 4.5
    append_le<uint16_t>(cd, z64.empty() ? 20 : 45);
    append_le<uint16_t>(cd, 0x0800);
    append_le<uint16_t>(cd, 0);
    append_le<uint16_t>(cd, kDosTime);
    append_le<uint16_t>(cd, kDosDate);
    append_le<uint32_t>(cd, w.crc);
    append_le<uint32_t>(cd, big_size ? kMax32 : uint32_t(w.size));
    append_le<uint32_t>(cd, big_size ? kMax32 : uint32_t(w.size));
    append_le<uint16_t>(cd, uint16_t(w.name.size()));
    append_le<uint16_t>(cd, extra_len);
    append_le<uint16_t>(cd, 0);  // comment
    append_le<uint16_t>(cd, 0);  // disk
    append_le<uint16_t>(cd, 0);  // internal attributes
    append_le<uint32_t>(cd, 0);  // external attributes
    append_le<uint32_t>(cd, big_off ? kMax32 : uint32_t(w.offset));
    append_bytes(cd, w.name.data(), w.name.size());
    if (!z64.empty()) {
      append_le<uint16_t>(cd, 1);
      append_le<uint16_t>(cd, uint16_t(z64.size()));
      append_bytes(cd, z64.data(), z64.size());
    }
  }
  put(cd);
  const uint64_t n = written_.size(), cd_size = cd.size();
  const bool z64 = opt_.force_zip64 || n >= kMax16 || cd_size >= kMax32 || cd_offset >= kMax32;
  std::vector<uint8_t> end;
  if (z64) {
    const uint64_t z64_pos = pos_;
    append_le<uint32_t>(end, kZip64EocdSig);
    append_le<uint64_t>(end, kZip64EocdSize - 12);  // size of the rest of this record
    append_le<uint16_t>(end, 45);
    append_le<uint16_t>(end, 45);
    append_le<uint32_t>(end, 0);
    append_le<uint32_t>(end, 0);
    append_le<uint64_t>(end, n);
    append_le<uint64_t>(end, n);
    append_le<uint64_t>(end, cd_size);
    append_le<uint64_t>(end, cd_offset);
    append_le<uint32_t>(end, kZip64LocatorSig);
    append_le<uint32_t>(end, 0);
    append_le<uint64_t>(end, z64_pos);
    append_le<uint32_t>(end, 1);
  }
  append_le<uint32_t>(end, kEocdSig);
  append_le<uint16_t>(end, 0);
  append_le<uint16_t>(end, 0);
  append_le<uint16_t>(end, z64 ? kMax16 : uint16_t(n));
  append_le<uint16_t>(end, z64 ? kMax16 : uint16_t(n));
  append_le<uint32_t>(end, z64 ? kMax32 : uint32_t(cd_size));
  append_le<uint32_t>(end, z64 ? kMax32 : uint32_t(cd_offset));
  append_le<uint16_t>(end, 0);  // comment
  put(end);
}

}  // namespace oc::io
