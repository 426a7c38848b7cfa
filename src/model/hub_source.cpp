#include "model/hub_source.h"

#include <cstdlib>

#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "hub/cache.h"

namespace oc {

namespace {
std::string join_names(const std::vector<std::string>& v, const char* sep = ", ") {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : sep) + x;
  return s;
}

// 3.x's _get_safe_alternatives, then the name itself.
std::vector<std::string> weight_names(const std::string& filename) {
  const std::string f = filename.empty() ? "open_clip_pytorch_model.bin" : filename;
  std::vector<std::string> out;
  if (f == "open_clip_pytorch_model.bin")
    out.push_back("open_clip_model.safetensors");
  else if (f.ends_with(".bin") || f.ends_with(".pth"))
    out.push_back(f.substr(0, f.size() - 4) + ".safetensors");
  out.push_back(f);
  return out;
}

// The tag's hub_hub field "org/name/" or "org/name/file" -> repository and file name.
HubRepoRef split_tag_hub(const std::string& hf_hub, std::string* file) {
  const size_t slash = hf_hub.rfind('/');
  *file = hf_hub.substr(slash + 1);
  return {hf_hub.substr(0, slash), "main"};
}

std::string url_dir(const std::string& cache_dir) {
  if (!cache_dir.empty()) return cache_dir;
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/clip";
}

// OpenCLIP's download_pretrained_from_url checksum: the folder name for openaipublic URLs, the
// file name's last "-<hex>" part for mlfoundations ones.
std::string url_sha256(const std::string& url) {
  const std::string base = url.substr(url.rfind('/') + 1);
  if (url.find("openaipublic") != std::string::npos) {
    const std::string dir = url.substr(0, url.rfind('/'));
    return dir.substr(dir.rfind('/') + 1);
  }
  if (url.find("mlfoundations") != std::string::npos) {
    const std::string stem = base.substr(0, base.rfind('.'));
    return stem.substr(stem.rfind('-') + 1);
  }
  return "";
}

// Any cached copy of the tag's weights (no request).
std::string tag_cached(const PretrainedTag& t, const hub::HubOptions& o, const std::string& cache_dir,
                       std::vector<std::string>* looked) {
  for (const char* hub : {t.hf_hub, t.hf_hub_224}) {
    if (!*hub) continue;
    std::string file;
    const HubRepoRef r = split_tag_hub(hub, &file);
    for (const auto& name : weight_names(file)) {
      looked->push_back(o.cache + " (" + r.repo + "/" + name + ")");
      if (auto p = hub::cached_file(r.repo, name, r.revision, o); !p.empty()) return p;
    }
  }
  if (*t.url) {
    const std::string p = fs::join(url_dir(cache_dir), std::string(t.url).substr(std::string(t.url).rfind('/') + 1));
    looked->push_back(p);
    if (fs::exists(p)) return p;
  }
  return "";
}
}  // namespace

HubRepoRef parse_hub_ref(const std::string& s, const std::string& flag) {
  HubRepoRef r;
  const size_t at = s.find('@');
  r.repo = s.substr(0, at);
  if (at != std::string::npos) r.revision = s.substr(at + 1);
  try {
    hub::check_repo_id(r.repo);
    hub::check_revision(r.revision);
  } catch (const oc::Error& e) {
    OC_USER_ERROR("{} hf-hub:{}: {}", flag, s, e.what());
  }
  return r;
}

std::string hub_weights(const HubRepoRef& r, const std::string& filename, const hub::HubOptions& o) {
  const std::vector<std::string> names = weight_names(filename);
  for (const auto& name : names)  // a cached copy of any of them first (one Python filled: 2.24 took the .bin)
    if (auto p = hub::cached_file(r.repo, name, r.revision, o); !p.empty()) return p;
  std::vector<std::string> tried;
  for (const auto& name : names) {
    try {
      return hub::hf_hub_download(r.repo, name, r.revision, o);
    } catch (const oc::Error& e) {  // as 3.x: any failure of the safetensors name tries the next
      tried.push_back(e.what());
    }
  }
  OC_USER_ERROR("hf-hub:{}: no weights: {}", r.repo, join_names(tried, "; "));
}

std::string hub_config_file(const HubRepoRef& r, const hub::HubOptions& o) {
  try {
    return hub::hf_hub_download(r.repo, "open_clip_config.json", r.revision, o);
  } catch (const hub::NotFound& e) {
    OC_USER_ERROR("hf-hub:{}: not an OpenCLIP repository ({})", r.repo, e.what());
  }
}

// A tokenizer.json's tokenizer_config.json, fetched beside it when the repository has one: it
// sets the special tokens of a Gemma tokenizer (SigLIP2; text/sentencepiece.h).
std::string with_tokenizer_config(const HubRepoRef& r, const std::string& path, const hub::HubOptions& o) {
  if (path.empty() || fs::basename(path) != "tokenizer.json") return path;
  if (hub::cached_file(r.repo, "tokenizer_config.json", r.revision, o).empty()) {
    try {
      (void)hub::hf_hub_download(r.repo, "tokenizer_config.json", r.revision, o);
    } catch (const oc::Error&) {  // none: the file's own post-processor applies
    }
  }
  return path;
}

std::string hub_repo_tokenizer(const HubRepoRef& r, bool sentencepiece, const hub::HubOptions& o) {
  const std::vector<std::string> names = sentencepiece ? std::vector<std::string>{"tokenizer.json", "spiece.model"}
                                                       : std::vector<std::string>{"vocab.txt"};
  for (const auto& f : names)
    if (auto p = hub::cached_file(r.repo, f, r.revision, o); !p.empty()) return with_tokenizer_config(r, p, o);
  for (const auto& f : names) {
    try {
      return with_tokenizer_config(r, hub::hf_hub_download(r.repo, f, r.revision, o), o);
    } catch (const oc::Error&) {  // not in the repository, or unreachable: the usual search follows
    }
  }
  return "";
}

std::string tag_weights(const PretrainedTag& t, const std::string& model, const std::string& cache_dir) {
  const hub::HubOptions o = hub::hub_options_from_env(cache_dir);
  std::vector<std::string> looked, failed;
  if (auto p = tag_cached(t, o, cache_dir, &looked); !p.empty()) {
    if (p.find("/.cache/clip/") == std::string::npos || url_sha256(t.url).empty()) return p;
    return hub::download_url(t.url, url_dir(cache_dir), url_sha256(t.url), o);  // checks the SHA-256 as OpenCLIP
  }
  if (o.offline)
    OC_USER_ERROR("--pretrained {} (model {}): not in a cache, and HF_HUB_OFFLINE is set; looked in {}", t.tag, model,
                  join_names(looked));
  if (*t.hf_hub) {
    std::string file;
    try {
      return hub_weights(split_tag_hub(t.hf_hub, &file), file, o);
    } catch (const oc::Error& e) {
      failed.push_back(e.what());
      if (*t.url) log::warn("{}; trying {}", e.what(), t.url);
    }
  }
  if (*t.url) {
    try {
      return hub::download_url(t.url, url_dir(cache_dir), url_sha256(t.url), o);
    } catch (const oc::Error& e) {
      failed.push_back(e.what());
    }
  }
  OC_USER_ERROR("--pretrained {} (model {}): the weights could not be downloaded ({}); looked in {}", t.tag, model,
                join_names(failed, "; "), join_names(looked));
}

std::string hub_tokenizer_file(const std::string& name, bool sentencepiece) {
  try {
    return hub_repo_tokenizer(parse_hub_ref(name, "hf_tokenizer_name"), sentencepiece, hub::hub_options_from_env());
  } catch (const oc::Error&) {  // not a repository id
    return "";
  }
}

}  // namespace oc
