// The public API (include/openclip/openclip.h) over the library.
#include <algorithm>
#include <cmath>
#include <openclip/openclip.h>

#include "core/check.h"
#include "eval/metrics.h"
#include "core/parallel.h"
#include "image/codec.h"
#include "image/transform.h"
#include "model/clip.h"
#include "model/weights.h"
#include "ops/registry.h"
#include "eval/tokenizer.h"

namespace openclip {

struct Model::Impl {
  std::unique_ptr<oc::Clip> clip;
  std::shared_ptr<const oc::TextTokenizer> tok;
  oc::PreprocessCfg pre;
  int batch = 32;
};

Model::Model(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Model::Model(Model&&) noexcept = default;
Model& Model::operator=(Model&&) noexcept = default;
Model::~Model() = default;

Model Model::load(const std::string& model, const std::string& weights, const LoadOptions& opt) {
  if (opt.threads > 0) oc::set_num_threads(opt.threads);
  auto impl = std::make_unique<Impl>();
  impl->clip = std::make_unique<oc::Clip>(oc::load_model_config(model),
                                          oc::ops::backend(oc::ops::resolve_device(opt.device)));
  if (weights.empty()) impl->clip->init(0);
  else oc::load_weights(*impl->clip, weights);
  impl->clip->set_precision(oc::parse_precision(opt.precision));
  impl->batch = std::max(1, opt.batch_size);
  impl->clip->plan_inference(impl->batch);
  impl->tok = oc::model_tokenizer(impl->clip->cfg(), opt.vocab);
  impl->pre.size = impl->clip->cfg().vision.image_size;
  return Model(std::move(impl));
}

int Model::embed_dim() const { return impl_->clip->cfg().embed_dim; }
int Model::image_size() const { return impl_->clip->cfg().vision.image_size; }
int Model::context_length() const { return impl_->clip->cfg().text.context_length; }

// Images in chunks of `batch`: get(i) gives image i decoded, then OpenCLIP's eval transform.
template <class GetImage>
static std::vector<std::vector<float>> encode_chunked(oc::Clip& clip, const oc::PreprocessCfg& pre, size_t count,
                                                      size_t batch, int E, bool normalize, GetImage get) {
  const size_t px = 3 * size_t(pre.size) * size_t(pre.size);
  std::vector<std::vector<float>> out;
  std::vector<float> pixels, feats;
  for (size_t i0 = 0; i0 < count; i0 += batch) {
    const size_t n = std::min(count - i0, batch);
    pixels.assign(n * px, 0.0f);
    for (size_t i = 0; i < n; ++i) oc::preprocess_eval(get(i0 + i), pre, {pixels.data() + i * px, px});
    feats.resize(n * size_t(E));
    clip.encode_image(pixels.data(), int64_t(n), feats.data(), normalize);
    for (size_t i = 0; i < n; ++i) out.emplace_back(feats.begin() + i * E, feats.begin() + (i + 1) * E);
  }
  return out;
}

std::vector<std::vector<float>> Model::encode_image_files(const std::vector<std::string>& paths, bool normalize) {
  return encode_chunked(*impl_->clip, impl_->pre, paths.size(), size_t(impl_->batch), embed_dim(), normalize,
                        [&](size_t i) {
                          auto img = oc::decode_source_image_file(paths[i]);  // preprocess(Image.open(path)): resize in the mode
                          if (!img) throw oc::Error(paths[i] + ": " + img.error());
                          return std::move(img.value());
                        });
}

std::vector<std::vector<float>> Model::encode_images(const std::vector<ImageView>& images, bool normalize) {
  for (size_t i = 0; i < images.size(); ++i)
    if (!images[i].rgb || images[i].height < 1 || images[i].width < 1)
      throw oc::Error("image " + std::to_string(i) + ": empty (" + std::to_string(images[i].height) + "x" +
                      std::to_string(images[i].width) + ")");
  return encode_chunked(*impl_->clip, impl_->pre, images.size(), size_t(impl_->batch), embed_dim(), normalize,
                        [&](size_t i) {
                          oc::SourceImage img;  // as an RGB file decodes: the same transform path
                          img.mode = oc::PixelMode::RGB;
                          img.height = images[i].height;
                          img.width = images[i].width;
                          img.pixels.assign(images[i].rgb, images[i].rgb + size_t(img.height) * img.width * 3);
                          return img;
                        });
}

std::vector<std::vector<float>> Model::encode_texts(const std::vector<std::string>& texts, bool normalize) {
  const int E = embed_dim();
  std::vector<size_t> bad;
  std::vector<int32_t> ids = impl_->tok->tokenize_batch(texts, &bad);
  if (!bad.empty()) throw oc::Error("text " + std::to_string(bad[0]) + " is not valid UTF-8");
  std::vector<float> feats(texts.size() * size_t(E));
  impl_->clip->encode_text(ids.data(), int64_t(texts.size()), feats.data(), normalize);
  std::vector<std::vector<float>> out;
  for (size_t i = 0; i < texts.size(); ++i) out.emplace_back(feats.begin() + i * E, feats.begin() + (i + 1) * E);
  return out;
}

std::vector<std::vector<float>> Model::classify(const std::vector<std::string>& image_paths,
                                                const std::vector<std::string>& labels) {
  if (labels.empty()) throw oc::Error("classify needs at least one label");
  auto img = encode_image_files(image_paths);
  auto txt = encode_texts(labels);
  std::vector<std::vector<float>> probs;
  std::vector<float> flat;
  for (auto& t : txt) flat.insert(flat.end(), t.begin(), t.end());
  for (auto& f : img) probs.push_back(oc::label_probabilities(f.data(), flat.data(), labels.size(), f.size()));
  return probs;
}

}  // namespace openclip
