#include "index/store_json.h"

#include <fmt/format.h>

#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/limits.h"

namespace oc::index {
namespace {
using nlohmann::json;
constexpr const char* kFormat = "openclip-cpp index";

// obj[key] as T; `where` names the file (and line). Absent: `fallback`, or an error when required.
template <class T>
T field(const json& obj, const char* key, const std::string& where, bool required, T fallback = T()) {
  if (!obj.contains(key)) {
    if (required) OC_USER_ERROR("{}: missing key \"{}\"", where, key);
    return fallback;
  }
  const json& v = obj[key];
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) OC_USER_ERROR("{}: \"{}\" must be a string, got {}", where, key, v.dump());
  } else {
    if (!v.is_number_integer()) OC_USER_ERROR("{}: \"{}\" must be an integer, got {}", where, key, v.dump());
    const bool fits = v.is_number_unsigned() ? v.get<uint64_t>() <= uint64_t(std::numeric_limits<T>::max())
                                             : v.get<int64_t>() >= 0 && uint64_t(v.get<int64_t>()) <=
                                                                            uint64_t(std::numeric_limits<T>::max());
    if (!fits) OC_USER_ERROR("{}: \"{}\" is out of range: {}", where, key, v.dump());
  }
  return v.get<T>();
}

bool is_hex_sha256(const std::string& s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string::npos;
}

json parse_object(const std::string& text, const std::string& where) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    OC_USER_ERROR("{}: not valid JSON: {}", where, json_error_text(e.what()));
  }
  if (!j.is_object()) OC_USER_ERROR("{}: not a JSON object", where);
  return j;
}
}  // namespace

std::string generation_name(int64_t generation) { return fmt::format("gen-{:06d}", generation); }

IndexMeta meta_from_json(const std::string& text, const std::string& p) {
  const json j = parse_object(text, p);
  if (field<std::string>(j, "format", p, false) != kFormat) OC_USER_ERROR("{}: not an openclip-cpp index meta.json", p);
  const int version = field<int>(j, "version", p, true);
  if (version != kIndexVersion)
    OC_USER_ERROR("{}: index version {} (this build reads {}; rebuild the index with this build)", p, version,
                  kIndexVersion);
  IndexMeta m;
  m.model = field<std::string>(j, "model", p, true);
  m.weights = field<std::string>(j, "weights", p, true);
  m.weights_sha256 = field<std::string>(j, "weights_sha256", p, true);
  m.faiss_kind = field<std::string>(j, "faiss", p, true);
  m.embed_dim = field<int>(j, "embed_dim", p, true);
  m.count = field<int64_t>(j, "count", p, true);
  m.generation = field<int64_t>(j, "generation", p, true);
  if (m.model.empty()) OC_USER_ERROR("{}: \"model\" is empty", p);
  if (m.embed_dim < 1 || m.embed_dim > 65536)
    OC_USER_ERROR("{}: \"embed_dim\" must be in [1, 65536], got {}", p, m.embed_dim);
  if (m.faiss_kind != "flat" && m.faiss_kind != "hnsw")
    OC_USER_ERROR("{}: \"faiss\" must be \"flat\" or \"hnsw\", got \"{}\"", p, m.faiss_kind);
  if (m.generation < 1 || m.generation > 999999)
    OC_USER_ERROR("{}: \"generation\" must be in [1, 999999], got {}", p, m.generation);
  if (!j.contains("roots") || !j["roots"].is_array()) OC_USER_ERROR("{}: \"roots\" must be a list of paths", p);
  for (auto& r : j["roots"]) {
    if (!r.is_string() || r.get<std::string>().empty() || r.get<std::string>()[0] != '/')
      OC_USER_ERROR("{}: \"roots\" must hold absolute paths, got {}", p, r.dump());
    m.roots.push_back(r.get<std::string>());
  }
  if (!j.contains("files") || !j["files"].is_object())
    OC_USER_ERROR("{}: \"files\" must be an object of SHA-256 sums", p);
  const json& f = j["files"];
  const std::string fw = p + " files";
  m.sha256 = {field<std::string>(f, "embeddings.safetensors", fw, true), field<std::string>(f, "items.jsonl", fw, true),
              field<std::string>(f, "faiss.index", fw, true)};
  for (auto* s : {&m.sha256.embeddings, &m.sha256.items, &m.sha256.faiss})
    if (!is_hex_sha256(*s)) OC_USER_ERROR("{}: \"{}\" is not a hex SHA-256", fw, *s);
  return m;
}

std::string meta_to_json(const IndexMeta& m) {
  json j = {{"format", kFormat},
            {"version", kIndexVersion},
            {"model", m.model},
            {"weights", m.weights},
            {"weights_sha256", m.weights_sha256},
            {"embed_dim", m.embed_dim},
            {"count", m.count},
            {"faiss", m.faiss_kind},
            {"generation", m.generation},
            {"roots", m.roots},
            {"files",
             {{"embeddings.safetensors", m.sha256.embeddings},
              {"items.jsonl", m.sha256.items},
              {"faiss.index", m.sha256.faiss}}}};
  return j.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

std::vector<Item> items_from_jsonl(const std::string& t, const std::string& p) {
  std::vector<Item> items;
  for (size_t pos = 0; pos < t.size();) {
    size_t nl = t.find('\n', pos);
    if (nl == std::string::npos) nl = t.size();
    const std::string where = fmt::format("{} line {} (byte {})", p, items.size() + 1, pos);
    const json j = parse_object(t.substr(pos, nl - pos), where);
    Item it;
    it.key = field<std::string>(j, "key", where, true);
    it.path = field<std::string>(j, "path", where, true);
    it.caption = field<std::string>(j, "caption", where, false);
    it.offset = field<uint64_t>(j, "offset", where, false);
    it.size = field<uint64_t>(j, "size", where, false);
    if (it.size > std::numeric_limits<uint64_t>::max() - it.offset)
      OC_USER_ERROR("{}: \"offset\" + \"size\" overflow", where);
    items.push_back(std::move(it));
    pos = nl + 1;
  }
  return items;
}

std::string items_to_jsonl(const std::vector<Item>& items) {
  std::string lines;
  for (auto& it : items) {
    json j = {{"key", it.key}, {"path", it.path}, {"caption", it.caption}};
    if (it.size) j["offset"] = it.offset, j["size"] = it.size;
    lines += j.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return lines;
}

bool has_parent_part(const std::string& path) {
  for (const auto& part : std::filesystem::path(path))
    if (part == "..") return true;
  return false;
}

namespace {
std::string normal(const std::string& p) {
  std::string n = std::filesystem::path(p).lexically_normal().string();
  while (n.size() > 1 && n.back() == '/') n.pop_back();
  return n;
}
}  // namespace

void check_item_path(const Item& it, const std::vector<std::string>& roots, const std::string& p, size_t line) {
  bool under = false;
  if (!it.path.empty() && it.path[0] == '/' && !has_parent_part(it.path)) {
    const std::string s = normal(it.path);
    for (const std::string& root : roots) {
      const std::string r = normal(root);
      under = under || s == r || (s.compare(0, r.size(), r) == 0 && (r == "/" || s[r.size()] == '/'));
    }
  }
  if (!under)
    OC_USER_ERROR("{} line {}: \"path\" {} is not under the folders and shards the index was built from", p, line,
                  it.path);
}

}  // namespace oc::index
