#include "index/store.h"

#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>

#include "core/check.h"
#include "core/fs.h"
#include "core/tensor.h"
#include "index/checksum.h"
#include "index/store_json.h"
#include "io/safetensors.h"
#include "model/config.h"
#include "model/model_source.h"

namespace oc::index {

bool index_exists(const std::string& dir) { return fs::exists(fs::join(dir, "meta.json")); }

std::string data_path(const std::string& dir, const IndexMeta& m, const std::string& file) {
  return fs::join(fs::join(dir, generation_name(m.generation)), file);
}

IndexMeta read_meta(const std::string& dir) {
  if (!fs::is_dir(dir)) OC_USER_ERROR("{}: no such index folder", dir);
  const std::string p = fs::join(dir, "meta.json");
  if (!fs::exists(p))
    OC_USER_ERROR("{}: not an index folder (no meta.json; build one with `openclip index build`)", dir);
  auto text = fs::read_text(p);
  if (!text) OC_USER_ERROR("{}", text.error());
  return meta_from_json(text.value(), p);
}

void check_sum(const std::string& dir, const IndexMeta& m, const std::string& file) {
  const std::string p = data_path(dir, m, file);
  const std::string& want = file == "items.jsonl"   ? m.sha256.items
                            : file == "faiss.index" ? m.sha256.faiss
                                                    : m.sha256.embeddings;
  const std::string got = file_sha256(p, "an index file");
  if (got != want)
    OC_USER_ERROR(
        "{}: SHA-256 {} is not the {} that meta.json records: the file was changed or damaged (rebuild the "
        "index into a new folder)",
        p, got.substr(0, 16), want.substr(0, 16));
}

namespace {
std::vector<Item> read_items(const std::string& dir, const IndexMeta& m) {
  check_sum(dir, m, "items.jsonl");
  const std::string p = data_path(dir, m, "items.jsonl");
  auto text = fs::read_text(p);
  if (!text) OC_USER_ERROR("{}", text.error());
  std::vector<Item> items = items_from_jsonl(text.value(), p);
  if (int64_t(items.size()) != m.count)
    OC_USER_ERROR("{}: {} items but meta.json says {} (the folder was changed or damaged; rebuild the index)", p,
                  items.size(), m.count);
  std::unordered_map<std::string_view, size_t> lines;  // a key names one item: a second is refused
  for (size_t i = 0; i < items.size(); ++i) {
    check_item_path(items[i], m.roots, p, i + 1);
    if (auto [at, fresh] = lines.emplace(items[i].key, i + 1); !fresh)
      OC_USER_ERROR("{} line {}: key {} is already the key of line {} (the file was changed; rebuild the index)", p,
                    i + 1, items[i].key, at->second);
  }
  return items;
}

std::vector<float> read_embeddings(const std::string& dir, const IndexMeta& m) {
  check_sum(dir, m, "embeddings.safetensors");
  const std::string p = data_path(dir, m, "embeddings.safetensors");
  auto st = io::read_safetensors(p);
  if (!st) OC_USER_ERROR("{}: {}", p, st.error());
  for (auto& [name, t] : st.value().tensors) {
    if (name != "embeddings") continue;
    if (t.dtype != DType::F32 || t.shape.size() != 2 || t.shape[0] != m.count || t.shape[1] != m.embed_dim)
      OC_USER_ERROR("{}: embeddings are not F32 [{}, {}] as meta.json says", p, m.count, m.embed_dim);
    return std::vector<float>(t.f32(), t.f32() + t.numel());
  }
  OC_USER_ERROR("{}: no tensor named embeddings", p);
}
}  // namespace

IndexData load_index(const std::string& dir, bool with_embeddings) {
  IndexData d;
  d.meta = read_meta(dir);
  d.items = read_items(dir, d.meta);
  if (with_embeddings) d.embeddings = read_embeddings(dir, d.meta);
  return d;
}

void check_same_model(const IndexMeta& m, const std::string& dir, const std::string& model,
                      const std::string& weights_sha256) {
  if (m.model != model)
    OC_USER_ERROR("{}: the index was built with model {} (not {}); use the same model or another --out", dir, m.model,
                  model);
  if (m.weights_sha256 != weights_sha256)
    OC_USER_ERROR("{}: the index was built with other weights ({}, sha256 {}); these have sha256 {}", dir, m.weights,
                  m.weights_sha256.substr(0, 16), weights_sha256.substr(0, 16));
  // A whole model (hub folder, local-dir:, hf-hub:) carries its config: resolved as the commands resolve it.
  const int E =
      model_carries_weights(model) ? resolve_model_source(model, "").cfg.embed_dim : load_model_config(model).embed_dim;
  if (E != m.embed_dim)
    OC_USER_ERROR(
        "{}: the index holds {}-float embeddings but model {} gives {} (its config changed since the build?); "
        "rebuild the index",
        dir, m.embed_dim, model, E);
}

}  // namespace oc::index
