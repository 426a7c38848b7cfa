// The zero-shot predictions file (`RUN_DIR/zeroshot_<task>.json`) that `openclip report`
// draws its per-class accuracy, confusion matrix and example grid from.
#include <nlohmann/json.hpp>

#include "core/base64.h"
#include "core/check.h"
#include "core/fs.h"
#include "eval/evaluate.h"
#include "image/codec.h"

namespace oc {

void write_zeroshot_predictions(const std::string& path, const ZeroShotTask& task, const ZeroShotResult& r,
                                const std::string& data, const std::string& checkpoint) {
  const size_t C = task.classnames.size();
  std::vector<std::vector<int64_t>> confusion(C, std::vector<int64_t>(C, 0));
  std::vector<int64_t> per_class(C, 0), correct(C, 0);
  for (size_t i = 0; i < r.labels.size(); ++i) {
    const auto y = size_t(r.labels[i]), p = size_t(r.predictions[i]);
    OC_CHECK(y < C && p < C, "label {} / prediction {} outside {} classes", y, p, C);
    ++confusion[y][p], ++per_class[y];
    correct[y] += y == p;
  }
  nlohmann::json per_class_top1 = nlohmann::json::array();
  for (size_t c = 0; c < C; ++c)
    per_class_top1.push_back(per_class[c] ? double(correct[c]) / double(per_class[c]) : 0.0);
  const std::string first_template = task.templates.empty() ? "{c}" : task.templates[0];
  nlohmann::json examples = nlohmann::json::array();
  for (const ZeroShotExample& ex : r.examples) {
    auto png = encode_image(ex.image, ImageFormat::Png);
    OC_CHECK(png.ok(), "PNG encoding of example {} failed: {}", ex.sample, png.error());
    nlohmann::json top = nlohmann::json::array();
    const auto& cls = r.top5_classes[size_t(ex.sample)];
    for (size_t j = 0; j < std::min<size_t>(3, cls.size()); ++j) {
      const std::string& name = task.classnames[size_t(cls[j])];
      top.push_back({{"class", cls[j]},
                     {"name", name},
                     {"caption", fill_template(first_template, name)},
                     {"prob", r.top5_probs[size_t(ex.sample)][j]}});
    }
    examples.push_back({{"key", r.keys[size_t(ex.sample)]},
                        {"label", r.labels[size_t(ex.sample)]},
                        {"png_base64", base64_encode(png.value())},
                        {"top", top}});
  }
  nlohmann::json j = {{"task", task.name},
                      {"data", data},
                      {"checkpoint", checkpoint},
                      {"classnames", task.classnames},
                      {"templates", task.templates},
                      {"samples", r.samples},
                      {"top1", r.top1},
                      {"top5", r.top5},
                      {"images_per_second", r.images_per_second},
                      {"classifier_seconds", r.classifier_seconds},
                      {"confusion", confusion},
                      {"per_class_top1", per_class_top1},
                      {"examples", examples}};
  fs::write_atomic(path, j.dump(1));
}

}  // namespace oc
