// Files that must stay inside their folders: an image folder walked for an index or for
// shards, an index's images served over HTTP. The check is on the file the kernel opened
// (the real path of the open descriptor), never on the path's text: a symlink planted in the
// folder, or put in place of a file after the check, cannot lead outside it.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace oc::fs {

// The real path (no symlinks, no "." or "..") of an open descriptor: /proc/self/fd/N.
Result<std::string> fd_real_path(int fd);
// The real path of `path` (realpath(3)); the path itself when it does not exist.
std::string real_path_or_self(const std::string& path);
// Whether `real` (a real path) is one of `real_roots` or lies under one of them.
bool real_path_under(const std::string& real, const std::vector<std::string>& real_roots);
// Checks that the open descriptor `fd` (opened from `path`) is a regular file whose real path
// lies under one of `roots` (resolved with real_path_or_self). The error names the path, what
// it resolves to, and why it is refused.
Status check_fd_beneath(int fd, const std::string& path, const std::vector<std::string>& roots);

// A recursive walk of `root` that sees each real folder once (device + inode: a symlink loop
// such as sub/x -> .. is walked once, not 2^depth times), follows a symlink (to a folder or a
// file) only when its target lies under the root's real path, and keeps regular files whose
// name `want` accepts. Paths are `root`-relative joins (the names as found), sorted per
// folder. Throws oc::Error when `root` cannot be opened.
struct WalkCounts {
  int64_t links_outside = 0;  // symlinks whose target leaves the root (skipped)
  int64_t repeats = 0;        // folders already walked (a loop or a second link; skipped)
  int64_t special = 0;        // FIFOs, devices, sockets, dangling links (skipped)
  std::string first_outside;  // the first skipped link, for the warning
};
std::vector<std::string> walk_files(const std::string& root, const std::function<bool(std::string_view)>& want,
                                    WalkCounts* counts);

}  // namespace oc::fs
