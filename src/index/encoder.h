// A loaded CLIP model with its eval transform and tokenizer, for the index builder and the
// server: the same steps as the public API (src/eval/api.cpp) — decode, preprocess_eval,
// Clip::encode_image / tokenize_batch, Clip::encode_text — on images already in memory and
// on batches the caller forms. Not thread-safe: one caller at a time (the server's batcher
// owns it on one thread).
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "image/image.h"
#include "image/transform.h"
#include "model/clip.h"
#include "text/text_tokenizer.h"

namespace oc::index {

struct EncoderOptions {
  std::string model = "ViT-B-32";  // config name or JSON path
  std::string weights;             // "" = random init (seed 0), for tests and benchmarks
  Precision precision = Precision::Fp32;
  int max_batch = 32;              // largest batch a call may pass
};

class Encoder {
 public:
  explicit Encoder(const EncoderOptions& opt);
  int embed_dim() const { return clip_->cfg().embed_dim; }
  int image_size() const { return pre_.size; }
  int context_length() const { return clip_->cfg().text.context_length; }
  int max_batch() const { return max_batch_; }
  const EncoderOptions& options() const { return opt_; }

  // L2-normalized embeddings, [n, embed_dim] row-major. n <= max_batch.
  void encode_images(std::span<const ImageU8* const> images, float* out);
  // Throws oc::Error naming the first text that is not valid UTF-8.
  void encode_texts(std::span<const std::string> texts, float* out);
  // The two halves of each, for callers that prepare inputs on many threads (the server):
  // preprocess/tokenize are const and thread-safe; the encode_* calls are not.
  void preprocess(const ImageU8& img, std::span<float> out) const;  // 3 * image_size^2 floats
  std::vector<int32_t> tokenize(std::span<const std::string> texts) const;  // throws on bad UTF-8
  void encode_pixels(const float* pixels, int64_t n, float* out);   // n <= max_batch
  void encode_tokens(const int32_t* ids, int64_t n, float* out);    // n <= max_batch
  // Any number of inputs, chunked by max_batch.
  std::vector<float> encode_images_all(std::span<const ImageU8* const> images);
  std::vector<float> encode_texts_all(std::span<const std::string> texts);

 private:
  EncoderOptions opt_;
  std::unique_ptr<Clip> clip_;
  std::shared_ptr<const TextTokenizer> tok_;
  PreprocessCfg pre_;
  int max_batch_ = 32;
  std::vector<float> pixels_;
};

}  // namespace oc::index
