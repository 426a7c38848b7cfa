// Writing an index folder (store.h): a whole new generation, then one rename of meta.json.
#include <dirent.h>
#include <signal.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>

#include "core/check.h"
#include "core/folder_lock.h"
#include "core/fs.h"
#include "core/tensor.h"
#include "index/checksum.h"
#include "index/store.h"
#include "index/store_json.h"
#include "index/vector_index.h"
#include "io/safetensors.h"

namespace oc::index {
namespace {

// OPENCLIP_DEBUG_INDEX_KILL_AFTER=embeddings|items|faiss|commit: SIGKILL right after that
// step of a commit (the killed-append tests).
void fault_point(const char* step) {
  const char* v = std::getenv("OPENCLIP_DEBUG_INDEX_KILL_AFTER");
  if (v && std::strcmp(v, step) == 0) ::raise(SIGKILL);
}

// The generation number of a "gen-NNNNNN" folder name, or -1.
int64_t generation_of(const std::string& name) {
  if (name.size() != 10 || name.compare(0, 4, "gen-") != 0 ||
      name.find_first_not_of("0123456789", 4) != std::string::npos)
    return -1;
  return std::stoll(name.substr(4));
}

// Removes generation folders other than `keep` and `keep - 1`.
void remove_generations(const std::string& dir, int64_t keep) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return;
  std::vector<std::string> doomed;
  while (dirent* e = readdir(d.get())) {
    const int64_t g = generation_of(e->d_name);
    if (g >= 0 && g != keep && g != keep - 1) doomed.push_back(fs::join(dir, e->d_name));
  }
  for (auto& p : doomed) {
    std::error_code ec;
    std::filesystem::remove_all(p, ec);
    if (ec) OC_USER_ERROR("{}: cannot remove an old index generation: {}", p, ec.message());
  }
}

}  // namespace

void clean_index_folder(const std::string& dir) {
  remove_stale_tmp(dir);
  // A damaged meta.json stops here (read_meta throws) before anything is removed.
  remove_generations(dir, index_exists(dir) ? read_meta(dir).generation : 0);
}

void commit_index(const std::string& dir, IndexData& d, const VectorIndex& vi) {
  const int64_t N = int64_t(d.items.size()), E = d.meta.embed_dim;
  OC_CHECK(int64_t(d.embeddings.size()) == N * E && vi.size() == N, "{} floats, {} vectors for {} x {}",
           d.embeddings.size(), vi.size(), N, E);
  IndexMeta m = d.meta;
  m.generation = d.meta.generation + 1;
  if (m.generation > 999999)
    OC_USER_ERROR("{}: the index has been appended to 999999 times; rebuild it into a new folder", dir);
  m.count = N;
  const std::string gdir = fs::join(dir, generation_name(m.generation));
  std::error_code ec;
  std::filesystem::remove_all(gdir, ec);  // what a killed writer left (clean_index_folder removed it already)
  fs::make_dirs(gdir);
  TensorView v{DType::F32, {N, E}, d.embeddings.data()};
  std::vector<std::pair<std::string, TensorView>> t = {{"embeddings", v}};
  io::write_safetensors(data_path(dir, m, "embeddings.safetensors"), t, {{"model", m.model}});
  fault_point("embeddings");
  fs::write_atomic(data_path(dir, m, "items.jsonl"), items_to_jsonl(d.items));
  fault_point("items");
  vi.save(data_path(dir, m, "faiss.index"));
  fault_point("faiss");
  m.sha256 = {file_sha256(data_path(dir, m, "embeddings.safetensors"), "an index file"),
              file_sha256(data_path(dir, m, "items.jsonl"), "an index file"),
              file_sha256(data_path(dir, m, "faiss.index"), "an index file")};
  fs::write_atomic(fs::join(dir, "meta.json"), meta_to_json(m));  // the commit
  d.meta = m;
  fault_point("commit");
  remove_generations(dir, m.generation);
}

}  // namespace oc::index
