#include "eval/eval_run.h"

#include "core/check.h"
#include "core/fs.h"
#include "core/parallel.h"
#include "model/clip.h"
#include "ops/backend.h"
#include "model/weights.h"
#include "eval/tokenizer.h"

namespace oc {

std::map<std::string, double> eval(const EvalArgs& a) {
  if (a.threads > 0) set_num_threads(a.threads);
  if (a.pretrained.empty()) OC_USER_ERROR("eval needs --pretrained WEIGHTS");
  EvalData ev = a.data;
  if (ev.imagenet_val.empty() && ev.zeroshot_data.empty() && ev.val_data.empty())
    OC_USER_ERROR("nothing to evaluate: give --imagenet-val, --zeroshot-data or --val-data");
  Clip model(load_model_config(a.model), ops::backend(ops::resolve_device(a.device)));
  load_weights(model, a.pretrained);
  model.set_precision(parse_precision(a.precision));
  model.plan_inference(a.batch_size);
  ev.base.context_length = model.cfg().text.context_length;
  ev.base.preprocess.size = model.cfg().vision.image_size;
  ev.batch_size = a.batch_size;
  if (ev.checkpoint.empty()) ev.checkpoint = a.pretrained;
  if (!ev.predictions_dir.empty()) fs::make_dirs(ev.predictions_dir);
  return evaluate(model, model_tokenizer(model.cfg()), ev);
}

}  // namespace oc
