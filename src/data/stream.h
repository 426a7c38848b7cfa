// Sequential byte sources for shards: local files, `pipe:` commands (as webdataset) and
// http(s) URLs streamed with libcurl. Shards are read front to back through a buffer, never
// loaded whole, so a 1 GiB tar costs a few MiB of memory. Errors are returned, never thrown.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/result.h"

namespace oc::data {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Reads up to n bytes into dst; 0 means end of stream.
  virtual Result<size_t> read(uint8_t* dst, size_t n) = 0;
  // Skips n bytes without copying them out where the source can seek (files). Returns the
  // number of bytes skipped (< n only at end of stream). The default reads and discards.
  virtual Result<uint64_t> skip(uint64_t n);
};

bool is_http_url(const std::string& url);
bool is_pipe_url(const std::string& url);

// Opens a local path, "file://path", "pipe:command" or an http(s) URL (when built with curl).
// A missing file, a directory or an unreachable URL is an error naming it.
Result<std::unique_ptr<ByteStream>> open_stream(const std::string& url);

// Reads a whole small resource (sizes.json, __len__) up to max_bytes.
Result<std::string> read_small(const std::string& url, size_t max_bytes = 64 << 20);

// A buffered reader over a ByteStream that counts the byte offset (for error messages).
class BufferedReader {
 public:
  explicit BufferedReader(std::unique_ptr<ByteStream> s, size_t buffer_bytes = 1 << 20);
  // Reads exactly n bytes unless the stream ends first; returns how many were read.
  Result<size_t> read(uint8_t* dst, size_t n);
  // Skips exactly n bytes unless the stream ends first; returns how many were skipped.
  Result<uint64_t> skip(uint64_t n);
  uint64_t offset() const { return offset_; }

 private:
  Status fill();
  std::unique_ptr<ByteStream> s_;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0, end_ = 0;
  uint64_t offset_ = 0;
  bool eof_ = false;
};

}  // namespace oc::data
