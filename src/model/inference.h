// The one inference path: a CLIP model loaded for encoding, with its backend (--device),
// precision, text tokenizer and eval preprocessing. The C++ API (src/model/api.cpp), `eval`,
// `index build|search`, `serve` and `bench infer|zeroshot` all load their model here, so
// they resolve --model/--pretrained, pick the backend and preprocess the same way.
//   load: resolve_model_source (a config name or JSON, or a hub folder; a weights file or a
//         pretrained tag), Clip on ops::backend(resolve_device(device)), the weights (or a
//         random init from `seed` when there are none), set_precision, the int8 scales when
//         int8 runs (logged: "int8 static (FILE)" or "int8 dynamic"), plan_inference(max_batch);
//   preprocess: OpenCLIP's eval transform with the source's preprocess_cfg applied to `preprocess`;
//   tokenize: model_tokenizer (model/model_tokenizer.h).
// Encoding runs in chunks of max_batch (Clip::encode_*), so a call's rows do not depend on
// how many inputs came with it beyond that chunking. Embeddings are host memory, [n, embed_dim].
// preprocess() and tokenize() are const and thread-safe; the encode calls are not (one caller
// at a time: the server's batcher, the Python module's lock).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "image/image.h"
#include "image/source.h"
#include "image/transform.h"
#include "model/clip.h"
#include "model/model_source.h"
#include "model/precision.h"
#include "text/text_tokenizer.h"

namespace oc {

struct InferenceOptions {
  std::string model = "ViT-B-32";  // --model: config name, JSON path or hub folder
  std::string weights;             // --pretrained: file or tag ("" = the hub folder's, else random init)
  std::string cache_dir;           // --cache-dir: where a tag's weights are looked for
  Precision precision = Precision::Fp32;  // --precision
  // --int8-scales: static int8 activation scales (model/int8_scales.h); "" = the file beside
  // the weights (int8_scales_beside) when it exists, else dynamic. Read only when int8 runs.
  std::string int8_scales;
  std::string device = "cpu";      // --device (ops::resolve_device: a clear error for a missing backend)
  std::string vocab;               // the tokenizer's vocabulary file ("" = the usual search)
  int max_batch = 32;              // the chunk every encode call runs in
  int threads = 0;                 // > 0: set_num_threads (process-wide); 0 = as set
  uint64_t seed = 0;               // Clip::init seed when there are no weights
  bool tokenizer = true;           // false: no tokenizer is loaded (tokenize() is then an error);
                                   // for image-only uses of a model whose tokenizer file is absent
  PreprocessCfg preprocess;        // the base the source's preprocess_cfg applies to; size = the model's
};

class InferenceModel {
 public:
  // Resolves opt.model / opt.weights / opt.cache_dir (resolve_model_source), then loads.
  explicit InferenceModel(const InferenceOptions& opt);
  // Loads an already resolved source (opt.model / opt.weights are not read).
  InferenceModel(const ModelSource& src, const InferenceOptions& opt);
  InferenceModel(const InferenceModel&) = delete;
  InferenceModel& operator=(const InferenceModel&) = delete;

  const ModelCfg& cfg() const { return clip_->cfg(); }
  int embed_dim() const { return cfg().embed_dim; }
  int image_size() const { return pre_.size; }
  int context_length() const { return cfg().text.context_length; }
  int max_batch() const { return max_batch_; }
  const std::string& weights() const { return weights_; }  // the file loaded ("" = random init)
  std::string precision_label() const { return clip_->precision_label(); }  // Clip::precision_label
  const PreprocessCfg& preprocess_cfg() const { return pre_; }
  const std::shared_ptr<const TextTokenizer>& tokenizer() const { return tok_; }  // null: opt.tokenizer false
  Clip& clip() { return *clip_; }  // for eval and benchmarks that drive the towers themselves

  // 3 * image_size^2 floats (CHW), OpenCLIP's eval transform. An ImageU8 is RGB already; a
  // SourceImage is resized in its PIL mode first (as preprocess(Image.open(path))).
  void preprocess(const ImageU8& img, std::span<float> out) const;
  void preprocess(const SourceImage& img, std::span<float> out) const;
  // [n, context_length] ids; throws oc::Error naming the first text that is not valid UTF-8.
  std::vector<int32_t> tokenize(std::span<const std::string> texts) const;

  // Prepared inputs -> out [n, embed_dim] (L2-normalized when normalize).
  void encode_pixels(const float* pixels, int64_t n, float* out, bool normalize = true);
  void encode_tokens(const int32_t* ids, int64_t n, float* out, bool normalize = true);
  // n images; fill(i, pixels) writes image i's preprocessed pixels (decode, then preprocess()).
  // Only one chunk of max_batch images' pixels is held at a time.
  using FillPixels = std::function<void(size_t i, std::span<float> pixels)>;
  std::vector<float> encode_images(size_t n, const FillPixels& fill, bool normalize = true);
  std::vector<float> encode_images(std::span<const ImageU8* const> images, bool normalize = true);
  std::vector<float> encode_texts(std::span<const std::string> texts, bool normalize = true);
  // OpenCLIP's label probabilities of each image (normalized features [n_images, embed_dim])
  // against the labels: one row of label_probabilities per image.
  std::vector<std::vector<float>> classify(std::span<const float> image_features, std::span<const std::string> labels);

 private:
  void load_int8_scales(const std::string& given);
  std::unique_ptr<Clip> clip_;
  std::shared_ptr<const TextTokenizer> tok_;
  PreprocessCfg pre_;
  std::string weights_;
  int max_batch_ = 32;
};

// OpenCLIP's label probabilities for one image: softmax(100 * image . text_l) over the
// labels (features normalized; texts [n_labels, dim] row-major), in double. `openclip
// classify`, the C++ API and `serve`'s /v1/classify all use this, so they agree bit for bit.
std::vector<float> label_probabilities(const float* image, const float* texts, size_t n_labels, size_t dim);

}  // namespace oc
