#include "index/sources.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/real_path.h"
#include "data/urls.h"
#include "data/webdataset.h"
#include "image/codec.h"
#include "index/store_json.h"
#include "io/file.h"

namespace oc::index {
namespace {

bool ends_with(const std::string& s, const std::string& suf) {
  return s.size() >= suf.size() && s.compare(s.size() - suf.size(), suf.size(), suf) == 0;
}

// The folder's images: each real folder once, no link that leaves the folder (counted and
// named in a warning), regular files only.
std::vector<std::string> walk(const std::string& dir) {
  fs::WalkCounts c;
  auto files = fs::walk_files(
      dir, [](std::string_view n) { return has_image_extension(n); }, &c);
  if (c.links_outside > 0)
    log::warn("{}: skipped {} symlink(s) that lead outside the folder (the first: {})", dir, c.links_outside,
              c.first_outside);
  if (c.repeats > 0)
    log::warn("{}: {} folder link(s) lead to a folder already walked (a loop?); walked once", dir, c.repeats);
  if (c.special > 0) log::warn("{}: skipped {} image name(s) that are not regular files", dir, c.special);
  return files;
}

// Keys and paths are absolute so the server can find the files from any working folder,
// and without ".." parts (resolved on disk: a lexical ".." is not what the kernel does after
// a symlink) so that they can be checked against the index's roots (check_item_path).
std::string absolute(const std::string& p) {
  std::string a = p;
  if (a.empty() || a[0] != '/') {
    char buf[4096];
    if (!getcwd(buf, sizeof buf)) OC_USER_ERROR("cannot read the working folder");
    a = fs::join(buf, p);
  }
  if (has_parent_part(a)) a = std::filesystem::weakly_canonical(a).string();
  while (a.size() > 1 && a.back() == '/') a.pop_back();
  return a;
}

std::vector<std::string> expand(const std::string& spec) {
  auto braces = data::expand_braces(spec);
  if (!braces) OC_USER_ERROR("{}: {}", spec, braces.error());
  std::vector<std::string> out;
  for (auto& p : braces.value()) {
    if (p.find_first_of("*?[") == std::string::npos) {
      if (!fs::exists(p)) OC_USER_ERROR("{}: no such file", p);
      out.push_back(p);
      continue;
    }
    glob_t g{};
    const int rc = glob(p.c_str(), 0, nullptr, &g);
    for (size_t i = 0; rc == 0 && i < g.gl_pathc; ++i) out.push_back(g.gl_pathv[i]);
    globfree(&g);
  }
  return out;
}

std::vector<Item> shard_items(const std::vector<std::string>& shards, data::DataStats* stats) {
  size_t next = 0;
  data::TarSampleStream s([&]() -> std::optional<std::string> {
    if (next == shards.size()) return std::nullopt;
    return shards[next++];
  }, stats);
  s.set_lazy_images(true);
  std::vector<Item> out;
  while (auto sample = s.next()) {
    const data::WdsSample::Lazy* img = nullptr;
    for (const char* ext : {"jpg", "png", "jpeg", "webp"})  // OpenCLIP's preference order
      for (auto& l : sample->lazy)
        if (!img && l.ext == ext) img = &l;
    const auto* txt = sample->find("txt");
    if (!img) { stats->skip(data::Skip::NoImage, sample->url + ":" + sample->key); continue; }
    Item it;
    it.key = sample->url + ":" + sample->key;
    it.path = sample->url;
    if (txt) it.caption.assign(txt->begin(), txt->end());
    it.offset = img->offset;
    it.size = img->size;
    out.push_back(std::move(it));
  }
  return out;
}

}  // namespace

Sources list_sources(const std::string& spec, data::DataStats* stats) {
  std::vector<std::string> files;
  Sources out;
  if (fs::is_dir(spec))
    files = walk(spec), out.roots.push_back(absolute(spec));
  else files = expand(spec);
  for (auto& f : files) f = absolute(f);
  std::sort(files.begin(), files.end());
  if (files.empty()) OC_USER_ERROR("{}: no images (.jpg .jpeg .png .webp) or shards (.tar) found", spec);
  const bool shards = std::all_of(files.begin(), files.end(), [](auto& f) { return ends_with(f, ".tar"); });
  if (shards) {
    out.items = shard_items(files, stats);
    if (out.items.empty()) OC_USER_ERROR("{}: the shards hold no samples with an image", spec);
    out.roots = files;
    return out;
  }
  for (auto& f : files) {
    if (!has_image_extension(f)) OC_USER_ERROR("{}: not an image (.jpg .jpeg .png .webp) or a shard (.tar)", f);
    out.items.push_back({f, f, "", 0, 0});
    if (!fs::is_dir(spec)) out.roots.push_back(fs::dirname(f));
  }
  std::sort(out.roots.begin(), out.roots.end());
  out.roots.erase(std::unique(out.roots.begin(), out.roots.end()), out.roots.end());
  return out;
}

Result<ItemFile> open_item(const Item& it, const std::vector<std::string>& roots) {
  auto f = io::ReadFile::open(it.path);
  if (!f) return Err{f.error()};
  // The file the kernel opened, not the path's text: a link planted after the build is caught.
  if (Status s = fs::check_fd_beneath(f->fd(), it.path, roots); !s) return Err{s.error()};
  const uint64_t size = it.size != 0 ? it.size : f->size();
  if (it.offset > f->size() || size > f->size() - it.offset)  // items.jsonl may claim 1 TB
    return Err{fmt::format("{}: read of {} bytes at byte {} runs past the end of the file ({} bytes)", it.path, size,
                           it.offset, f->size())};
  return ItemFile{std::move(f).value(), it.offset, size};
}

Result<std::vector<uint8_t>> read_item_bytes(const Item& it, const std::vector<std::string>& roots) {
  auto f = open_item(it, roots);
  if (!f) return Err{f.error()};
  if (Status s = within_cap(it.path, "reading the whole file", f->size, kReadFileCap); !s) return Err{s.error()};
  return f->file.read(f->offset, f->size);
}

}  // namespace oc::index
