#include "model/model_source.h"

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/json_read.h"
#include "core/log.h"
#include "model/hub_source.h"
#include "model/pretrained_tags.h"
#include "model/weights_openai.h"
#include "text/text_tokenizer.h"

namespace oc {

namespace {
namespace sfs = std::filesystem;

std::string join_names(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// preprocess_cfg's mean/std: a number or a list of 1 or 3, each inside the bounds of
// model_source.h (kMinStd, kMaxStd, kMaxMean).

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

// open_clip_config.json {model_cfg, preprocess_cfg}; `name` is the model's name.
ModelSource from_hub_config(const std::string& file, const std::string& name) {
  auto text = fs::read_text(file);
  if (!text) OC_USER_ERROR("{}", text.error());
  nlohmann::json j = parse_json(*text, file);
  if (!j.is_object()) OC_USER_ERROR("{}: not a JSON object", file);
  if (!j.contains("model_cfg") || !j["model_cfg"].is_object())
    OC_USER_ERROR("{}: no 'model_cfg' object (OpenCLIP reads the model config from config['model_cfg'])", file);
  ModelSource s;
  s.cfg = parse_model_config(j["model_cfg"].dump(), name, file + " model_cfg");
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
  s.tokenizer_dir = fs::dirname(file);
  return s;
}

// A folder in the hub layout (local-dir:PATH or a folder): open_clip_config.json, the weights
// (3.x's safetensors first), and the tokenizer files next to them.
ModelSource from_hub_folder(const std::string& dir, const std::string& flag) {
  const std::string file = fs::join(dir, "open_clip_config.json");
  if (!fs::exists(file))
    OC_USER_ERROR(
        "{} {}: a folder, but {} is missing (the Hugging Face hub layout OpenCLIP reads has "
        "open_clip_config.json with model_cfg and preprocess_cfg)",
        flag, dir, file);
  ModelSource s = from_hub_config(file, sfs::path(dir).filename().string());
  for (const char* w : {"open_clip_model.safetensors", "open_clip_pytorch_model.bin"})
    if (fs::exists(fs::join(dir, w))) {
      s.weights = fs::join(dir, w);
      break;
    }
  if (s.weights.empty())
    OC_USER_ERROR("{} {}: no weights in the folder (open_clip_model.safetensors or open_clip_pytorch_model.bin)", flag,
                  dir);
  return s;
}

// hf-hub:ORG/NAME[@REV]: the repository's config, weights and tokenizer file, downloaded into
// (or read from) the Hugging Face cache.
ModelSource from_hub_repo(const std::string& spec, const std::string& flag, const std::string& cache_dir) {
  const HubRepoRef r = parse_hub_ref(spec, flag);
  const hub::HubOptions o = hub::hub_options_from_env(cache_dir);
  ModelSource s = from_hub_config(hub_config_file(r, o), "hf-hub:" + r.repo);
  s.weights = hub_weights(r, "", o);
  const TextTokenizerSpec t = text_tokenizer_spec_from_config(model_config_json(s.cfg), s.cfg.name);
  if (!t.hf_tokenizer_name.empty()) {
    const std::string tok = hub_repo_tokenizer(r, is_sentencepiece_tokenizer_name(t.hf_tokenizer_name), o);
    if (!tok.empty()) s.tokenizer_dir = fs::dirname(tok);
  }
  return s;
}

constexpr std::string_view kHfHub = "hf-hub:", kLocalDir = "local-dir:";

// A source that is a whole model (config + weights + tokenizer): hf-hub:, local-dir:, a folder.
bool whole_model(const std::string& s) {
  std::error_code ec;
  return s.starts_with(kHfHub) || s.starts_with(kLocalDir) || sfs::is_directory(s, ec);
}

ModelSource from_whole_model(const std::string& s, const std::string& flag, const std::string& cache_dir) {
  if (s.starts_with(kHfHub)) return from_hub_repo(s.substr(kHfHub.size()), flag, cache_dir);
  if (s.starts_with(kLocalDir)) return from_hub_folder(s.substr(kLocalDir.size()), flag);
  return from_hub_folder(s, flag);
}

}  // namespace

bool model_carries_weights(const std::string& model) { return whole_model(model); }

std::string effective_model(const std::string& model, const std::string& pretrained) {
  return whole_model(pretrained) ? pretrained : model;
}

ModelSource resolve_model_source(const std::string& model, const std::string& pretrained,
                                 const std::string& cache_dir) {
  std::error_code ec;
  if (whole_model(pretrained)) {
    ModelSource s = from_whole_model(pretrained, "--pretrained", cache_dir);  // the repository's own config
    if (!model.empty() && model != "ViT-B-32" && model != s.cfg.name)         // not for --model's default
      log::info("--pretrained {} brings its own model config; --model {} is not used", pretrained, model);
    return s;
  }
  ModelSource s;
  if (whole_model(model))
    s = from_whole_model(model, "--model", cache_dir);
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
    OC_USER_ERROR(
        "--pretrained {}: not a file, hf-hub:ORG/NAME, local-dir:PATH or a pretrained tag of {} in "
        "OpenCLIP 2.24 or 3.3 ({})",
        pretrained, name, tags.empty() ? std::string("that model has none") : "known: " + join_names(tags));
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
