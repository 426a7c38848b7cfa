#include "index/encoder.h"

#include <algorithm>

#include "core/check.h"
#include "eval/tokenizer.h"
#include "model/config.h"
#include "model/precision.h"
#include "model/weights.h"

namespace oc::index {

Encoder::Encoder(const EncoderOptions& opt) : opt_(opt), max_batch_(std::max(1, opt.max_batch)) {
  clip_ = std::make_unique<Clip>(load_model_config(opt.model));
  if (opt.weights.empty()) clip_->init(0);
  else load_weights(*clip_, opt.weights);
  clip_->set_precision(opt.precision);
  clip_->plan_inference(max_batch_);
  tok_ = model_tokenizer(clip_->cfg());
  pre_.size = clip_->cfg().vision.image_size;
}

void Encoder::preprocess(const ImageU8& img, std::span<float> out) const { preprocess_eval(img, pre_, out); }

std::vector<int32_t> Encoder::tokenize(std::span<const std::string> texts) const {
  std::vector<size_t> bad;
  std::vector<int32_t> ids = tok_->tokenize_batch(texts, &bad);
  if (!bad.empty()) OC_USER_ERROR("text {} is not valid UTF-8", bad[0]);
  return ids;
}

void Encoder::encode_pixels(const float* pixels, int64_t n, float* out) {
  OC_CHECK(n <= max_batch_, "batch of {} images over the planned {}", n, max_batch_);
  if (n > 0) clip_->encode_image(pixels, n, out, true);
}

void Encoder::encode_tokens(const int32_t* ids, int64_t n, float* out) {
  OC_CHECK(n <= max_batch_, "batch of {} texts over the planned {}", n, max_batch_);
  if (n > 0) clip_->encode_text(ids, n, out, true);
}

void Encoder::encode_images(std::span<const ImageU8* const> images, float* out) {
  const size_t n = images.size(), S = size_t(pre_.size), px = 3 * S * S;
  OC_CHECK(n <= size_t(max_batch_), "batch of {} images over the planned {}", n, max_batch_);
  if (n == 0) return;
  pixels_.assign(n * px, 0.0f);
  for (size_t i = 0; i < n; ++i) preprocess_eval(*images[i], pre_, {pixels_.data() + i * px, px});
  clip_->encode_image(pixels_.data(), int64_t(n), out, true);
}

void Encoder::encode_texts(std::span<const std::string> texts, float* out) {
  OC_CHECK(texts.size() <= size_t(max_batch_), "batch of {} texts over the planned {}", texts.size(), max_batch_);
  if (texts.empty()) return;
  std::vector<int32_t> ids = tokenize(texts);
  clip_->encode_text(ids.data(), int64_t(texts.size()), out, true);
}

std::vector<float> Encoder::encode_images_all(std::span<const ImageU8* const> images) {
  std::vector<float> out(images.size() * size_t(embed_dim()));
  for (size_t i = 0; i < images.size(); i += size_t(max_batch_)) {
    const size_t n = std::min(images.size() - i, size_t(max_batch_));
    encode_images(images.subspan(i, n), out.data() + i * size_t(embed_dim()));
  }
  return out;
}

std::vector<float> Encoder::encode_texts_all(std::span<const std::string> texts) {
  std::vector<float> out(texts.size() * size_t(embed_dim()));
  for (size_t i = 0; i < texts.size(); i += size_t(max_batch_)) {
    const size_t n = std::min(texts.size() - i, size_t(max_batch_));
    encode_texts(texts.subspan(i, n), out.data() + i * size_t(embed_dim()));
  }
  return out;
}

}  // namespace oc::index
