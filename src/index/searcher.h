// A built index opened for queries: its items and faiss index, checked for consistency
// (SHA-256 of each file, item paths under the index's roots, the faiss layout and HNSW
// graph, counts, dimension) and, by the caller, against the model in use (check_same_model).
#pragma once
#include <string>
#include <vector>

#include "index/store.h"
#include "index/vector_index.h"

namespace oc::index {

struct SearchHit {
  int64_t id;
  float score;
  const Item* item;
};

class Searcher {
 public:
  explicit Searcher(const std::string& dir);
  const IndexMeta& meta() const { return meta_; }
  const std::string& dir() const { return dir_; }
  const std::vector<Item>& items() const { return items_; }
  // q: an L2-normalized embedding of meta().embed_dim floats. Thread-safe.
  std::vector<SearchHit> search(const float* q, int k) const;

 private:
  Searcher(const std::string& dir, IndexData d);
  std::string dir_;
  IndexMeta meta_;
  std::vector<Item> items_;
  VectorIndex vi_;
};

}  // namespace oc::index
