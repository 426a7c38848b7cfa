// The network side of resolve_model_source (model/model_source.h): files of a Hugging Face
// hub repository (hf-hub:ORG/NAME[@REVISION]) and a pretrained tag's weights, from the
// huggingface_hub cache or downloaded into it (hub/hub.h), as OpenCLIP 3.x looks for them.
#pragma once
#include <string>
#include <vector>

#include "hub/hub.h"
#include "model/pretrained_tags.h"

namespace oc {

struct HubRepoRef {
  std::string repo, revision = "main";
};
// "org/name[@rev]" (the part after hf-hub:); throws oc::Error naming `flag` for a bad id.
HubRepoRef parse_hub_ref(const std::string& s, const std::string& flag);

// The repository's weights as OpenCLIP 3.x's download_pretrained_from_hf: `filename` ("" =
// open_clip_pytorch_model.bin), its .safetensors alternative tried first. Throws oc::Error
// naming every name tried when none is there.
std::string hub_weights(const HubRepoRef& r, const std::string& filename, const hub::HubOptions& o);

// The repository's open_clip_config.json (cached or downloaded); its folder is the snapshot.
std::string hub_config_file(const HubRepoRef& r, const hub::HubOptions& o);
// The repository's tokenizer file for its text tower (SentencePiece: tokenizer.json, then
// spiece.model; WordPiece: vocab.txt), cached or downloaded; "" when it has none.
std::string hub_repo_tokenizer(const HubRepoRef& r, bool sentencepiece, const hub::HubOptions& o);

// A tag's weights: a copy already in a cache (3.3's hub repository, 2.24's, the URL's file in
// cache_dir or ~/.cache/clip), else downloaded as OpenCLIP 3.3 does (the hub repository first,
// then the URL, whose SHA-256 is checked as OpenCLIP checks it).
std::string tag_weights(const PretrainedTag& t, const std::string& model, const std::string& cache_dir);

// The tokenizer file of a Hugging Face tokenizer name (text_cfg.hf_tokenizer_name: a hub
// repository, as OpenCLIP's HFTokenizer loads it), cached or downloaded; "" when the repository
// cannot be reached or lacks it.
std::string hub_tokenizer_file(const std::string& hf_tokenizer_name, bool sentencepiece);

}  // namespace oc
