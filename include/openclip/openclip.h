// openclip-cpp's public C++ API: load an OpenCLIP model (config + weights) with its
// preprocessing and tokenizer, encode images and texts, and classify an image against
// labels as OpenCLIP's README example does. Errors throw std::runtime_error subclasses
// with a message that says what failed and where.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace openclip {

struct LoadOptions {
  std::string precision = "fp32";  // fp32, amp_bf16 or int8
  std::string int8_scales;         // int8: static scales file ("" = <weights stem>.int8.safetensors if present)
  std::string device = "cpu";      // compute backend: cpu, ref, or cuda in a CUDA build (`openclip info` lists them)
  std::string vocab;               // BPE vocabulary path ("" = the installed one)
  int batch_size = 32;             // inference chunk size
  int threads = 0;                 // 0 = all cores
  bool tokenizer = true;           // false: images only; no text tokenizer is loaded (encode_texts throws)
};

// A decoded image: 8-bit RGB, row-major height x width x 3 (HWC), as numpy and PIL hold it.
struct ImageView {
  const uint8_t* rgb = nullptr;
  int height = 0, width = 0;
};

class Model {
 public:
  // model: a built-in config name ("ViT-B-32"), a JSON config path, or a whole model:
  // "hf-hub:org/name[@rev]" (downloaded into the Hugging Face cache), "local-dir:PATH" or a hub
  // folder; weights: .pt/.bin/.pth/.safetensors with OpenCLIP state_dict names, a pretrained
  // tag of OpenCLIP 2.24 or 3.3 (from a cache or downloaded), or a whole model ("" = the whole
  // model's weights, else random init, for tests). Loads as `openclip embed` does
  // (src/model/model_source.h, src/model/inference.h).
  static Model load(const std::string& model, const std::string& weights, const LoadOptions& opt = {});
  Model(Model&&) noexcept;
  Model& operator=(Model&&) noexcept;
  ~Model();

  int embed_dim() const;
  int image_size() const;
  int context_length() const;

  // Embeddings (L2-normalized unless normalize is false), one vector of embed_dim() floats per input. Images are files
  // (JPEG/PNG/WebP) run through OpenCLIP's eval transform.
  std::vector<std::vector<float>> encode_image_files(const std::vector<std::string>& paths, bool normalize = true);
  // Images already decoded (ImageView), through the same eval transform as files.
  std::vector<std::vector<float>> encode_images(const std::vector<ImageView>& images, bool normalize = true);
  std::vector<std::vector<float>> encode_texts(const std::vector<std::string>& texts, bool normalize = true);
  // Texts already tokenized: rows of context_length() ids each (as OpenCLIP's tokenizer gives
  // them; ids.size() a multiple of context_length(), every id in [0, vocab size)).
  std::vector<std::vector<float>> encode_tokens(const std::vector<int32_t>& ids, bool normalize = true);
  // softmax(100 * image . text) over the labels, per image: OpenCLIP's label probabilities.
  std::vector<std::vector<float>> classify(const std::vector<std::string>& image_paths,
                                           const std::vector<std::string>& labels);

 private:
  struct Impl;
  explicit Model(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace openclip
