// The index folder (docs/SERVE.md, `openclip index`):
//   meta.json       format, version, model, weights path and SHA-256, embed_dim, count, faiss
//                   kind, the roots the images were listed from, the current generation and
//                   the SHA-256 of each of its files
//   gen-NNNNNN/     one generation of the data:
//     embeddings.safetensors  "embeddings": F32 [count, embed_dim], L2-normalized, row i = item i
//     items.jsonl             one {"key","path","caption"[, "offset","size"]} per row
//     faiss.index             the faiss index over the embeddings (ids = row numbers)
//   .lock           the writer's lock (core/folder_lock.h): one `index build` at a time
// A build writes a whole new generation, then commits it with one rename (meta.json); a
// writer killed at any point leaves the previous generation current, and the next writer
// removes what it left. The previous generation is kept one commit longer, for readers
// that read meta.json just before the commit.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace oc::index {

class VectorIndex;

struct Item {
  std::string key;      // unique within the index: the image path, or shard:key
  std::string path;     // image file, or the shard holding it
  std::string caption;  // from the shard's .txt ("" for plain images)
  uint64_t offset = 0, size = 0;  // in the shard (size 0 = a plain file)
};

struct FileSums {
  std::string embeddings, items, faiss;  // SHA-256 (hex) of the generation's files
};

struct IndexMeta {
  std::string model, weights, weights_sha256, faiss_kind;
  int embed_dim = 0;
  int64_t count = 0;
  int64_t generation = 0;          // 0: nothing committed yet
  std::vector<std::string> roots;  // absolute folders and shards the images were listed from
  FileSums sha256;
};

struct IndexData {
  IndexMeta meta;
  std::vector<Item> items;
  std::vector<float> embeddings;  // [count, embed_dim]
};

bool index_exists(const std::string& dir);  // meta.json present
// Throws oc::Error (path + key + what is wrong) on a missing, damaged or inconsistent folder.
IndexMeta read_meta(const std::string& dir);
// Items (their file's SHA-256 checked; each path under the roots) and, when asked, the
// embeddings (SHA-256 checked too).
IndexData load_index(const std::string& dir, bool with_embeddings = true);
// A file of the current generation: "embeddings.safetensors", "items.jsonl", "faiss.index".
std::string data_path(const std::string& dir, const IndexMeta& m, const std::string& file);
// Throws oc::Error unless the file's SHA-256 is the one meta.json recorded.
void check_sum(const std::string& dir, const IndexMeta& m, const std::string& file);

// Writes d (items, embeddings) and `vi` as generation d.meta.generation + 1, commits it by
// renaming meta.json into place, then removes generations older than the previous one.
// The caller holds the folder's lock (build.cpp).
void commit_index(const std::string& dir, IndexData& d, const VectorIndex& vi);
// Under the lock, before writing: removes what killed writers left (temporary files of dead
// processes, generations meta.json does not name and that are not the previous one).
void clean_index_folder(const std::string& dir);

// The index must have been built with this model and these weights (same SHA-256), and
// the model's embedding size must be the index's.
void check_same_model(const IndexMeta& m, const std::string& dir, const std::string& model,
                      const std::string& weights_sha256);

}  // namespace oc::index
