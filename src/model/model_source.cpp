#include "model/model_source.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "model/pretrained_tags.h"
#include "model/weights_openai.h"

namespace oc {

namespace {
namespace sfs = std::filesystem;

std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// preprocess_cfg's mean/std: a number or a list of 1 or 3, each such that (pixel - mean) / std
// of a pixel in [0, 1] is a finite, moderate float. Published values: mean 0.40-0.5, std
// 0.26-0.5. A std under kMinStd (1e-3, 260x below the smallest published one) or a mean
// outside +-kMaxMean (1000) is no normalization of [0, 1] pixels; both bounds keep normalized
// pixels under 10^6, far from float overflow in the patch embedding's sums (std 0, 1e-45 or
// mean 3e38 made every embedding NaN).
constexpr double kMinStd = 1e-3, kMaxStd = 1e3, kMaxMean = 1e3;

std::vector<float> read_triple(const nlohmann::json& j, const std::string& file, const char* key) {
  std::vector<double> v;
  if (j.is_number())
    v.push_back(j.get<double>());
  else if (j.is_array())
    for (const auto& x : j) {
      if (!x.is_number()) OC_USER_ERROR("{}: preprocess_cfg.{} holds a non-number", file, key);
      v.push_back(x.get<double>());
    }
  if (v.size() != 1 && v.size() != 3)
    OC_USER_ERROR("{}: preprocess_cfg.{} wants a number or 3 numbers, got {}", file, key, j.dump().substr(0, 100));
  const bool is_std = std::string_view(key) == "std";
  for (size_t i = 0; i < v.size(); i++) {
    const bool ok = is_std ? v[i] >= kMinStd && v[i] <= kMaxStd : std::abs(v[i]) <= kMaxMean;
    if (!ok)
      OC_USER_ERROR("{}: preprocess_cfg.{}[{}] is {}; it must be {} (pixels are in [0, 1])", file, key, i, v[i],
                    is_std ? fmt::format("from {} to {}", kMinStd, kMaxStd) : fmt::format("within +-{}", kMaxMean));
  }
  return {v.begin(), v.end()};
}

std::string read_choice(const nlohmann::json& j, const std::string& file, const char* key,
                        std::initializer_list<const char*> allowed) {
  if (!j.is_string()) OC_USER_ERROR("{}: preprocess_cfg.{} is not a string", file, key);
  const std::string v = j.get<std::string>();
  for (const char* a : allowed)
    if (v == a) return v;
  OC_USER_ERROR("{}: preprocess_cfg.{} is '{}' (known: {})", file, key, v, join_names({allowed.begin(), allowed.end()}));
}

// A folder in the hub layout: open_clip_config.json {model_cfg, preprocess_cfg} and the weights.
ModelSource from_hub_folder(const std::string& dir) {
  const std::string file = fs::join(dir, "open_clip_config.json");
  if (!fs::exists(file))
    OC_USER_ERROR("--model {}: a folder, but {} is missing (the Hugging Face hub layout OpenCLIP reads has "
                  "open_clip_config.json with model_cfg and preprocess_cfg)", dir, file);
  auto text = fs::read_text(file);
  if (!text) OC_USER_ERROR("{}", text.error());
  nlohmann::json j = parse_json(*text, file);
  if (!j.is_object()) OC_USER_ERROR("{}: not a JSON object", file);
  if (!j.contains("model_cfg") || !j["model_cfg"].is_object())
    OC_USER_ERROR("{}: no 'model_cfg' object (OpenCLIP reads the model config from config['model_cfg'])", file);
  ModelSource s;
  s.cfg = parse_model_config(j["model_cfg"].dump(), sfs::path(dir).filename().string(), file + " model_cfg");
  if (j.contains("preprocess_cfg")) {
    const auto& p = j["preprocess_cfg"];
    if (!p.is_object()) OC_USER_ERROR("{}: 'preprocess_cfg' is not an object", file);
    if (p.contains("mean") && !p["mean"].is_null()) s.preprocess.mean = read_triple(p["mean"], file, "mean");
    if (p.contains("std") && !p["std"].is_null()) s.preprocess.std = read_triple(p["std"], file, "std");
    if (p.contains("interpolation") && !p["interpolation"].is_null())
      s.preprocess.interpolation = read_choice(p["interpolation"], file, "interpolation", {"bicubic", "bilinear"});
    if (p.contains("resize_mode") && !p["resize_mode"].is_null())
      s.preprocess.resize_mode = read_choice(p["resize_mode"], file, "resize_mode", {"shortest", "longest", "squash"});
    s.preprocess.source = file;
  }
  for (const char* w : {"open_clip_pytorch_model.bin", "open_clip_model.safetensors"})
    if (fs::exists(fs::join(dir, w))) {
      s.weights = fs::join(dir, w);
      break;
    }
  if (s.weights.empty())
    OC_USER_ERROR("--model {}: no weights in the folder (open_clip_pytorch_model.bin or open_clip_model.safetensors)",
                  dir);
  return s;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::string(v) : fallback;
}

// Where OpenCLIP's download_pretrained would have put the tag's file.
std::vector<std::string> tag_weight_candidates(const PretrainedTag& t, const std::string& cache_dir) {
  std::vector<std::string> out;
  const std::string home = env_or("HOME", ".");
  const std::string url = t.url;
  if (!url.empty()) {  // download_pretrained_from_url: cache_dir or ~/.cache/clip, the URL's basename
    out.push_back(fs::join(cache_dir.empty() ? home + "/.cache/clip" : cache_dir, url.substr(url.rfind('/') + 1)));
    return out;
  }
  // hf_hub 'org/name/' (default file open_clip_pytorch_model.bin) or 'org/name/file'.
  const std::string hub = t.hf_hub;
  const size_t slash = hub.rfind('/');
  const std::string repo = hub.substr(0, slash), filename = hub.substr(slash + 1);
  const std::string fname = filename.empty() ? "open_clip_pytorch_model.bin" : filename;
  std::string cache = cache_dir;
  if (cache.empty()) cache = env_or("HF_HUB_CACHE", env_or("HF_HOME", home + "/.cache/huggingface") + "/hub");
  std::string folder = "models--" + repo;
  for (size_t p = folder.find('/'); p != std::string::npos; p = folder.find('/')) folder.replace(p, 1, "--");
  const std::string snapshots = fs::join(fs::join(cache, folder), "snapshots");
  std::error_code ec;
  if (sfs::is_directory(snapshots, ec))
    for (const auto& e : sfs::directory_iterator(snapshots, ec)) out.push_back(fs::join(e.path().string(), fname));
  if (out.empty()) out.push_back(fs::join(snapshots, "<revision>/" + fname));
  return out;
}

std::string tag_weights(const PretrainedTag& t, const std::string& model, const std::string& cache_dir) {
  const auto cands = tag_weight_candidates(t, cache_dir);
  for (const auto& c : cands)
    if (fs::exists(c)) return c;
  OC_USER_ERROR("--pretrained {} (model {}): the weights are not on disk and openclip-cpp downloads nothing; looked "
                "for {}; fetch them ({}) or give the file to --pretrained",
                t.tag, model, join_names(cands), *t.url ? std::string(t.url) : "hf-hub:" + std::string(t.hf_hub));
}
}  // namespace

ModelSource resolve_model_source(const std::string& model, const std::string& pretrained,
                                 const std::string& cache_dir) {
  std::error_code ec;
  ModelSource s;
  if (sfs::is_directory(model, ec)) s = from_hub_folder(model);
  else s.cfg = load_model_config(model);
  if (pretrained.empty()) return s;
  s.weights.clear();
  if (fs::exists(pretrained) && !sfs::is_directory(pretrained, ec)) {
    s.weights = pretrained;
    apply_openai_archive(s);
    return s;
  }
  const std::string name = s.cfg.name.empty() ? model : s.cfg.name;
  const PretrainedTag* t = find_pretrained_tag(name, pretrained);
  if (!t) {
    const auto tags = pretrained_tags_of(name);
    OC_USER_ERROR("--pretrained {}: not a file, and not a pretrained tag of {} in OpenCLIP 2.24 ({})", pretrained, name,
                  tags.empty() ? std::string("that model has none") : "known: " + join_names(tags));
  }
  s.weights = tag_weights(*t, name, cache_dir);
  apply_openai_archive(s);  // the `openai` tags' files (~/.cache/clip/*.pt)
  s.preprocess.mean.assign(t->mean.begin(), t->mean.end());
  s.preprocess.std.assign(t->std.begin(), t->std.end());
  s.preprocess.interpolation = t->interpolation;
  s.preprocess.resize_mode = t->resize_mode;
  s.preprocess.source = "pretrained tag " + name + "/" + t->tag;
  return s;
}

}  // namespace oc
