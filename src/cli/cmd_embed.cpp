// openclip embed: image or text embeddings to .npy or .safetensors.
#include <openclip/openclip.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>

#include "cli/args.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "core/fs.h"
#include "core/progress.h"
#include "data/stats.h"
#include "data/urls.h"
#include "index/sources.h"
#include "io/npy.h"
#include "io/safetensors.h"
#include "model/model_source.h"

namespace oc::cli {
namespace {

// A file or a brace list ({a,b}, {000..999}): in the order given, as the rows follow it. A
// folder (recursively) or a glob: the files `index build` would embed, sorted (index/sources.h
// says the rules once); shards are for index build only.
std::vector<std::string> image_list(const std::string& spec) {
  std::vector<std::string> out;
  if (!fs::is_dir(spec) && spec.find_first_of("*?[") == std::string::npos) {
    auto expanded = data::expand_braces(spec);
    if (!expanded) OC_USER_ERROR("{}: {}", spec, expanded.error());
    for (auto& p : expanded.value()) {
      if (!fs::exists(p)) OC_USER_ERROR("{}: no such file", p);
      out.push_back(p);
    }
    return out;
  }
  data::DataStats stats;
  for (auto& it : index::list_sources(spec, &stats).items) {
    if (it.path.size() > 4 && it.path.compare(it.path.size() - 4, 4, ".tar") == 0)
      OC_USER_ERROR("{}: embed reads image files (.jpg .jpeg .png .webp); shards (.tar) are for index build", spec);
    out.push_back(it.path);
  }
  return out;
}

// In chunks of whole batches (the library encodes in batches of batch_size, so the rows are
// the ones one call over all inputs gives), with progress on stderr between chunks.
std::vector<std::vector<float>> embed_all(openclip::Model& model, const std::vector<std::string>& inputs, bool images,
                                          bool normalize, int batch_size) {
  const size_t chunk = size_t(std::max(1, batch_size)) * 8;
  Progress bar("embed", int64_t(inputs.size()), images ? "images" : "texts");
  std::vector<std::vector<float>> e;
  for (size_t i0 = 0; i0 < inputs.size(); i0 += chunk) {
    const std::vector<std::string> part(inputs.begin() + long(i0),
                                        inputs.begin() + long(std::min(inputs.size(), i0 + chunk)));
    auto rows = images ? model.encode_image_files(part, normalize) : model.encode_texts(part, normalize);
    std::move(rows.begin(), rows.end(), std::back_inserter(e));
    bar.update(int64_t(e.size()));
  }
  return e;
}

int run(const std::vector<std::string>& args) {
  EmbedArgs a;
  if (!parse_flags("embed", args, &a)) return 0;
  if (a.pretrained.empty() && !model_carries_weights(a.model))
    OC_USER_ERROR("embed needs --pretrained WEIGHTS|TAG|hf-hub:ORG/NAME, or --model a hub folder or hf-hub:ORG/NAME");
  if (a.images.empty() == a.texts.empty()) OC_USER_ERROR("embed needs exactly one of --images or --texts");
  const std::string& out = a.out;
  const bool st = out.size() > 12 && out.substr(out.size() - 12) == ".safetensors";
  if (!st && !(out.size() > 4 && out.substr(out.size() - 4) == ".npy"))
    OC_USER_ERROR("--out must end in .npy or .safetensors");
  openclip::LoadOptions lo = a;
  lo.tokenizer = a.images.empty();  // images alone need no text tokenizer (a SigLIP model's file may be absent)
  auto model = openclip::Model::load(a.model, a.pretrained, lo);
  std::vector<std::string> names;
  if (!a.images.empty()) {
    names = image_list(a.images);
  } else {
    std::ifstream f(a.texts);
    if (!f) OC_USER_ERROR("cannot open {}", a.texts);
    for (std::string line; std::getline(f, line);) names.push_back(line);
    if (names.empty()) OC_USER_ERROR("{}: no texts", a.texts);
  }
  const auto e = embed_all(model, names, !a.images.empty(), !a.no_normalize, a.batch_size);
  const int64_t N = int64_t(e.size()), E = model.embed_dim();
  std::vector<float> flat;
  for (auto& v : e) flat.insert(flat.end(), v.begin(), v.end());
  TensorView view{DType::F32, {N, E}, flat.data()};
  if (st) {
    std::vector<std::pair<std::string, TensorView>> t = {{"embeddings", view}};
    io::write_safetensors(out, t, {{"kind", a.images.empty() ? "text" : "image"}, {"model", a.model}});
  } else {
    io::write_npy(out, view);
  }
  std::fprintf(stderr, "embed: %lld x %lld embeddings -> %s\n", (long long)N, (long long)E, out.c_str());
  return 0;
}

OC_REGISTER_COMMAND("embed", "image or text embeddings to .npy / .safetensors", run);

}  // namespace
}  // namespace oc::cli
