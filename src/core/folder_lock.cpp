#include "core/folder_lock.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
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

FolderLock::FolderLock(const std::string& dir, const LockUse& use) : path_(fs::join(dir, ".lock")) {
  fd_ = ::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) OC_USER_ERROR("cannot open the lock {}: {}", path_, std::strerror(errno));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    ::close(fd_);
    fd_ = -1;
    if (err != EWOULDBLOCK) OC_USER_ERROR("cannot lock the {} {}: {}", use.folder, dir, std::strerror(err));
    auto holder = fs::read_text(path_);
    std::string who = holder && !holder->empty() ? *holder : "an unknown process";
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
