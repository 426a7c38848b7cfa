// One writer per run folder: an exclusive flock on <run folder>/.lock, held for the life of
// the run (the OS drops it when the process ends, however it ends: no stale lock after a
// SIGKILL). A second writer is refused with the holder's PID and host. Temporary files
// (`*.tmp-<pid>`) are removed only when their writer is gone.
#pragma once
#include <string>

namespace oc {

class RunLock {
 public:
  // Locks `dir` (created beforehand) or throws oc::Error naming the holder:
  // "logs/x is in use by another run (pid 1234 on host h, since ...)".
  explicit RunLock(const std::string& dir);
  ~RunLock();
  RunLock(const RunLock&) = delete;
  RunLock& operator=(const RunLock&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Removes `<name>.tmp-<pid>` files in `dir` whose writer process no longer exists on this
// host (a crashed save); a live writer's file is left alone. Returns how many were removed.
int remove_stale_tmp(const std::string& dir);

}  // namespace oc
