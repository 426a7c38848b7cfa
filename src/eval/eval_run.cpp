#include "eval/eval_run.h"

#include "core/check.h"
#include "core/fs.h"
#include "core/parallel.h"
#include "model/clip.h"
#include "model/model_source.h"
#include "ops/backend.h"
#include "model/weights.h"
#include "eval/tokenizer.h"

namespace oc {

namespace {
// The hub folder's or pretrained tag's preprocess_cfg (eval has no --image-* flags to override it).
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

std::map<std::string, double> eval(const EvalArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  EvalData ev = a.data;
  if (ev.imagenet_val.empty() && ev.zeroshot_data.empty() && ev.val_data.empty())
    OC_USER_ERROR("nothing to evaluate: give --imagenet-val, --zeroshot-data or --val-data");
  const ModelSource src = resolve_model_source(a.model, a.pretrained);
  if (src.weights.empty()) OC_USER_ERROR("eval needs --pretrained WEIGHTS (or --model a hub folder with weights)");
  Clip model(src.cfg, ops::backend(ops::resolve_device(a.device)));
  load_weights(model, src.weights);
  apply_hint(src.preprocess, &ev.base.preprocess);
  model.set_precision(a.precision);
  model.plan_inference(a.batch_size);
  ev.base.context_length = model.cfg().text.context_length;
  ev.base.preprocess.size = model.cfg().vision.image_size;
  ev.batch_size = a.batch_size;
  if (ev.checkpoint.empty()) ev.checkpoint = src.weights;
  if (!ev.predictions_dir.empty()) fs::make_dirs(ev.predictions_dir);
  return evaluate(model, model_tokenizer(model.cfg()), ev);
}

}  // namespace oc
