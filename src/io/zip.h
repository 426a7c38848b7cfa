// ZIP archives as torch.save writes them: a reader for stored (uncompressed) entries with
// every size and offset bounds-checked (classic and zip64 records), and a writer that
// stores entries with correct CRC-32s, 64-byte aligned payloads (the `FB` padding extra
// field PyTorch uses) and zip64 records when a size or offset needs them.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/fs.h"
#include "core/result.h"
#include "io/file.h"

namespace oc::io {

uint32_t crc32(std::span<const uint8_t> bytes, uint32_t crc = 0);  // zlib polynomial

struct ZipEntry {
  std::string name;
  uint64_t size = 0;          // payload bytes (stored: compressed == uncompressed)
  uint16_t method = 0;        // 0: stored; else compressed (listed, never read)
  uint32_t crc32 = 0;         // as recorded in the central directory
  uint64_t header_offset = 0; // local file header
  uint64_t data_offset = 0;   // first payload byte
};

class ZipReader {
 public:
  // Parses the end records and the central directory and checks every entry's local
  // header. Errors name the entry and the byte offset. A compressed entry is an error, or
  // with `list_compressed` an entry that is listed (size = its compressed bytes) but cannot
  // be read (torch.jit.save deflates the code/ it writes, which is never read).
  static Result<ZipReader> open(const std::string& path, bool list_compressed = false);

  const std::string& path() const { return file_.path(); }
  uint64_t file_size() const { return file_.size(); }
  const std::vector<ZipEntry>& entries() const { return entries_; }
  const ZipEntry* find(std::string_view name) const;

  // Part of an entry's payload: [offset, offset + out.size()) must lie inside it.
  Status read(const ZipEntry& e, uint64_t offset, std::span<uint8_t> out) const;
  // The whole payload (out.size() must equal e.size); the CRC-32 is checked unless the
  // recorded CRC is 0 (torch with compute_crc32 off writes 0).
  Status read_all(const ZipEntry& e, std::span<uint8_t> out) const;
  Result<std::vector<uint8_t>> read_all(const ZipEntry& e) const;

 private:
  explicit ZipReader(ReadFile f) : file_(std::move(f)) {}
  Status compressed_error(const ZipEntry& e) const;
  ReadFile file_;
  std::vector<ZipEntry> entries_;
  std::unordered_map<std::string, size_t> index_;
};

class ZipWriter {
 public:
  struct Options {
    uint32_t alignment = 64;   // payload start offsets are multiples of this (1 = none)
    bool force_zip64 = false;  // zip64 extras and end records even when small (for tests)
  };
  // `sink` receives the archive bytes in order (e.g. fs::write_atomic's sink).
  explicit ZipWriter(fs::Sink sink) : ZipWriter(std::move(sink), Options{}) {}
  ZipWriter(fs::Sink sink, Options opt);

  void add(std::string_view name, std::span<const uint8_t> data);
  void add(std::string_view name, std::string_view text);
  // Writes the central directory and end records; no add() afterwards.
  void finish();
  uint64_t bytes_written() const { return pos_; }

 private:
  struct Written {
    std::string name;
    uint64_t size, offset;
    uint32_t crc;
  };
  void put(std::span<const uint8_t> bytes);
  fs::Sink sink_;
  Options opt_;
  uint64_t pos_ = 0;
  std::vector<Written> written_;
  bool finished_ = false;
};

}  // namespace oc::io
