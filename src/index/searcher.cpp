#include "index/searcher.h"

#include "core/check.h"

namespace oc::index {

Searcher::Searcher(const std::string& dir)
    : dir_(dir), meta_(read_meta(dir)), items_(load_index(dir, false).items), vi_(VectorIndex::load(faiss_path(dir))) {
  if (vi_.size() != meta_.count)
    OC_USER_ERROR("{}: the faiss index holds {} vectors but meta.json says {} (an interrupted build? rebuild the index)",
                  dir, vi_.size(), meta_.count);
  if (vi_.dim() != meta_.embed_dim)
    OC_USER_ERROR("{}: the faiss index has dimension {} but meta.json says {}", dir, vi_.dim(), meta_.embed_dim);
}

std::vector<SearchHit> Searcher::search(const float* q, int k) const {
  std::vector<SearchHit> out;
  for (auto& h : vi_.search(q, k)) out.push_back({h.id, h.score, &items_[size_t(h.id)]});
  return out;
}

}  // namespace oc::index
