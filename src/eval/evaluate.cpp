#include "eval/evaluate.h"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <span>
#include <unordered_map>

#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/machine.h"
#include "core/progress.h"
#include "core/timer.h"
#include "data/loader.h"
#include "eval/metrics.h"
#include "image/codec.h"
#include "ops/staging.h"

namespace oc {

namespace {
std::vector<std::string> list_dir(const std::string& dir) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) OC_USER_ERROR("cannot open folder {}", dir);
  while (dirent* e = readdir(d.get())) {
    std::string n = e->d_name;
    if (n != "." && n != "..") out.push_back(n);
  }
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

std::string folder_as_csv(const std::string& root, std::vector<std::string>* classes) {
  classes->clear();
  std::string csv = "filepath\ttitle\tlabel\n";
  int64_t images = 0;
  for (auto& c : list_dir(root)) {
    const std::string dir = fs::join(root, c);
    if (!fs::is_dir(dir)) continue;
    const int64_t label = int64_t(classes->size());
    classes->push_back(c);
    for (auto& f : list_dir(dir))
      if (has_image_extension(f)) csv += fs::join(dir, f) + "\t" + c + "\t" + std::to_string(label) + "\n", ++images;
  }
  if (classes->empty()) OC_USER_ERROR("{}: no class folders (expected one sub-folder of images per class)", root);
  if (images == 0) OC_USER_ERROR("{}: the class folders hold no images (.jpg .jpeg .png .webp)", root);
  char tmpl[] = "/tmp/openclip-imagefolder-XXXXXX";
  int fd = mkstemp(tmpl);
  OC_CHECK(fd >= 0, "cannot create a temporary file");
  ::close(fd);
  fs::write_atomic(tmpl, csv);
  return tmpl;
}

namespace {
// The model input back to 8-bit RGB (undoing the mean/std normalization) for the report.
ImageU8 to_rgb8(const float* chw, int S, const PreprocessCfg& p) {
  ImageU8 im;
  im.width = im.height = S;
  im.rgb.resize(size_t(S) * S * 3);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < S * S; ++i) {
      const float v = (chw[size_t(c) * S * S + i] * p.std[size_t(c)] + p.mean[size_t(c)]) * 255.0f;
      im.rgb[size_t(i) * 3 + c] = uint8_t(std::lround(std::clamp(v, 0.0f, 255.0f)));
    }
  return im;
}
}  // namespace

ZeroShotResult run_zeroshot(Clip& model, const std::shared_ptr<const TextTokenizer>& tok, const ZeroShotTask& task,
                            const data::DataConfig& data_cfg, int examples_per_class) {
  ZeroShotResult r;
  Timer t;
  const std::vector<float> W = zeroshot_classifier(model, *tok, task);
  r.classifier_seconds = t.seconds();
  const int64_t C = int64_t(task.classnames.size()), E = model.cfg().embed_dim;
  ZeroShotLogits classify(model.backend(), W, C, E);
  data::DataConfig dc = data_cfg;
  dc.train = false;
  data::DataLoader loader(dc, tok);
  loader.start_epoch(0);
  std::vector<float> feats, logits;
  int64_t correct1 = 0, correct5 = 0;
  std::vector<int> shown(static_cast<size_t>(C), 0);
  const int S = model.cfg().vision.image_size;
  t.reset();
  Progress bar("zero-shot", loader.num_samples(), "images");
  int64_t seen = 0;
  while (auto b = loader.next()) {
    const int64_t B = b->size;
    bar.update(seen += B);  // as the batch starts: the bar shows what is read
    feats.resize(size_t(B * E));
    logits.resize(size_t(B * C));
    model.encode_image(b->images.data(), B, feats.data(), true);
    classify(feats, B, logits);  // on the model's backend; the ranking below reads host logits
    for (int64_t i = 0; i < B; ++i) {
      const int64_t y = b->labels[size_t(i)];
      if (y < 0) continue;
      if (y >= C)
        OC_USER_ERROR("sample {} has label {} but the task has {} classes", b->keys[size_t(i)], y, C);
      const float* row = logits.data() + i * C;
      std::vector<int64_t> order(static_cast<size_t>(C));
      for (int64_t c = 0; c < C; ++c) order[size_t(c)] = c;
      const int64_t k = std::min<int64_t>(5, C);
      std::partial_sort(order.begin(), order.begin() + k, order.end(),
                        [&](int64_t x, int64_t z) { return row[x] > row[z] || (row[x] == row[z] && x < z); });
      correct1 += order[0] == y;
      correct5 += std::find(order.begin(), order.begin() + k, y) != order.begin() + k;
      r.labels.push_back(y);
      r.predictions.push_back(order[0]);
      r.top5_classes.emplace_back(order.begin(), order.begin() + k);
      // Softmax over all classes, reported for the top k.
      double z = 0;
      for (int64_t c = 0; c < C; ++c) z += std::exp(double(row[c] - row[order[0]]));
      std::vector<float> probs;
      for (int64_t j = 0; j < k; ++j) probs.push_back(float(std::exp(double(row[order[size_t(j)]] - row[order[0]])) / z));
      r.top5_probs.push_back(std::move(probs));
      r.keys.push_back(b->keys[size_t(i)]);
      // At most 40 examples in all: the report shows a grid, not the dataset (ImageNet's
      // 1000 classes would otherwise put 1000 224x224 PNGs into the file).
      if (shown[size_t(y)] < examples_per_class && r.examples.size() < 40) {
        ++shown[size_t(y)];
        r.examples.push_back({int64_t(r.labels.size()) - 1,
                              to_rgb8(b->images.data() + size_t(i) * 3 * S * S, S, dc.preprocess)});
      }
    }
  }
  r.samples = int64_t(r.labels.size());
  if (r.samples == 0) OC_USER_ERROR("zero-shot data '{}' has no labelled samples", data_cfg.data);
  r.top1 = double(correct1) / double(r.samples);
  r.top5 = double(correct5) / double(r.samples);
  r.images_per_second = double(r.samples) / t.seconds();
  return r;
}

namespace {
// clip_val_loss of one batch on the model's backend: OpenCLIP's contrastive loss over the
// batch's own rows (ClipLossArgs; the op's gradients go to a workspace nobody reads). The
// features are host rows (Clip::encode_*), staged as ops::Staging says.
class ValLoss {
 public:
  explicit ValLoss(ops::Backend& be)
      : be_(be), img_(be, "validation image features"), txt_(be, "validation text features") {}
  double operator()(std::span<const float> img, std::span<const float> txt, int64_t B, int64_t E, float scale) {
    const size_t need = size_t(4 * B * E + 2 * B * B);  // 4 gradients [B,E] + the op's scratch [2,B,B]
    if (work_.floats() < need) work_.reset(), work_ = be_.alloc_floats(need, "the validation loss workspace", false);
    float* d = work_.f32();
    float ds = 0;
    const float* i = img_.upload(img.first(size_t(B * E)));
    const float* t = txt_.upload(txt.first(size_t(B * E)));
    return be_.run(ops::ClipLossArgs{
        .dimg = d, .dtxt = d + B * E, .dimg_all = d + 2 * B * E, .dtxt_all = d + 3 * B * E, .dscale_log = {&ds},
        .scratch = d + 4 * B * E, .img = i, .txt = t, .img_all = i, .txt_all = t, .scale = scale, .Nl = B, .Na = B,
        .E = E, .label_offset = 0});
  }

 private:
  ops::Backend& be_;
  ops::Staging img_, txt_;
  ops::Buffer work_;
};

std::map<std::string, double> run_retrieval(Clip& model, const std::shared_ptr<const TextTokenizer>& tok,
                                            const EvalData& ev) {
  data::DataConfig dc = ev.base;
  dc.type = data::DatasetType::Auto;
  dc.data = ev.val_data;
  dc.train = false;
  dc.num_samples = ev.val_num_samples;
  dc.batch_size = ev.batch_size;
  dc.workers = ev.workers;
  data::DataLoader loader(dc, tok);
  loader.start_epoch(0);
  const int64_t E = model.cfg().embed_dim;
  std::vector<float> img_all, txt_all, bi, bt;
  std::vector<int64_t> text_image;
  std::unordered_map<std::string, int64_t> image_index;
  double loss_sum = 0;
  int64_t n = 0;
  const float scale = std::exp(model.logit_scale());
  ValLoss val_loss(model.backend());
  Progress bar("retrieval", loader.num_samples(), "pairs");
  while (auto b = loader.next()) {
    const int64_t B = b->size;
    bar.update(n + B);
    bi.resize(size_t(B * E)), bt.resize(size_t(B * E));
    model.encode_image(b->images.data(), B, bi.data(), true);
    model.encode_text(b->tokens.data(), B, bt.data(), true);
    loss_sum += double(B) * val_loss(bi, bt, B, E, scale);  // clip_val_loss: weighted by batch size (OpenCLIP)
    n += B;
    for (int64_t i = 0; i < B; ++i) {
      // --val-dedup-images: several captions of one image (same path/key) count as one
      // image. Otherwise every row is its own pair, with a diagonal ground truth (OpenCLIP).
      const std::string key = ev.dedup_images ? b->keys[size_t(i)] : std::to_string(n - B + i);
      auto [it, fresh] = image_index.emplace(key, int64_t(image_index.size()));
      if (fresh) img_all.insert(img_all.end(), bi.begin() + i * E, bi.begin() + (i + 1) * E);
      txt_all.insert(txt_all.end(), bt.begin() + i * E, bt.begin() + (i + 1) * E);
      text_image.push_back(it->second);
    }
  }
  if (n == 0) OC_USER_ERROR("--val-data {}: no samples", ev.val_data);
  auto m = retrieval_metrics(img_all, txt_all, int64_t(image_index.size()), n, E, text_image, scale, kRetrievalBlock,
                             model.backend());
  m["clip_val_loss"] = loss_sum / double(n);
  m["num_samples"] = double(n);
  return m;
}
}  // namespace

void set_zeroshot_classnames(EvalData* ev, const std::string& path) {
  const bool task = !ev->zeroshot_data.empty() && path.ends_with(".json");
  ev->zeroshot_task = task ? path : "";
  ev->classnames_file = task ? "" : path;
}

std::map<std::string, double> evaluate(Clip& model, const std::shared_ptr<const TextTokenizer>& tok, const EvalData& ev) {
  std::map<std::string, double> out;
  auto zs = [&](ZeroShotTask task, data::DataConfig dc, const std::string& key_prefix) {
    override_task(&task, ev.classnames_file, ev.templates_file);
    dc.batch_size = ev.batch_size;
    dc.workers = ev.workers;
    const int per_class = std::max<int>(1, 40 / std::max<int>(1, int(task.classnames.size())));
    ZeroShotResult r = run_zeroshot(model, tok, task, dc, ev.predictions_dir.empty() ? 0 : per_class);
    if (!ev.predictions_dir.empty())
      write_zeroshot_predictions(fs::join(ev.predictions_dir, "zeroshot_" + task.name + ".json"), task, r, dc.data,
                                 ev.checkpoint);
    out[key_prefix + "-top1"] = r.top1;
    out[key_prefix + "-top5"] = r.top5;
    log::info("Zero-shot {}: top1 {:.4f} top5 {:.4f} over {} images ({:.1f} images/s; classifier {:.2f}s for {} x {})",
              task.name, r.top1, r.top5, r.samples, r.images_per_second, r.classifier_seconds, task.classnames.size(),
              task.templates.size());
  };
  if (!ev.imagenet_val.empty()) {
    std::vector<std::string> folders;
    data::DataConfig dc = ev.base;
    dc.type = data::DatasetType::Csv;
    dc.data = folder_as_csv(ev.imagenet_val, &folders);
    dc.csv_separator = '\t', dc.csv_img_key = "filepath", dc.csv_caption_key = "title", dc.csv_label_key = "label";
    dc.csv_rgb_first = true;  // torchvision ImageFolder's pil_loader converts to RGB first
    ZeroShotTask task;
    if (!ev.classnames_file.empty() && !ev.templates_file.empty()) {
      task.name = "imagenet";  // both overrides given: the installed ImageNet metadata is not needed
    } else if (ev.classnames_file.empty() && !ev.templates_file.empty() && find_data_file("imagenet_zeroshot.json").empty()) {
      task.name = "imagenet";  // a custom folder with its own templates: folder names are the classes
      task.classnames = folders;
    } else {
      task = imagenet_task();
    }
    if (ev.classnames_file.empty() && task.classnames.size() != folders.size()) {
      log::warn("{} has {} class folders, not ImageNet's {}: using the folder names as class names", ev.imagenet_val,
                folders.size(), task.classnames.size());
      task.classnames = folders;
    }
    zs(task, dc, "imagenet-zeroshot-val");
    std::remove(dc.data.c_str());
  }
  if (!ev.zeroshot_data.empty()) {
    ZeroShotTask task;
    if (!ev.zeroshot_task.empty()) task = load_zeroshot_task(ev.zeroshot_task);
    else if (ev.classnames_file.empty())
      OC_USER_ERROR("--zeroshot-data needs class names: --zeroshot-classnames FILE (or a task JSON)");
    data::DataConfig dc = ev.base;
    dc.type = data::DatasetType::Auto;
    dc.data = ev.zeroshot_data;
    if (dc.csv_label_key.empty()) dc.csv_label_key = "label";
    zs(task, dc, task.name + "-zeroshot");
  }
  if (!ev.val_data.empty())
    for (auto& [k, v] : run_retrieval(model, tok, ev)) out[k] = v;
  return out;
}

}  // namespace oc
