// Shared by the libFuzzer targets (tests/fuzz/fuzz_<parser>.cpp, one parser each).
// Contract of every target: any input gives a value or a returned error. oc::Error (the
// project's thrown error for user mistakes and internal checks) is caught and counts as an
// error; anything else (std::bad_alloc, out_of_range, a JSON library exception), a sanitizer
// report, a trap, a hang or an allocation over libFuzzer's -malloc_limit_mb is a finding.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>

#include "core/check.h"
#include "data/stream.h"

namespace oc::fuzz {

inline void check(bool ok) {
  if (!ok) __builtin_trap();
}

// Runs `fn`, treating oc::Error as the documented error path.
template <class Fn>
void guarded(Fn&& fn) {
  try {
    fn();
  } catch (const oc::Error&) {
  }
}

// The parsers that take a path get the input through one file per process, rewritten
// for each input (/dev/shm when present: no disk writes per execution). `suffix` matters
// to readers that pick the format by extension.
inline std::string write_input(const uint8_t* data, size_t size, const std::string& suffix = "") {
  static const std::string dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
  std::string path = dir + "/oc_fuzz_" + std::to_string(getpid()) + suffix;
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  check(fd >= 0);
  size_t done = 0;
  while (done < size) {
    ssize_t w = ::write(fd, data + done, size - done);
    check(w > 0);
    done += size_t(w);
  }
  close(fd);
  return path;
}

// An in-memory ByteStream for the streaming readers (tar, CSV), read in small, uneven
// pieces so that buffer-boundary code paths get exercised.
class MemStream : public oc::data::ByteStream {
 public:
  MemStream(const uint8_t* data, size_t size) : data_(data), size_(size) {}
  oc::Result<size_t> read(uint8_t* dst, size_t n) override {
    size_t k = std::min({n, size_ - pos_, size_t(1 + (pos_ * 7919) % 4093)});
    if (k) std::memcpy(dst, data_ + pos_, k);
    pos_ += k;
    return k;
  }

 private:
  const uint8_t* data_;
  size_t size_, pos_ = 0;
};

}  // namespace oc::fuzz
