// Evaluation runs (train.py evaluate + zero_shot.py): zero-shot top-1/top-5 over a labelled
// dataset (ImageNet-style folder, a webdataset with `cls`, or a CSV with a label column), and
// retrieval + clip_val_loss over --val-data. Metric keys as OpenCLIP's.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/dataset.h"
#include "eval/zeroshot.h"
#include "image/image.h"
#include "model/clip.h"
#include "text/text_tokenizer.h"

namespace oc {

struct EvalData {
  std::string imagenet_val;  // folder of class folders (sorted names = class indices)
  std::string zeroshot_data; // labelled webdataset / CSV
  std::string zeroshot_task; // task JSON for zeroshot_data (class names + templates)
  std::string classnames_file, templates_file;  // overrides
  std::string val_data;      // retrieval
  int64_t val_num_samples = -1;
  // Retrieval: false (OpenCLIP's get_clip_metrics) scores every sample as its own
  // image-text pair; true (ours, --val-dedup-images) counts several captions of one image
  // (same key) as one image, for multi-caption sets such as Flickr30k and MSCOCO.
  bool dedup_images = false;
  int batch_size = 64, workers = 2;
  data::DataConfig base;     // csv keys/separator, preprocessing, context length
  // Non-empty: each zero-shot task also writes its predictions file
  // (<predictions_dir>/zeroshot_<task>.json, see write_zeroshot_predictions) naming `checkpoint`.
  std::string predictions_dir, checkpoint;
};

struct ZeroShotExample {
  int64_t sample;  // index into ZeroShotResult's per-sample vectors
  ImageU8 image;   // the model's input, un-normalized back to 8-bit RGB
};

struct ZeroShotResult {
  double top1 = 0, top5 = 0;
  int64_t samples = 0;
  std::vector<int64_t> labels, predictions;  // per sample (top-1 class)
  std::vector<std::vector<int64_t>> top5_classes;
  std::vector<std::vector<float>> top5_probs;  // softmax(100 x cosine) of those classes
  std::vector<ZeroShotExample> examples;       // the first examples_per_class images of each class (<= 40 in all)
  std::vector<std::string> keys;
  double images_per_second = 0, classifier_seconds = 0;
};

ZeroShotResult run_zeroshot(Clip& model, const std::shared_ptr<const TextTokenizer>& tok, const ZeroShotTask& task,
                            const data::DataConfig& data_cfg, int examples_per_class = 0);

// The predictions file the HTML report reads (`RUN_DIR/zeroshot_<task>.json`): metrics,
// class names, templates, the confusion matrix [true][predicted], per-class top-1, and the
// examples as PNG (base64) with their top-3 classes, captions and probabilities.
void write_zeroshot_predictions(const std::string& path, const ZeroShotTask& task, const ZeroShotResult& r,
                                const std::string& data, const std::string& checkpoint);

// --zeroshot-classnames PATH (after zeroshot_data is set): with --zeroshot-data a .json file
// is the whole task (class names and templates), anything else overrides the class names.
void set_zeroshot_classnames(EvalData* ev, const std::string& path);

// Metrics of every source given (OpenCLIP's keys; values are fractions / ranks / losses).
// tok: the model's tokenizer (model_tokenizer), shared with the data loaders it creates.
std::map<std::string, double> evaluate(Clip& model, const std::shared_ptr<const TextTokenizer>& tok, const EvalData& ev);

// An ImageNet-style folder as a CSV (path, class name, label) in a temp file; returns the
// path and the sorted class folder names.
std::string folder_as_csv(const std::string& root, std::vector<std::string>* classes);

}  // namespace oc
