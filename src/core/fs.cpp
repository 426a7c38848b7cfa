#include "core/fs.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/check.h"

namespace oc::fs {

bool exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

bool is_dir(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

int64_t file_size(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return -1;
  return int64_t(st.st_size);
}

void make_dirs(const std::string& path) {
  if (path.empty() || is_dir(path)) return;
  make_dirs(dirname(path));
  if (::mkdir(path.c_str(), 0755) != 0 && errno != EEXIST)
    OC_USER_ERROR("cannot create folder {}: {}", path, std::strerror(errno));
}

std::string dirname(const std::string& path) {
  auto p = path.find_last_of('/');
  if (p == std::string::npos) return "";
  if (p == 0) return "/";
  return path.substr(0, p);
}

std::string basename(const std::string& path) {
  auto p = path.find_last_of('/');
  return p == std::string::npos ? path : path.substr(p + 1);
}

std::string join(const std::string& a, const std::string& b) {
  if (a.empty() || (!b.empty() && b[0] == '/')) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}

Result<std::vector<uint8_t>> read_file(const std::string& path, const ReadOptions& opt) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);  // O_NONBLOCK: a FIFO must not hang open()
  if (fd < 0) return Err{fmt::format("cannot open {}: {}", path, std::strerror(errno))};
  struct FdCloser {
    int fd;
    ~FdCloser() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0) return Err{fmt::format("cannot stat {}: {}", path, std::strerror(errno))};
  if (S_ISDIR(st.st_mode)) return Err{fmt::format("{} is a folder, not a file", path)};
  const bool regular = S_ISREG(st.st_mode);
  if (!regular && !(opt.allow_pipe && (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode))))
    return Err{fmt::format("{} is not a regular file (a {}); refusing to read it", path,
                           S_ISCHR(st.st_mode)    ? "character device"
                           : S_ISBLK(st.st_mode)  ? "block device"
                           : S_ISFIFO(st.st_mode) ? "FIFO"
                           : S_ISSOCK(st.st_mode) ? "socket"
                                                  : "special file")};
  // A FIFO (asked for) stays open non-blocking and is read as poll() reports data: poll
  // waits for a writer's data, and reports POLLHUP only once a writer has come and gone
  // (Linux: not for a reader whose FIFO never had a writer), so this waits for the writer as
  // a blocking open() would. Closing this fd and opening again instead lost a writer that
  // wrote and closed in between, and then waited for ever.
  const bool fifo = S_ISFIFO(st.st_mode);
  if (!fifo) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  if (regular) {
    if (Status s = within_cap(path, "reading the whole file", uint64_t(st.st_size), opt.cap); !s)
      return Err{s.error()};
  }
  std::vector<uint8_t> out;
  if (regular && st.st_size > 0) out.reserve(size_t(st.st_size));
  uint8_t buf[1 << 16];
  for (;;) {
    if (fifo) {
      pollfd pfd{fd, POLLIN, 0};
      if (::poll(&pfd, 1, -1) < 0) {
        if (errno == EINTR) continue;
        return Err{fmt::format("cannot wait for {}: {}", path, std::strerror(errno))};
      }
    }
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR || (fifo && errno == EAGAIN)) continue;
      return Err{fmt::format("cannot read {} at byte {}: {}", path, out.size(), std::strerror(errno))};
    }
    if (n == 0) break;
    if (Status s = within_cap(path, "reading the whole stream", out.size() + size_t(n), opt.cap);
        !s)
      return Err{s.error()};
    out.insert(out.end(), buf, buf + n);
  }
  return out;
}

Result<std::string> read_text(const std::string& path, const ReadOptions& opt) {
  auto r = read_file(path, opt);
  if (!r) return Err{r.error()};
  return std::string(r->begin(), r->end());
}

namespace {
// RAII fd that unlinks its temporary path unless committed.
struct TempFile {
  std::string path;
  int fd = -1;
  bool committed = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!committed) ::unlink(path.c_str());
  }
};

void write_all(int fd, const uint8_t* p, size_t n, const std::string& path) {
  size_t done = 0;
  while (done < n) {
    ssize_t w = ::write(fd, p + done, n - done);
    if (w < 0) {
      if (errno == EINTR) continue;
      OC_USER_ERROR("cannot write {}: {} (nothing was replaced)", path, std::strerror(errno));
    }
    done += size_t(w);
  }
}
}  // namespace

void write_atomic(const std::string& path, const std::function<void(const Sink&)>& writer) {
  TempFile tmp;
  tmp.path = path + ".tmp-" + std::to_string(::getpid());
  tmp.fd = ::open(tmp.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (tmp.fd < 0) OC_USER_ERROR("cannot create {}: {}", tmp.path, std::strerror(errno));
  // Buffer writes: checkpoints are written in many small pieces.
  std::vector<uint8_t> buf;
  buf.reserve(1 << 20);
  Sink sink = [&](std::span<const uint8_t> bytes) {
    if (buf.size() + bytes.size() > (1u << 20)) {
      write_all(tmp.fd, buf.data(), buf.size(), path);
      buf.clear();
    }
    if (bytes.size() >= (1u << 20)) {
      write_all(tmp.fd, bytes.data(), bytes.size(), path);
    } else {
      buf.insert(buf.end(), bytes.begin(), bytes.end());
    }
  };
  writer(sink);
  write_all(tmp.fd, buf.data(), buf.size(), path);
  if (::fsync(tmp.fd) != 0) OC_USER_ERROR("cannot fsync {}: {}", tmp.path, std::strerror(errno));
  if (::close(tmp.fd) != 0) {
    tmp.fd = -1;
    OC_USER_ERROR("cannot close {}: {}", tmp.path, std::strerror(errno));
  }
  tmp.fd = -1;
  if (::rename(tmp.path.c_str(), path.c_str()) != 0)
    OC_USER_ERROR("cannot rename {} to {}: {}", tmp.path, path, std::strerror(errno));
  tmp.committed = true;
  std::string dir = dirname(path);
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_atomic(const std::string& path, std::span<const uint8_t> bytes) {
  write_atomic(path, [&](const Sink& sink) { sink(bytes); });
}

void write_atomic(const std::string& path, const std::string& text) {
  write_atomic(path, std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
}

}  // namespace oc::fs
