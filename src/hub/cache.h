// The huggingface_hub cache layout, read and written as huggingface_hub does so that either
// side reuses the other's files:
//   <cache>/models--<org>--<name>/blobs/<etag>                  the files, named by their etag
//   <cache>/models--<org>--<name>/snapshots/<commit>/<filename> relative symlinks to ../../blobs/<etag>
//   <cache>/models--<org>--<name>/refs/<revision>               the commit a branch or tag was at
//   <cache>/.locks/models--<org>--<name>/<etag>.lock            one writer per blob (flock, as filelock)
// A snapshot entry is used only when it resolves (symlinks followed) inside its repository's
// folder: a loop, a dangling link or a path out of the folder is refused with the entry named.
#pragma once
#include <string>

namespace oc::hub {

// Throws oc::Error unless repo_id is "org/name" (or "name") in huggingface_hub's characters
// ([A-Za-z0-9_.-], no "--" or ".." and no leading or trailing '-' or '.'), filename a relative
// path without "." / ".." components, and revision a branch, tag or commit without "..".
void check_repo_id(const std::string& repo_id);
void check_filename(const std::string& filename);
void check_revision(const std::string& revision);

struct RepoCache {
  std::string cache;           // the hub cache root
  std::string repo_id;         // org/name
  std::string folder() const;  // <cache>/models--org--name
  std::string blob(const std::string& etag) const;
  std::string pointer(const std::string& commit, const std::string& filename) const;
  std::string lock(const std::string& etag) const;
  // The commit of `revision`: itself when it is a 40-hex commit, else refs/<revision>'s
  // content ("" when absent).
  std::string commit_of(const std::string& revision) const;
  void write_ref(const std::string& revision, const std::string& commit) const;
  // snapshots/<commit>/<filename> when it exists and resolves inside folder(), "" when absent;
  // throws oc::Error for a hostile entry (loop, dangling, escaping).
  std::string cached(const std::string& commit, const std::string& filename) const;
  // snapshots/<commit>/<filename> -> ../../blobs/<etag> (relative; replaces an old entry).
  void link(const std::string& commit, const std::string& filename, const std::string& etag) const;
};

// Blocks until it holds an exclusive flock on `path` (created with its folder); released when
// destroyed or when the process ends. Python's filelock takes the same lock.
class FileLock {
 public:
  explicit FileLock(const std::string& path);
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace oc::hub
