#include "model/inference.h"

#include <algorithm>
#include <cmath>

#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/parallel.h"
#include "model/int8_scales.h"
#include "model/model_tokenizer.h"
#include "model/weights.h"
#include "ops/registry.h"

namespace oc {

namespace {
// The hub folder's or pretrained tag's preprocess_cfg over `p` (no --image-* flags reach
// inference to override it).
void apply_hint(const PreprocessHint& h, PreprocessCfg* p) {
  for (size_t c = 0; c < 3; ++c) {
    if (!h.mean.empty()) p->mean[c] = h.mean[h.mean.size() == 1 ? 0 : c];
    if (!h.std.empty()) p->std[c] = h.std[h.std.size() == 1 ? 0 : c];
  }
  if (h.interpolation == "bilinear") p->interpolation = Interp::Bilinear;
  if (h.interpolation == "bicubic") p->interpolation = Interp::Bicubic;
  if (h.resize_mode == "shortest") p->resize_mode = ResizeMode::Shortest;
  if (h.resize_mode == "longest") p->resize_mode = ResizeMode::Longest;
  if (h.resize_mode == "squash") p->resize_mode = ResizeMode::Squash;
}
}  // namespace

InferenceModel::InferenceModel(const InferenceOptions& opt)
    : InferenceModel(resolve_model_source(opt.model, opt.weights, opt.cache_dir), opt) {}

InferenceModel::InferenceModel(const ModelSource& src, const InferenceOptions& opt)
    : pre_(opt.preprocess), weights_(src.weights), max_batch_(std::max(1, opt.max_batch)) {
  if (opt.threads > 0) set_num_threads(opt.threads);
  clip_ = std::make_unique<Clip>(src.cfg, ops::backend(ops::resolve_device(opt.device)));
  if (src.weights.empty()) clip_->init(opt.seed);
  else load_weights(*clip_, src.weights);
  clip_->set_precision(opt.precision);
  load_int8_scales(opt.int8_scales);
  clip_->plan_inference(max_batch_);
  if (opt.tokenizer) tok_ = model_tokenizer(clip_->cfg(), opt.vocab, src.tokenizer_dir);
  apply_hint(src.preprocess, &pre_);
  pre_.size = clip_->cfg().vision.image_size;
}

void InferenceModel::load_int8_scales(const std::string& given) {
  if (clip_->precision() != Precision::Int8) {
    if (!given.empty()) log::warn("--int8-scales {}: not used ({} runs)", given, clip_->precision_label());
    return;
  }
  std::string path = given;
  if (path.empty() && fs::exists(int8_scales_beside(weights_))) path = int8_scales_beside(weights_);
  if (!path.empty()) {
    if (!fs::exists(path)) OC_USER_ERROR("--int8-scales {}: no such file", path);
    clip_->set_int8_scales(std::make_shared<const Int8Scales>(read_int8_scales(path)));
  }
  log::info("precision: {}", clip_->precision_label());
}

void InferenceModel::preprocess(const ImageU8& img, std::span<float> out) const { preprocess_eval(img, pre_, out); }
void InferenceModel::preprocess(const SourceImage& img, std::span<float> out) const { preprocess_eval(img, pre_, out); }

std::vector<int32_t> InferenceModel::tokenize(std::span<const std::string> texts) const {
  OC_CHECK(tok_, "InferenceModel of {} was made without a tokenizer (InferenceOptions::tokenizer)", cfg().name);
  std::vector<size_t> bad;
  std::vector<int32_t> ids = tok_->tokenize_batch(texts, &bad);
  if (!bad.empty()) OC_USER_ERROR("text {} is not valid UTF-8", bad[0]);
  return ids;
}

void InferenceModel::encode_pixels(const float* pixels, int64_t n, float* out, bool normalize) {
  if (n > 0) clip_->encode_image(pixels, n, out, normalize);
}

void InferenceModel::encode_tokens(const int32_t* ids, int64_t n, float* out, bool normalize) {
  if (n > 0) clip_->encode_text(ids, n, out, normalize);
}

std::vector<float> InferenceModel::encode_images(size_t count, const FillPixels& fill, bool normalize) {
  const size_t px = 3 * size_t(pre_.size) * size_t(pre_.size), E = size_t(embed_dim()), B = size_t(max_batch_);
  std::vector<float> out(count * E), pixels;
  for (size_t i0 = 0; i0 < count; i0 += B) {
    const size_t n = std::min(count - i0, B);
    pixels.assign(n * px, 0.0f);
    for (size_t i = 0; i < n; ++i) fill(i0 + i, {pixels.data() + i * px, px});
    encode_pixels(pixels.data(), int64_t(n), out.data() + i0 * E, normalize);
  }
  return out;
}

std::vector<float> InferenceModel::encode_images(std::span<const ImageU8* const> images, bool normalize) {
  return encode_images(
      images.size(), [&](size_t i, std::span<float> px) { preprocess(*images[i], px); }, normalize);
}

std::vector<float> InferenceModel::encode_texts(std::span<const std::string> texts, bool normalize) {
  std::vector<float> out(texts.size() * size_t(embed_dim()));
  if (texts.empty()) return out;
  const std::vector<int32_t> ids = tokenize(texts);
  encode_tokens(ids.data(), int64_t(texts.size()), out.data(), normalize);
  return out;
}

std::vector<std::vector<float>> InferenceModel::classify(std::span<const float> image_features,
                                                         std::span<const std::string> labels) {
  if (labels.empty()) OC_USER_ERROR("classify needs at least one label");
  const size_t E = size_t(embed_dim());
  OC_CHECK(image_features.size() % E == 0, "classify: {} floats is not a whole number of {}-float embeddings",
           image_features.size(), E);
  const std::vector<float> txt = encode_texts(labels);
  std::vector<std::vector<float>> probs;
  for (size_t i = 0; i < image_features.size() / E; ++i)
    probs.push_back(label_probabilities(image_features.data() + i * E, txt.data(), labels.size(), E));
  return probs;
}

std::vector<float> label_probabilities(const float* image, const float* texts, size_t n_labels, size_t dim) {
  std::vector<double> logits(n_labels);
  double mx = -1e30;
  for (size_t l = 0; l < n_labels; ++l) {
    double dot = 0;
    for (size_t e = 0; e < dim; ++e) dot += double(image[e]) * texts[l * dim + e];
    logits[l] = 100.0 * dot;
    mx = std::max(mx, logits[l]);
  }
  double sum = 0;
  for (auto& x : logits) sum += (x = std::exp(x - mx));
  std::vector<float> p;
  for (auto& x : logits) p.push_back(float(x / sum));
  return p;
}

}  // namespace oc
