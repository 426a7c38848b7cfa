// One writer per folder (a training run's folder, an index folder): an exclusive flock on
// <folder>/.lock, held for the life of the writer (the OS drops it when the process ends,
// however it ends: no stale lock after a SIGKILL). A second writer is refused with the
// holder's PID and host. Temporary files (`*.tmp-<pid>`) are removed only when their writer
// is gone.
#pragma once
#include <string>
#include <string_view>

namespace oc {

// Who locks a folder, for the refusal: "the {folder} {dir} is in use by another {writer}
// (pid 1234 on host h, since unix time T); one writer per {folder}: wait for it to end or
// {advice}".
struct LockUse {
  std::string_view folder = "run folder";
  std::string_view writer = "training run";
  std::string_view advice = "use another --name";
};

class FolderLock {
 public:
  // Locks `dir` (created beforehand) or throws oc::Error naming the holder.
  explicit FolderLock(const std::string& dir, const LockUse& use = {});
  ~FolderLock();
  FolderLock(const FolderLock&) = delete;
  FolderLock& operator=(const FolderLock&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

// Removes `<name>.tmp-<pid>` files in `dir` whose writer process no longer exists on this
// host (a crashed save); a live writer's file is left alone. Returns how many were removed.
int remove_stale_tmp(const std::string& dir);

}  // namespace oc
