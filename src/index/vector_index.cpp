#include "index/vector_index.h"

#include <faiss/IndexFlat.h>
#include <faiss/IndexHNSW.h>
#include <faiss/index_io.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

#include "core/check.h"
#include "index/faiss_check.h"

namespace oc::index {
namespace {
constexpr int kHnswM = 32, kEfConstruction = 80, kEfSearch = 128;
}

IndexKind parse_kind(const std::string& name) {
  if (name == "flat") return IndexKind::Flat;
  if (name == "hnsw") return IndexKind::Hnsw;
  OC_USER_ERROR("unknown faiss index kind '{}' (auto, flat or hnsw)", name);
}

IndexKind choose_kind(const std::string& requested, int64_t n) {
  if (requested == "auto") return n < kHnswThreshold ? IndexKind::Flat : IndexKind::Hnsw;
  return parse_kind(requested);
}

const char* kind_name(IndexKind k) { return k == IndexKind::Flat ? "flat" : "hnsw"; }

VectorIndex::VectorIndex(IndexKind kind, std::unique_ptr<faiss::Index> idx) : kind_(kind), idx_(std::move(idx)) {}
VectorIndex::VectorIndex(VectorIndex&&) noexcept = default;
VectorIndex& VectorIndex::operator=(VectorIndex&&) noexcept = default;
VectorIndex::~VectorIndex() = default;

VectorIndex::VectorIndex(IndexKind kind, int dim) : kind_(kind) {
  OC_CHECK(dim > 0, "dim {}", dim);
  if (kind == IndexKind::Flat) {
    idx_ = std::make_unique<faiss::IndexFlatIP>(dim);
  } else {
    auto h = std::make_unique<faiss::IndexHNSWFlat>(dim, kHnswM, faiss::METRIC_INNER_PRODUCT);
    h->hnsw.efConstruction = kEfConstruction;
    h->hnsw.efSearch = kEfSearch;
    idx_ = std::move(h);
  }
}

VectorIndex VectorIndex::load(const std::string& path) {
  check_faiss_layout(path);  // every length in the file against its size, before faiss allocates
  std::unique_ptr<faiss::Index> idx;
  try {
    idx.reset(faiss::read_index(path.c_str()));
  } catch (const std::exception& e) {
    OC_USER_ERROR("{}: cannot read the faiss index: {}", path, e.what());
  }
  check_faiss_structure(*idx, path);  // the HNSW graph, before any search
  IndexKind kind;
  if (dynamic_cast<faiss::IndexFlatIP*>(idx.get())) kind = IndexKind::Flat;
  else if (auto* h = dynamic_cast<faiss::IndexHNSWFlat*>(idx.get())) kind = IndexKind::Hnsw, h->hnsw.efSearch = kEfSearch;
  else OC_USER_ERROR("{}: not a flat or HNSW inner-product faiss index", path);
  if (idx->metric_type != faiss::METRIC_INNER_PRODUCT) OC_USER_ERROR("{}: the faiss index does not use inner product", path);
  return VectorIndex(kind, std::move(idx));
}

void VectorIndex::add(const float* x, int64_t n) {
  if (n > 0) idx_->add(n, x);
}

void VectorIndex::save(const std::string& path) const {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  try {
    faiss::write_index(idx_.get(), tmp.c_str());
  } catch (const std::exception& e) {
    std::remove(tmp.c_str());
    OC_USER_ERROR("{}: cannot write the faiss index: {}", path, e.what());
  }
  const int fd = ::open(tmp.c_str(), O_RDONLY | O_CLOEXEC);  // on disk before it is renamed in
  const bool synced = fd >= 0 && ::fsync(fd) == 0;
  if (fd >= 0) ::close(fd);
  if (!synced) {
    std::remove(tmp.c_str());
    OC_USER_ERROR("{}: cannot fsync the faiss index", path);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    OC_USER_ERROR("{}: cannot rename the faiss index into place", path);
  }
}

std::vector<Hit> VectorIndex::search(const float* q, int k) const {
  k = int(std::min<int64_t>(k, idx_->ntotal));
  if (k <= 0) return {};
  std::vector<float> d(static_cast<size_t>(k));
  std::vector<faiss::Index::idx_t> ids(static_cast<size_t>(k));
  try {  // what faiss throws before its OpenMP region (the fields it sizes from are checked at load)
    idx_->search(1, q, k, d.data(), ids.data());
  } catch (const std::exception& e) {
    OC_USER_ERROR("the faiss search failed: {}", e.what());
  }
  std::vector<Hit> hits;
  for (int i = 0; i < k; ++i)
    if (ids[i] >= 0) hits.push_back({int64_t(ids[i]), d[i]});
  return hits;
}

int64_t VectorIndex::size() const { return idx_->ntotal; }
int VectorIndex::dim() const { return int(idx_->d); }

}  // namespace oc::index
