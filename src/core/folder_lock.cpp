#include "core/folder_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <memory>

#include "core/check.h"
#include "core/fs.h"

namespace oc {

namespace {
std::string host_name() {
  char h[256] = {};
  if (::gethostname(h, sizeof h - 1) != 0) return "?";
  return h;
}
}  // namespace

namespace {

// Opens <folder>/.lock without following a link (O_NOFOLLOW: a planted `.lock -> ~/.bashrc`
// is refused, not truncated), creating it with O_EXCL when absent (a dangling link is not
// followed to create its target either).
int open_lock_file(const std::string& path) {
  for (int attempt = 0; attempt < 3; ++attempt) {
    int fd = ::open(path.c_str(), O_RDWR | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0 || errno != ENOENT) {
      if (fd < 0 && (errno == ELOOP || errno == EMLINK))
        OC_USER_ERROR("the lock {} is a symbolic link; refusing to follow it (remove it)", path);
      if (fd < 0 && errno == ENXIO) OC_USER_ERROR("the lock {} is not a regular file (remove it)", path);
      if (fd < 0) OC_USER_ERROR("cannot open the lock {}: {}", path, std::strerror(errno));
      return fd;
    }
    fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd >= 0) return fd;
    if (errno != EEXIST) OC_USER_ERROR("cannot create the lock {}: {}", path, std::strerror(errno));
  }
  OC_USER_ERROR("cannot open the lock {}: it keeps appearing and disappearing", path);
}

// Only a regular file with one name, owned by this user, holding a lock note (or nothing):
// anything else is not ours to truncate.
void check_lock_file(int fd, const std::string& path) {
  struct stat st;
  if (::fstat(fd, &st) != 0) OC_USER_ERROR("cannot stat the lock {}: {}", path, std::strerror(errno));
  const char* why = !S_ISREG(st.st_mode)       ? "is not a regular file"
                    : st.st_uid != ::geteuid() ? "belongs to another user"
                    : st.st_nlink != 1         ? "has other names (hard links)"
                    : st.st_size > 4096        ? "is larger than a lock note"
                                               : nullptr;
  if (!why && st.st_size > 0) {
    char head[4] = {};
    if (::pread(fd, head, 4, 0) != 4 || std::memcmp(head, "pid ", 4) != 0) why = "does not hold a lock note";
  }
  if (why) OC_USER_ERROR("the lock {} {}; refusing to use it (remove it if it is not needed)", path, why);
}

}  // namespace

FolderLock::FolderLock(const std::string& dir, const LockUse& use) : path_(fs::join(dir, ".lock")) {
  fd_ = open_lock_file(path_);
  try {
    check_lock_file(fd_, path_);
  } catch (...) {
    ::close(fd_);
    fd_ = -1;
    throw;
  }
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[4097] = {};
    const ssize_t n = ::pread(fd_, buf, sizeof buf - 1, 0);
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) OC_USER_ERROR("cannot lock the {} {}: {}", use.folder, dir, std::strerror(err));
    std::string who = n > 0 ? std::string(buf, size_t(n)) : "an unknown process";
    while (!who.empty() && who.back() == '\n') who.pop_back();
    OC_USER_ERROR("the {} {} is in use by another {} ({}); one writer per {}: wait for it to end or {}", use.folder,
                  dir, use.writer, who, use.folder, use.advice);
  }
  const std::string me = fmt::format("pid {} on host {}, since unix time {}", ::getpid(), host_name(),
                                     long(std::time(nullptr)));
  if (::ftruncate(fd_, 0) != 0 || ::pwrite(fd_, me.data(), me.size(), 0) != ssize_t(me.size()))
    OC_USER_ERROR("cannot write the lock {}: {}", path_, std::strerror(errno));
}

FolderLock::~FolderLock() {
  if (fd_ >= 0) ::close(fd_);  // releases the flock; the file stays (unlinking it would race a new holder)
}

int remove_stale_tmp(const std::string& dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return 0;
  int removed = 0;
  while (dirent* e = readdir(d.get())) {
    const std::string n = e->d_name;
    const size_t at = n.rfind(".tmp-");
    if (at == std::string::npos) continue;
    const std::string pid_text = n.substr(at + 5);
    if (pid_text.empty() || pid_text.size() > 9 || pid_text.find_first_not_of("0123456789") != std::string::npos)
      continue;  // not ours (fs::write_atomic names them <path>.tmp-<pid>)
    const pid_t pid = pid_t(std::stol(pid_text));
    if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;  // its writer may still be running
    if (::unlink(fs::join(dir, n).c_str()) == 0) ++removed;
  }
  return removed;
}

}  // namespace oc
