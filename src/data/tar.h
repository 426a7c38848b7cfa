// Streaming tar reader (ustar, GNU and pax, as written by CPython's tarfile, GNU tar and
// webdataset's TarWriter) and a small ustar/pax writer for the shard tools. The reader
// yields regular members only; damage (truncation, bad checksum, garbage) ends the shard
// with an error naming the path and byte offset, after the members before it.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/fs.h"
#include "core/result.h"
#include "data/stream.h"

namespace oc::data {

struct TarMember {
  std::string name;      // full name (pax path / GNU long name / ustar prefix applied)
  uint64_t size = 0;     // payload bytes (pax size overrides the header)
  uint64_t offset = 0;   // byte offset of the member's (first) header in the archive
  uint64_t data_offset = 0;  // byte offset of its payload
};

class TarReader {
 public:
  TarReader(std::unique_ptr<ByteStream> s, std::string path);

  // Moves to the next regular member (skipping the payload of the current one if unread).
  // Returns false at the end of the archive (two zero blocks, or EOF at a member boundary,
  // which CPython also accepts), or an error: "empty file", "truncated header",
  // "bad checksum", "unexpected end of data", each with the path and byte offset.
  Result<bool> next(TarMember* m);
  // The current member's payload (once per member).
  Result<std::vector<uint8_t>> read_data();
  Status skip_data();
  uint64_t offset() const { return r_.offset(); }
  const std::string& path() const { return path_; }

 private:
  Status finish_member();
  Result<std::string> read_payload_string(uint64_t size, uint64_t header_offset, const char* what);
  // next()'s steps. Extended: the pax and GNU long-name headers read so far for the coming
  // member (tar.cpp).
  struct Extended;
  Result<bool> read_header(uint8_t* block, uint64_t header_offset, const Extended& ext);
  Status read_extended(char type, uint64_t size, uint64_t header_offset, Extended& ext);
  Result<std::string> member_name(const uint8_t* block, const Extended& ext, uint64_t header_offset,
                                  uint64_t* size) const;
  BufferedReader r_;
  std::string path_;
  std::map<std::string, std::string> global_pax_;
  uint64_t pending_ = 0, pending_pad_ = 0, member_offset_ = 0;
  std::string member_name_;
  bool in_member_ = false, done_ = false;
};

// Parses a header's numeric field: octal ASCII (NUL/space terminated) or GNU base-256.
bool parse_tar_number(std::span<const uint8_t> field, uint64_t* out);
// Splits pax records "<len> <key>=<value>\n" into `out`; false when malformed.
bool parse_pax(std::string_view payload, std::map<std::string, std::string>* out);

// Writes a POSIX (ustar + pax for long names) tar to a sink, as webdataset's TarWriter does:
// mode 0444, uname/gname "bigdata". finish() writes the end blocks and pads to 10240 bytes.
class TarWriter {
 public:
  explicit TarWriter(const fs::Sink& sink, int64_t mtime = 0) : sink_(sink), mtime_(mtime) {}
  void add(const std::string& name, std::span<const uint8_t> data);
  void add(const std::string& name, const std::string& text);
  void finish();
  uint64_t bytes_written() const { return written_; }

 private:
  void write_header(const std::string& name, uint64_t size, char type);
  void put(std::span<const uint8_t> b);
  void pad();
  const fs::Sink& sink_;
  int64_t mtime_;
  uint64_t written_ = 0;
};

}  // namespace oc::data
