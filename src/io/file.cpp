#include "io/file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include <fmt/format.h>

namespace oc::io {

Result<ReadFile> ReadFile::open(const std::string& path) {
  ReadFile f;
  f.path_ = path;
  // O_NONBLOCK: opening a FIFO must not wait for a writer; only regular files are read (a
  // device such as /dev/zero has no size and never ends).
  f.fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (f.fd_ < 0) return Err{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  struct stat st;
  if (::fstat(f.fd_, &st) != 0) return Err{fmt::format("cannot stat {}: {}", path, std::strerror(errno))};
  if (S_ISDIR(st.st_mode)) return Err{fmt::format("{} is a folder, not a file", path)};
  if (!S_ISREG(st.st_mode)) return Err{fmt::format("{} is not a regular file (a device, FIFO or socket)", path)};
  ::fcntl(f.fd_, F_SETFL, ::fcntl(f.fd_, F_GETFL) & ~O_NONBLOCK);
  f.size_ = uint64_t(st.st_size);
  return f;
}

ReadFile::ReadFile(ReadFile&& o) noexcept : path_(std::move(o.path_)), fd_(o.fd_), size_(o.size_) { o.fd_ = -1; }

ReadFile& ReadFile::operator=(ReadFile&& o) noexcept {
  if (this != &o) {
    if (fd_ >= 0) ::close(fd_);
    path_ = std::move(o.path_);
    fd_ = o.fd_;
    size_ = o.size_;
    o.fd_ = -1;
  }
  return *this;
}

ReadFile::~ReadFile() {
  if (fd_ >= 0) ::close(fd_);
}

Status ReadFile::read(uint64_t offset, std::span<uint8_t> out) const {
  if (offset > size_ || out.size() > size_ - offset)
    return Err{fmt::format("{}: read of {} bytes at byte {} runs past the end of the file ({} bytes)", path_,
                           out.size(), offset, size_)};
  size_t done = 0;
  while (done < out.size()) {
    ssize_t n = ::pread(fd_, out.data() + done, out.size() - done, off_t(offset + done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return Err{fmt::format("{}: cannot read at byte {}: {}", path_, offset + done, std::strerror(errno))};
    }
    if (n == 0) return Err{fmt::format("{}: unexpected end of file at byte {}", path_, offset + done)};
    done += size_t(n);
  }
  return {};
}

Result<std::vector<uint8_t>> ReadFile::read(uint64_t offset, uint64_t n) const {
  if (offset > size_ || n > size_ - offset)
    return Err{fmt::format("{}: read of {} bytes at byte {} runs past the end of the file ({} bytes)", path_, n,
                           offset, size_)};
  std::vector<uint8_t> out(n);
  if (Status s = read(offset, out); !s) return Err{s.error()};
  return out;
}

}  // namespace oc::io
