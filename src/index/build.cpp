#include "index/build.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <unordered_set>

#include "core/check.h"
#include "core/folder_lock.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/progress.h"
#include "data/stats.h"
#include "image/codec.h"
#include "index/checksum.h"
#include "index/sources.h"
#include "index/store.h"
#include "index/vector_index.h"
#include "model/inference.h"

namespace oc::index {
namespace {

using Clock = std::chrono::steady_clock;

// Appends the items `which` of `todo` and their embeddings (rows of `feats`), except those
// whose embedding is not finite (issue 42 #8: NaN from a damaged model was written into the
// index): each is counted as failed and named in a warning.
void keep_finite(const std::vector<float>& feats, size_t E, const std::vector<size_t>& which,
                 const std::vector<Item>& todo, IndexData* d, BuildResult* r) {
  for (size_t k = 0; k < which.size(); ++k) {
    const float* row = feats.data() + k * E;
    if (!std::all_of(row, row + E, [](float x) { return std::isfinite(x); })) {
      log::warn("{}: its embedding is not finite (NaN or infinity); not indexed", todo[which[k]].key);
      ++r->failed;
      continue;
    }
    d->items.push_back(todo[which[k]]);
    d->embeddings.insert(d->embeddings.end(), row, row + E);
  }
}

// Decodes a batch in parallel; failed items are counted and left out (nullopt).
std::vector<std::optional<ImageU8>> decode_batch(const std::vector<Item>& items, size_t i0, size_t n,
                                                 const std::vector<std::string>& roots, data::DataStats* stats) {
  std::vector<std::optional<ImageU8>> out(n);
#pragma omp parallel for schedule(dynamic)
  for (size_t i = 0; i < n; ++i) {
    const Item& it = items[i0 + i];
    auto bytes = read_item_bytes(it, roots);
    if (!bytes) { stats->skip(data::Skip::FileError, bytes.error()); continue; }
    auto img = decode_image(bytes.value());
    if (!img) { stats->skip(data::Skip::DecodeError, it.key + ": " + img.error()); continue; }
    out[i] = std::move(img).value();
  }
  return out;
}

// The faiss index over all rows: the existing one (checked at load) extended when its kind
// still fits, otherwise built anew from the embeddings.
VectorIndex make_faiss(const BuildOptions& opt, const IndexData& d, int64_t old_count, bool existed) {
  const int64_t n = int64_t(d.items.size());
  const IndexKind kind = choose_kind(opt.faiss, n);
  std::optional<VectorIndex> vi;
  if (existed && d.meta.faiss_kind == kind_name(kind)) {
    check_sum(opt.out, d.meta, "faiss.index");
    vi.emplace(VectorIndex::load(data_path(opt.out, d.meta, "faiss.index")));
    if (vi->size() != old_count || vi->dim() != d.meta.embed_dim) vi.reset();  // out of step: rebuild
  }
  const size_t E = size_t(d.meta.embed_dim);
  if (vi) {
    vi->add(d.embeddings.data() + size_t(old_count) * E, n - old_count);
  } else {
    vi.emplace(kind, d.meta.embed_dim);
    vi->add(d.embeddings.data(), n);
  }
  return std::move(*vi);
}

void add_roots(std::vector<std::string> more, std::vector<std::string>* roots) {
  roots->insert(roots->end(), more.begin(), more.end());
  std::sort(roots->begin(), roots->end());
  roots->erase(std::unique(roots->begin(), roots->end()), roots->end());
}

}  // namespace

BuildResult build_index(const BuildOptions& opt) {
  if (opt.out.empty()) OC_USER_ERROR("index build needs --out INDEX_DIR");
  if (opt.images.empty()) OC_USER_ERROR("index build needs --images DIR|PATTERN|SHARDS");
  if (opt.faiss != "auto") parse_kind(opt.faiss);
  const ModelSource model_src = resolve_model_source(opt.model, opt.weights);
  data::DataStats stats;
  Sources src = list_sources(opt.images, &stats);  // before the folder is made: bad --images leaves nothing
  InferenceOptions io;
  io.precision = opt.precision;
  io.int8_scales = opt.int8_scales;
  io.device = opt.device;
  io.max_batch = opt.batch;
  io.tokenizer = false;  // images only: no text tokenizer (a SigLIP model's file need not be there)
  // Loading validates the weights (a 1 TiB sparse file is refused at once); only then are
  // they hashed, so hashing never reads what the loader would refuse.
  InferenceModel enc(model_src, io);
  const std::string sha = weights_checksum(model_src.weights);
  fs::make_dirs(opt.out);
  const FolderLock lock(opt.out, {"index folder", "index build", "use another --out"});
  clean_index_folder(opt.out);
  IndexData d;
  const bool existed = index_exists(opt.out);
  if (existed) {
    d = load_index(opt.out);
    check_same_model(d.meta, opt.out, effective_model(opt.model, opt.weights), sha);
  }
  std::vector<Item> todo;
  BuildResult r;
  {
    std::unordered_set<std::string> have;
    for (auto& it : d.items) have.insert(it.key);
    for (auto& it : src.items) {
      if (have.insert(it.key).second) todo.push_back(std::move(it));
      else ++r.already;
    }
  }
  if (!existed) d.meta = {effective_model(opt.model, opt.weights), opt.weights, sha, "", enc.embed_dim(), 0, 0, {}, {}};
  add_roots(std::move(src.roots), &d.meta.roots);
  const int64_t old_count = int64_t(d.items.size());
  std::optional<Progress> bar;
  if (opt.progress) bar.emplace("index build", int64_t(todo.size()), "images");
  const auto t0 = Clock::now();
  for (size_t i0 = 0; i0 < todo.size(); i0 += size_t(opt.batch)) {
    const size_t n = std::min(todo.size() - i0, size_t(opt.batch));
    auto imgs = decode_batch(todo, i0, n, d.meta.roots, &stats);
    std::vector<const ImageU8*> ok;
    std::vector<size_t> which;
    for (size_t i = 0; i < n; ++i)
      if (imgs[i]) ok.push_back(&*imgs[i]), which.push_back(i0 + i);
    const std::vector<float> feats = enc.encode_images(ok);
    r.failed += int64_t(n - ok.size());
    keep_finite(feats, size_t(enc.embed_dim()), which, todo, &d, &r);
    if (bar) bar->update(int64_t(i0 + n));
  }
  bar.reset();
  r.embed_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.added = int64_t(d.items.size()) - old_count;
  r.total = int64_t(d.items.size());
  if (r.total == 0) OC_USER_ERROR("{}: none of the images could be read ({})", opt.images, stats.summary());
  const VectorIndex vi = make_faiss(opt, d, old_count, existed);  // before faiss_kind changes
  d.meta.faiss_kind = r.faiss_kind = kind_name(vi.kind());
  commit_index(opt.out, d, vi);
  return r;
}

}  // namespace oc::index
