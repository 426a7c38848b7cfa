// A read-only file opened once and read with pread at explicit offsets, so that readers of
// large checkpoints (zip, safetensors) read each byte once, straight into its destination,
// and every error names the path and the byte offset.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/result.h"

namespace oc::io {

class ReadFile {
 public:
  // Regular files only: a folder, a device (/dev/zero) or a FIFO is an error naming the path,
  // at once (a FIFO without a writer does not block the open). Reads never go past the size
  // the file had when it was opened.
  static Result<ReadFile> open(const std::string& path);
  ReadFile(ReadFile&& o) noexcept;
  ReadFile& operator=(ReadFile&& o) noexcept;
  ReadFile(const ReadFile&) = delete;
  ReadFile& operator=(const ReadFile&) = delete;
  ~ReadFile();

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }
  int fd() const { return fd_; }
  // Reads exactly out.size() bytes at `offset`; an error (naming path and offset) if the
  // range leaves the file or the read fails.
  Status read(uint64_t offset, std::span<uint8_t> out) const;
  Result<std::vector<uint8_t>> read(uint64_t offset, uint64_t n) const;

 private:
  ReadFile() = default;
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0;
};

}  // namespace oc::io
