#include "eval/eval_run.h"

#include "core/check.h"
#include "core/fs.h"
#include "model/inference.h"

namespace oc {

std::map<std::string, double> eval(const EvalArgs& a) {
  EvalData ev = a.data;
  if (ev.imagenet_val.empty() && ev.zeroshot_data.empty() && ev.val_data.empty())
    OC_USER_ERROR("nothing to evaluate: give --imagenet-val, --zeroshot-data or --val-data");
  const ModelSource src = resolve_model_source(a.model, a.pretrained);
  if (src.weights.empty())
    OC_USER_ERROR("eval needs --pretrained WEIGHTS|TAG|hf-hub:ORG/NAME (or --model a hub folder or hf-hub:ORG/NAME)");
  InferenceOptions o;
  o.precision = a.precision;
  o.int8_scales = a.int8_scales;
  o.device = a.device;
  o.max_batch = a.batch_size;
  o.threads = a.threads;
  o.preprocess = ev.base.preprocess;  // the data options' preprocessing, under the source's preprocess_cfg
  InferenceModel model(src, o);
  ev.base.context_length = model.context_length();
  ev.base.preprocess = model.preprocess_cfg();
  ev.batch_size = a.batch_size;
  if (ev.checkpoint.empty()) ev.checkpoint = src.weights;
  if (!ev.predictions_dir.empty()) fs::make_dirs(ev.predictions_dir);
  return evaluate(model.clip(), model.tokenizer(), ev);
}

}  // namespace oc
