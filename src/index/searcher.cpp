#include "index/searcher.h"

#include "core/check.h"

namespace oc::index {
namespace {
// The faiss index of the generation `d` belongs to, its SHA-256, layout and graph checked.
VectorIndex load_faiss(const std::string& dir, const IndexMeta& m) {
  check_sum(dir, m, "faiss.index");
  return VectorIndex::load(data_path(dir, m, "faiss.index"));
}
}  // namespace

Searcher::Searcher(const std::string& dir) : Searcher(dir, load_index(dir, false)) {}

// One meta.json read: the items and the faiss index are of the same generation.
Searcher::Searcher(const std::string& dir, IndexData d)
    : dir_(dir), meta_(std::move(d.meta)), items_(std::move(d.items)), vi_(load_faiss(dir, meta_)) {
  if (vi_.size() != meta_.count)
    OC_USER_ERROR("{}: the faiss index holds {} vectors but meta.json says {} (rebuild the index)", dir, vi_.size(),
                  meta_.count);
  if (meta_.faiss_kind != kind_name(vi_.kind()))
    OC_USER_ERROR("{}: meta.json says the faiss index is \"{}\" but faiss.index is {} (rebuild the index)", dir,
                  meta_.faiss_kind, kind_name(vi_.kind()));
  if (vi_.dim() != meta_.embed_dim)
    OC_USER_ERROR("{}: the faiss index has dimension {} but meta.json says {}", dir, vi_.dim(), meta_.embed_dim);
}

std::vector<SearchHit> Searcher::search(const float* q, int k) const {
  std::vector<SearchHit> out;
  for (auto& h : vi_.search(q, k)) {
    OC_CHECK(h.id >= 0 && size_t(h.id) < items_.size(), "faiss returned id {} of {}", h.id, items_.size());
    out.push_back({h.id, h.score, &items_[size_t(h.id)]});
  }
  return out;
}

}  // namespace oc::index
