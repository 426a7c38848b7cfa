// Nearest neighbours by inner product (= cosine on L2-normalized embeddings) with faiss.
// Exact (IndexFlatIP) below kHnswThreshold vectors, HNSW (IndexHNSWFlat, M=32) from there
// on: docs/BENCHMARKS.md has the measured query times behind the threshold.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace faiss {
struct Index;
}

namespace oc::index {

enum class IndexKind { Flat, Hnsw };
constexpr int64_t kHnswThreshold = 200'000;

// "auto" picks by size; "flat" / "hnsw" force. Throws on another name.
IndexKind choose_kind(const std::string& requested, int64_t n);
const char* kind_name(IndexKind k);
IndexKind parse_kind(const std::string& name);

struct Hit {
  int64_t id;
  float score;
};

class VectorIndex {
 public:
  VectorIndex(IndexKind kind, int dim);
  // Checked before faiss reads it and before any search (faiss_check.h).
  static VectorIndex load(const std::string& path);
  VectorIndex(VectorIndex&&) noexcept;
  VectorIndex& operator=(VectorIndex&&) noexcept;
  ~VectorIndex();

  void add(const float* x, int64_t n);
  void save(const std::string& path) const;  // atomically (temporary file, fsync, rename)
  // Up to k hits, best first. Safe to call from many threads at once (faiss' const search).
  std::vector<Hit> search(const float* q, int k) const;
  int64_t size() const;
  int dim() const;
  IndexKind kind() const { return kind_; }

 private:
  VectorIndex(IndexKind kind, std::unique_ptr<faiss::Index> idx);
  IndexKind kind_;
  std::unique_ptr<faiss::Index> idx_;
};

}  // namespace oc::index
