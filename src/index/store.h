// The index folder (docs/FORMATS.md, "Index folder"):
//   meta.json               format, model, weights path and SHA-256, embed_dim, count, faiss kind
//   embeddings.safetensors  "embeddings": F32 [count, embed_dim], L2-normalized, row i = item i
//   items.jsonl             one {"key","path","caption"[, "shard","offset","size"]} per row
//   faiss.index             the faiss index over the embeddings (ids = row numbers)
// meta.json is written last and its count must match the other files, so a build that
// was interrupted is reported as such instead of being searched half-written.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace oc::index {

struct Item {
  std::string key;      // unique within the index: the image path, or shard:key
  std::string path;     // image file, or the shard holding it
  std::string caption;  // from the shard's .txt ("" for plain images)
  uint64_t offset = 0, size = 0;  // in the shard (size 0 = a plain file)
};

struct IndexMeta {
  std::string model, weights, weights_sha256, faiss_kind;
  int embed_dim = 0;
  int64_t count = 0;
};

struct IndexData {
  IndexMeta meta;
  std::vector<Item> items;
  std::vector<float> embeddings;  // [count, embed_dim]
};

bool index_exists(const std::string& dir);  // meta.json present
// Throws oc::Error (path + what is wrong) on a missing or inconsistent folder.
IndexMeta read_meta(const std::string& dir);
IndexData load_index(const std::string& dir, bool with_embeddings = true);
void save_index_files(const std::string& dir, const IndexData& d);  // all but faiss.index
std::string faiss_path(const std::string& dir);

// The index must have been built with this model and these weights (same SHA-256).
void check_same_model(const IndexMeta& m, const std::string& dir, const std::string& model,
                      const std::string& weights_sha256);

}  // namespace oc::index
