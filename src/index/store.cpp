#include "index/store.h"

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/tensor.h"
#include "io/safetensors.h"

namespace oc::index {
namespace {
constexpr const char* kFormat = "openclip-cpp index";
constexpr int kVersion = 1;
}  // namespace

std::string faiss_path(const std::string& dir) { return fs::join(dir, "faiss.index"); }
bool index_exists(const std::string& dir) { return fs::exists(fs::join(dir, "meta.json")); }

IndexMeta read_meta(const std::string& dir) {
  if (!fs::is_dir(dir)) OC_USER_ERROR("{}: no such index folder", dir);
  const std::string p = fs::join(dir, "meta.json");
  auto text = fs::read_text(p);
  if (!text) OC_USER_ERROR("{}: not an index folder (no meta.json; build one with `openclip index build`)", dir);
  nlohmann::json j = nlohmann::json::parse(text.value(), nullptr, false);
  if (j.is_discarded() || !j.is_object() || j.value("format", "") != kFormat)
    OC_USER_ERROR("{}: not an openclip-cpp index meta.json", p);
  if (j.value("version", 0) != kVersion) OC_USER_ERROR("{}: index version {} (this build reads {})", p, j.value("version", 0), kVersion);
  IndexMeta m;
  m.model = j.value("model", "");
  m.weights = j.value("weights", "");
  m.weights_sha256 = j.value("weights_sha256", "");
  m.faiss_kind = j.value("faiss", "");
  m.embed_dim = j.value("embed_dim", 0);
  m.count = j.value("count", int64_t(0));
  if (m.embed_dim <= 0 || m.count < 0 || m.model.empty()) OC_USER_ERROR("{}: bad embed_dim, count or model", p);
  return m;
}

static std::vector<Item> read_items(const std::string& dir, int64_t count) {
  const std::string p = fs::join(dir, "items.jsonl");
  auto text = fs::read_text(p);
  if (!text) OC_USER_ERROR("{}: {}", p, text.error());
  std::vector<Item> items;
  size_t pos = 0;
  const std::string& t = text.value();
  while (pos < t.size()) {
    size_t nl = t.find('\n', pos);
    if (nl == std::string::npos) nl = t.size();
    auto j = nlohmann::json::parse(t.substr(pos, nl - pos), nullptr, false);
    if (j.is_discarded() || !j.is_object())
      OC_USER_ERROR("{}: line {} (byte {}) is not a JSON object", p, items.size() + 1, pos);
    Item it;
    it.key = j.value("key", "");
    it.path = j.value("path", "");
    it.caption = j.value("caption", "");
    it.offset = j.value("offset", uint64_t(0));
    it.size = j.value("size", uint64_t(0));
    items.push_back(std::move(it));
    pos = nl + 1;
  }
  if (int64_t(items.size()) != count)
    OC_USER_ERROR("{}: {} items but meta.json says {} (an interrupted build? rebuild the index)", p, items.size(), count);
  return items;
}

IndexData load_index(const std::string& dir, bool with_embeddings) {
  IndexData d;
  d.meta = read_meta(dir);
  d.items = read_items(dir, d.meta.count);
  if (!with_embeddings) return d;
  const std::string p = fs::join(dir, "embeddings.safetensors");
  auto st = io::read_safetensors(p);
  if (!st) OC_USER_ERROR("{}: {}", p, st.error());
  for (auto& [name, t] : st.value().tensors) {
    if (name != "embeddings") continue;
    if (t.dtype != DType::F32 || t.shape.size() != 2 || t.shape[0] != d.meta.count || t.shape[1] != d.meta.embed_dim)
      OC_USER_ERROR("{}: embeddings are not F32 [{}, {}] as meta.json says", p, d.meta.count, d.meta.embed_dim);
    d.embeddings.assign(t.f32(), t.f32() + t.numel());
    return d;
  }
  OC_USER_ERROR("{}: no tensor named embeddings", p);
}

void save_index_files(const std::string& dir, const IndexData& d) {
  fs::make_dirs(dir);
  const int64_t N = int64_t(d.items.size()), E = d.meta.embed_dim;
  OC_CHECK(int64_t(d.embeddings.size()) == N * E, "{} floats for {} x {}", d.embeddings.size(), N, E);
  TensorView v{DType::F32, {N, E}, d.embeddings.data()};
  std::vector<std::pair<std::string, TensorView>> t = {{"embeddings", v}};
  io::write_safetensors(fs::join(dir, "embeddings.safetensors"), t, {{"model", d.meta.model}});
  std::string lines;
  for (auto& it : d.items) {
    nlohmann::json j = {{"key", it.key}, {"path", it.path}, {"caption", it.caption}};
    if (it.size) j["offset"] = it.offset, j["size"] = it.size;
    lines += j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  }
  fs::write_atomic(fs::join(dir, "items.jsonl"), lines);
  nlohmann::json m = {{"format", kFormat}, {"version", kVersion}, {"model", d.meta.model},
                      {"weights", d.meta.weights}, {"weights_sha256", d.meta.weights_sha256},
                      {"embed_dim", d.meta.embed_dim}, {"count", N}, {"faiss", d.meta.faiss_kind}};
  fs::write_atomic(fs::join(dir, "meta.json"), m.dump(2) + "\n");
}

void check_same_model(const IndexMeta& m, const std::string& dir, const std::string& model,
                      const std::string& weights_sha256) {
  if (m.model != model)
    OC_USER_ERROR("{}: the index was built with model {} (not {}); use the same model or another --out", dir, m.model, model);
  if (m.weights_sha256 != weights_sha256)
    OC_USER_ERROR("{}: the index was built with other weights ({}, sha256 {}); these have sha256 {}", dir, m.weights,
                  m.weights_sha256.substr(0, 16), weights_sha256.substr(0, 16));
}

}  // namespace oc::index
