#include "core/real_path.h"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <set>
#include <utility>

#include "core/check.h"
#include "core/fs.h"

namespace oc::fs {

Result<std::string> fd_real_path(int fd) {
  char buf[PATH_MAX + 1];
  const std::string link = "/proc/self/fd/" + std::to_string(fd);
  const ssize_t n = ::readlink(link.c_str(), buf, PATH_MAX);
  if (n <= 0 || n >= PATH_MAX) return Err{fmt::format("cannot read {}: {}", link, std::strerror(errno))};
  return std::string(buf, size_t(n));
}

std::string real_path_or_self(const std::string& path) {
  std::unique_ptr<char, void (*)(void*)> r(::realpath(path.c_str(), nullptr), std::free);
  return r ? std::string(r.get()) : path;
}

bool real_path_under(const std::string& real, const std::vector<std::string>& real_roots) {
  for (const std::string& r : real_roots) {
    if (real == r) return true;
    if (r == "/") return !real.empty() && real[0] == '/';
    if (real.size() > r.size() && real.compare(0, r.size(), r) == 0 && real[r.size()] == '/') return true;
  }
  return false;
}

Status check_fd_beneath(int fd, const std::string& path, const std::vector<std::string>& roots) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return Err{fmt::format("cannot stat {}: {}", path, std::strerror(errno))};
  if (!S_ISREG(st.st_mode)) return Err{fmt::format("{} is not a regular file; refusing to read it", path)};
  auto real = fd_real_path(fd);
  if (!real) return Err{real.error()};
  std::vector<std::string> real_roots;
  for (auto& r : roots) real_roots.push_back(real_path_or_self(r));
  if (!real_path_under(*real, real_roots))
    return Err{fmt::format("{} resolves to {}, outside the folders the index was built from; refusing to read it", path,
                           *real)};
  return {};
}

namespace {

struct Walker {
  std::string root_real;
  const std::function<bool(std::string_view)>& want;
  WalkCounts* counts;
  std::set<std::pair<dev_t, ino_t>> seen;
  std::vector<std::string> out;

  // The type of `p` to walk or keep: its own type, or its target's when it is a symlink
  // whose target stays under the root (0 when skipped).
  mode_t kind(const std::string& p) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0) return 0;
    if (!S_ISLNK(st.st_mode)) return st.st_mode & S_IFMT;
    std::unique_ptr<char, void (*)(void*)> real(::realpath(p.c_str(), nullptr), std::free);
    if (!real || ::stat(real.get(), &st) != 0) return ++counts->special, 0;
    if (!real_path_under(real.get(), {root_real})) {
      if (counts->links_outside++ == 0) counts->first_outside = p + " -> " + real.get();
      return 0;
    }
    return st.st_mode & S_IFMT;
  }

  void walk(const std::string& dir, bool is_root) {
    std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir.c_str()), ::closedir);
    if (!d && is_root) OC_USER_ERROR("{}: cannot open the folder: {}", dir, std::strerror(errno));
    struct stat st;
    if (!d || ::fstat(::dirfd(d.get()), &st) != 0) return;
    if (!seen.insert({st.st_dev, st.st_ino}).second) return void(++counts->repeats);
    std::vector<std::string> names;
    while (dirent* e = ::readdir(d.get())) {
      const std::string n = e->d_name;
      if (n != "." && n != "..") names.push_back(n);
    }
    d.reset();  // one descriptor open at a time, however deep the tree
    std::sort(names.begin(), names.end());
    for (const std::string& n : names) {
      const std::string p = join(dir, n);
      const mode_t k = kind(p);
      if (k == S_IFDIR)
        walk(p, false);
      else if (k == S_IFREG && want(n))
        out.push_back(p);
      else if (k != 0 && k != S_IFREG && want(n))
        ++counts->special;
    }
  }
};

}  // namespace

std::vector<std::string> walk_files(const std::string& root, const std::function<bool(std::string_view)>& want,
                                    WalkCounts* counts) {
  WalkCounts local;
  Walker w{real_path_or_self(root), want, counts ? counts : &local, {}, {}};
  w.walk(root, true);
  return std::move(w.out);
}

}  // namespace oc::fs
