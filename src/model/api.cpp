// The public API (include/openclip/openclip.h) over the library's inference path
// (model/inference.h): the same loading, preprocessing and encoding as the CLI's commands.
#include <openclip/openclip.h>

#include <algorithm>

#include "core/check.h"
#include "image/codec.h"
#include "model/inference.h"

namespace openclip {

struct Model::Impl {
  explicit Impl(const oc::InferenceOptions& o) : inf(o) {}
  oc::InferenceModel inf;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& model, const std::string& weights, const LoadOptions& opt) {
  oc::InferenceOptions o;
  o.model = model;
  o.weights = weights;
  o.precision = oc::parse_precision(opt.precision);
  o.int8_scales = opt.int8_scales;
  o.device = opt.device;
  o.vocab = opt.vocab;
  o.max_batch = opt.batch_size;
  o.threads = opt.threads;
  o.tokenizer = opt.tokenizer;
  return Model(std::make_unique<Impl>(o));
}

int Model::embed_dim() const { return impl_->inf.embed_dim(); }
int Model::image_size() const { return impl_->inf.image_size(); }
int Model::context_length() const { return impl_->inf.context_length(); }

namespace {
// [n, E] row-major -> one vector per row.
std::vector<std::vector<float>> rows(const std::vector<float>& flat, size_t E) {
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i + E <= flat.size(); i += E) out.emplace_back(flat.begin() + long(i), flat.begin() + long(i + E));
  return out;
}
}  // namespace

std::vector<std::vector<float>> Model::encode_image_files(const std::vector<std::string>& paths, bool normalize) {
  oc::InferenceModel& inf = impl_->inf;
  auto feats = inf.encode_images(
      paths.size(),
      [&](size_t i, std::span<float> px) {
        auto img = oc::decode_source_image_file(paths[i]);  // preprocess(Image.open(path)): resize in the mode
        if (!img) throw oc::Error(paths[i] + ": " + img.error());
        inf.preprocess(img.value(), px);
      },
      normalize);
  return rows(feats, size_t(embed_dim()));
}

std::vector<std::vector<float>> Model::encode_images(const std::vector<ImageView>& images, bool normalize) {
  for (size_t i = 0; i < images.size(); ++i)
    if (!images[i].rgb || images[i].height < 1 || images[i].width < 1)
      throw oc::Error("image " + std::to_string(i) + ": empty (" + std::to_string(images[i].height) + "x" +
                      std::to_string(images[i].width) + ")");
  oc::InferenceModel& inf = impl_->inf;
  auto feats = inf.encode_images(
      images.size(),
      [&](size_t i, std::span<float> px) {
        oc::SourceImage img;  // as an RGB file decodes: the same transform path
        img.mode = oc::PixelMode::RGB;
        img.height = images[i].height;
        img.width = images[i].width;
        img.pixels.assign(images[i].rgb, images[i].rgb + size_t(img.height) * img.width * 3);
        inf.preprocess(img, px);
      },
      normalize);
  return rows(feats, size_t(embed_dim()));
}

std::vector<std::vector<float>> Model::encode_texts(const std::vector<std::string>& texts, bool normalize) {
  return rows(impl_->inf.encode_texts(texts, normalize), size_t(embed_dim()));
}

std::vector<std::vector<float>> Model::encode_tokens(const std::vector<int32_t>& ids, bool normalize) {
  const size_t ctx = size_t(context_length()), vocab = size_t(impl_->inf.cfg().text.vocab_size);
  if (ids.empty() || ids.size() % ctx != 0)
    throw oc::Error("encode_tokens: " + std::to_string(ids.size()) + " ids are not rows of the context length " +
                    std::to_string(ctx));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || size_t(ids[i]) >= vocab)
      throw oc::Error("encode_tokens: id " + std::to_string(ids[i]) + " (row " + std::to_string(i / ctx) +
                      ", position " + std::to_string(i % ctx) + ") is outside the vocabulary [0, " +
                      std::to_string(vocab) + ")");
  const int64_t n = int64_t(ids.size() / ctx);
  std::vector<float> out(size_t(n) * size_t(embed_dim()));
  impl_->inf.encode_tokens(ids.data(), n, out.data(), normalize);  // as encode_texts does after tokenizing
  return rows(out, size_t(embed_dim()));
}

std::vector<std::vector<float>> Model::classify(const std::vector<std::string>& image_paths,
                                                const std::vector<std::string>& labels) {
  if (labels.empty()) throw oc::Error("classify needs at least one label");
  std::vector<float> img;
  for (auto& f : encode_image_files(image_paths)) img.insert(img.end(), f.begin(), f.end());
  return impl_->inf.classify(img, labels);
}

}  // namespace openclip
