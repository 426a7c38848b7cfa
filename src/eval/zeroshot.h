// Zero-shot classification as OpenCLIP: for each class, encode every template filled with
// the class name, L2-normalize, average, renormalize -> W [C, E]; logits = 100 * img @ W^T.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "model/clip.h"
#include "ops/staging.h"
#include "text/text_tokenizer.h"

namespace oc {

struct ZeroShotTask {
  std::string name = "imagenet";      // metric prefix: "<name>-zeroshot-val-top1"
  std::vector<std::string> classnames;
  std::vector<std::string> templates;  // with "{c}" (or Python's "{}") where the class goes
};

// A task JSON {"classnames": [...], "templates": [...]} (imagenet_zeroshot.json's format,
// also written by `openclip data fashion-mnist`).
ZeroShotTask load_zeroshot_task(const std::string& path);
// The installed ImageNet task (data folder imagenet_zeroshot.json): 1000 classes, 80 templates.
ZeroShotTask imagenet_task();
// Overrides from plain files: one class name / one template per line.
void override_task(ZeroShotTask* task, const std::string& classnames_file, const std::string& templates_file);
std::string fill_template(const std::string& tmpl, const std::string& classname);

// W [C, E], row c = normalize(mean_t normalize(encode_text(template_t(class_c)))).
std::vector<float> zeroshot_classifier(Clip& model, const TextTokenizer& tok, const ZeroShotTask& task,
                                       int64_t batch_size = 256);

// The logits, 100 * features @ W^T, on the model's backend (--device; ops::Staging): W [C, E]
// is uploaded once, each call's features [n, E] (host, from Clip::encode_image) are uploaded
// and its logits [n, C] copied back to the host. W must outlive this object (a host backend
// reads it in place).
class ZeroShotLogits {
 public:
  ZeroShotLogits(ops::Backend& be, std::span<const float> W, int64_t C, int64_t E);
  void operator()(std::span<const float> features, int64_t n, std::span<float> logits);

 private:
  ops::Backend& be_;
  int64_t C_, E_;
  ops::Staging w_, features_, logits_;
  const float* w_dev_;
};

}  // namespace oc
