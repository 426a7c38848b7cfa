// openclip index build | search: an image index (embeddings + faiss) built from a folder,
// a pattern or shards, and searched by text or by an example image (docs/SERVE.md).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "image/codec.h"
#include "index/build.h"
#include "index/checksum.h"
#include "index/searcher.h"
#include "model/inference.h"

namespace oc::cli {
namespace {

const char* kUsage =
    "usage: openclip index <build|search> [options]   (openclip index <tool> --help)\n\n"
    "  build   embed images (folder, pattern or shards) into an index folder; appends when it exists\n"
    "  search  the nearest images of an index to a text (or an image)\n";

int build(const std::vector<std::string>& args) {
  IndexBuildArgs b;
  if (!parse_flags("index build", args, &b)) return 0;
  if ((b.weights.empty() && !model_carries_weights(b.model)) != b.random_init)
    OC_USER_ERROR(
        "index build needs --pretrained WEIGHTS|TAG|hf-hub:ORG/NAME or --model a hub folder or "
        "hf-hub:ORG/NAME (or --random-init, without them)");
  if (b.batch < 1) OC_USER_ERROR("--batch-size must be at least 1");
  auto r = index::build_index(b);
  const double ips = r.embed_seconds > 0 ? r.added / r.embed_seconds : 0;
  if (b.json) {
    nlohmann::json j = {{"index", b.out}, {"added", r.added}, {"already_indexed", r.already}, {"failed", r.failed},
                        {"total", r.total}, {"faiss", r.faiss_kind}, {"embed_seconds", r.embed_seconds},
                        {"images_per_second", ips}};
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("index %s: %lld added, %lld already indexed, %lld unreadable; %lld in all (faiss %s); %.1f images/s\n",
                b.out.c_str(), (long long)r.added, (long long)r.already, (long long)r.failed, (long long)r.total,
                r.faiss_kind.c_str(), ips);
  }
  return 0;
}

int search(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  for (auto& s : a)
    if (s == "-k") s = "--k";
  IndexSearchArgs q;
  if (!parse_flags("index search", a, &q)) return 0;
  if (q.positional.size() != 1) OC_USER_ERROR("index search needs one INDEX_DIR");
  if (q.text.has_value() == q.image.has_value()) OC_USER_ERROR("index search needs exactly one of --text or --image");
  const int k = q.k;
  if (k < 1) OC_USER_ERROR("-k must be at least 1");
  index::Searcher s(q.positional[0]);
  const ModelSource src =
      resolve_model_source(s.meta().model, q.pretrained.empty() ? s.meta().weights : q.pretrained);
  index::check_same_model(s.meta(), s.dir(), s.meta().model, index::weights_checksum(src.weights));
  InferenceOptions io;
  io.device = q.device;
  io.max_batch = 1;
  InferenceModel enc(src, io);
  std::vector<float> e;
  if (q.text) {
    if (q.text->empty()) OC_USER_ERROR("--text is empty");
    const std::vector<std::string> t = {*q.text};
    e = enc.encode_texts(t);
  } else {
    auto img = decode_image_file(*q.image);
    if (!img) OC_USER_ERROR("{}: {}", *q.image, img.error());
    const ImageU8* p = &img.value();
    e = enc.encode_images({&p, 1});
  }
  auto hits = s.search(e.data(), k);
  if (q.json) {
    nlohmann::json res = nlohmann::json::array();
    for (auto& h : hits)
      res.push_back({{"id", h.id}, {"score", h.score}, {"key", h.item->key}, {"path", h.item->path},
                     {"caption", h.item->caption}});
    nlohmann::json j = {{"query", q.text ? *q.text : *q.image}, {"results", res}};
    std::printf("%s\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    for (size_t i = 0; i < hits.size(); ++i)
      std::printf("%2zu  %.4f  %s%s%s\n", i + 1, hits[i].score, hits[i].item->key.c_str(),
                  hits[i].item->caption.empty() ? "" : "  ", hits[i].item->caption.c_str());
  }
  return 0;
}

int run(const std::vector<std::string>& args) {
  if (args.empty()) return std::fprintf(stderr, "%s", kUsage), 2;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "build") return build(rest);
  if (args[0] == "search") return search(rest);
  if (args[0] == "--help" || args[0] == "-h") return std::printf("%s", kUsage), 0;
  OC_USER_ERROR("index: unknown tool '{}'; choose build or search", args[0]);
}

OC_REGISTER_COMMAND("index", "image index: build (embed a folder/shards, faiss) | search (by text or image)", run);

}  // namespace
}  // namespace oc::cli
