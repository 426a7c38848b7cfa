#include "hub/cache.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "core/check.h"
#include "core/fs.h"
#include "core/limits.h"
#include "hub/hash.h"

namespace oc::hub {

namespace {
namespace sfs = std::filesystem;

bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'; }

bool valid_part(const std::string& p) {
  if (p.empty() || p.size() > 96) return false;
  for (char c : p)
    if (!name_char(c)) return false;
  return p.front() != '-' && p.front() != '.' && p.back() != '-' && p.back() != '.';
}

bool inside(const sfs::path& p, const sfs::path& root) {
  auto r = p.lexically_relative(root);
  return !r.empty() && *r.begin() != "..";
}
}  // namespace

void check_repo_id(const std::string& repo_id) {
  const size_t slash = repo_id.find('/');
  const bool ok =
      repo_id.find("--") == std::string::npos && repo_id.find("..") == std::string::npos &&
      (slash == std::string::npos ? valid_part(repo_id)
                                  : valid_part(repo_id.substr(0, slash)) && valid_part(repo_id.substr(slash + 1)));
  if (!ok)
    OC_USER_ERROR(
        "'{}' is not a Hugging Face repository id (org/name: letters, digits, '_', '-', '.'; no '--' or '..')",
        repo_id);
}

void check_filename(const std::string& filename) {
  bool ok = !filename.empty() && filename.front() != '/' && filename.find('\\') == std::string::npos &&
            filename.find('\0') == std::string::npos;
  for (const auto& part : sfs::path(filename)) ok = ok && part != ".." && part != "." && !part.empty();
  if (!ok) OC_USER_ERROR("'{}' is not a file name inside a repository (a relative path without '.' or '..')", filename);
}

void check_revision(const std::string& revision) {
  bool ok = !revision.empty() && revision.size() < 256 && revision.find("..") == std::string::npos &&
            revision.front() != '/' && revision.back() != '/';
  for (char c : revision) ok = ok && (name_char(c) || c == '/');
  if (!ok) OC_USER_ERROR("'{}' is not a revision (a branch, tag or commit)", revision);
}

std::string RepoCache::folder() const {
  std::string f = "models--" + repo_id;
  for (size_t p = f.find('/'); p != std::string::npos; p = f.find('/')) f.replace(p, 1, "--");
  return fs::join(cache, f);
}

std::string RepoCache::blob(const std::string& etag) const { return fs::join(folder(), "blobs/" + etag); }

std::string RepoCache::pointer(const std::string& commit, const std::string& filename) const {
  return fs::join(folder(), "snapshots/" + commit + "/" + filename);
}

std::string RepoCache::lock(const std::string& etag) const {
  return fs::join(fs::join(cache, ".locks"), sfs::path(folder()).filename().string() + "/" + etag + ".lock");
}

std::string RepoCache::commit_of(const std::string& revision) const {
  if (is_hex(revision, 40)) return revision;
  const std::string ref = fs::join(folder(), "refs/" + revision);
  if (!fs::exists(ref)) return "";
  auto text = fs::read_text(ref, {.cap = Cap{"the 4 KiB cap on a ref file", 4096}});
  if (!text) OC_USER_ERROR("{}", text.error());
  std::string c = *text;
  while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.pop_back();
  if (!is_hex(c, 40)) OC_USER_ERROR("{}: not a commit hash (40 hex digits), it holds '{}'", ref, c.substr(0, 80));
  return c;
}

void RepoCache::write_ref(const std::string& revision, const std::string& commit) const {
  if (revision == commit) return;
  const std::string ref = fs::join(folder(), "refs/" + revision);
  fs::make_dirs(fs::dirname(ref));
  fs::write_atomic(ref, commit);
}

std::string RepoCache::cached(const std::string& commit, const std::string& filename) const {
  const std::string p = pointer(commit, filename);
  std::error_code ec;
  if (!sfs::exists(sfs::symlink_status(p, ec))) return "";
  const sfs::path real = sfs::canonical(p, ec);
  if (ec)
    OC_USER_ERROR("{}: a broken cache entry ({}: a symlink loop or a dangling link); delete it to download again", p,
                  ec.message());
  const sfs::path root = sfs::canonical(folder(), ec);
  if (ec || !inside(real, root))
    OC_USER_ERROR("{}: the cache entry resolves to {}, outside its repository's folder {}; refused", p, real.string(),
                  folder());
  if (!sfs::is_regular_file(real, ec)) OC_USER_ERROR("{}: the cache entry is not a regular file", p);
  return p;
}

void RepoCache::link(const std::string& commit, const std::string& filename, const std::string& etag) const {
  const sfs::path dst = pointer(commit, filename);
  fs::make_dirs(dst.parent_path().string());
  const sfs::path rel = sfs::path(blob(etag)).lexically_relative(dst.parent_path());
  std::error_code ec;
  sfs::remove(dst, ec);
  sfs::create_symlink(rel, dst, ec);
  if (ec) OC_USER_ERROR("cannot link {} to {}: {}", dst.string(), rel.string(), ec.message());
}

FileLock::FileLock(const std::string& path) {
  fs::make_dirs(fs::dirname(path));
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) OC_USER_ERROR("cannot open the lock {}: {}", path, std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0)
    if (errno != EINTR) {
      const int err = errno;
      ::close(fd_);
      OC_USER_ERROR("cannot lock {}: {}", path, std::strerror(err));
    }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace oc::hub
