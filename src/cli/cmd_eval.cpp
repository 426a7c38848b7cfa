// openclip eval: zero-shot and retrieval metrics of a trained model (OpenCLIP's eval-only
// mode: main.py without --train-data).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/options.h"
#include "core/parallel.h"
#include "data/dataset.h"
#include "eval/evaluate.h"
#include "model/weights.h"

namespace oc::cli {
namespace {

int run(const std::vector<std::string>& args) {
  std::vector<OptionSpec> specs = {
      {"model", OptType::String, "ViT-B-32", "model config name or JSON path"},
      {"pretrained", OptType::String, "", "weights (.pt/.bin/.pth/.safetensors, or an epoch_N.pt checkpoint)"},
      {"imagenet-val", OptType::String, "", "ImageNet-style val folder (one sub-folder per class)"},
      {"zeroshot-data", OptType::String, "", "labelled webdataset (cls) or CSV (--csv-label-key) for zero-shot"},
      {"zeroshot-classnames", OptType::String, "", "class names: a task JSON or one name per line"},
      {"zeroshot-templates", OptType::String, "", "templates, one per line with {c}"},
      {"batch-size", OptType::Int, "64", "batch size"},
      {"workers", OptType::Int, "2", "data loader threads"},
      {"precision", OptType::String, "fp32", "fp32 or amp_bf16"},
      {"device", OptType::String, "cpu", "compute backend: cpu, ref (`openclip info` lists them)"},
      {"threads", OptType::Int, "0", "compute threads (0 = all cores)"},
      {"predictions-dir", OptType::String, "",
       "also write each zero-shot task's per-sample predictions to DIR/zeroshot_<task>.json (for `openclip report`)"},
      {"val-dedup-images", OptType::Flag, "",
       "ours: retrieval counts several captions of one image (same key) as one image; OpenCLIP scores every row as "
       "its own pair"},
      {"json", OptType::Flag, "", "print the metrics as one JSON object"}};
  append_missing_specs(&specs, data::data_option_specs());  // --val-data, --csv-*, ...
  Options o("eval", "Evaluate a model: zero-shot top-1/top-5 and retrieval recall.", specs);
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  if (o.get_int("threads") > 0) set_num_threads(int(o.get_int("threads")));
  if (!o.has("pretrained")) OC_USER_ERROR("eval needs --pretrained WEIGHTS");
  Clip model(load_model_config(o.get("model")), ops::backend(ops::resolve_device(o.get("device"))));
  load_weights(model, o.get("pretrained"));
  model.set_precision(parse_precision(o.get("precision")));
  model.plan_inference(o.get_int("batch-size"));
  Tokenizer tok = Tokenizer::load_default();
  EvalData ev;
  Status s = data::apply_data_options(o, false, &ev.base);
  if (!s) OC_USER_ERROR("{}", s.error());
  ev.base.context_length = model.cfg().text.context_length;
  ev.base.preprocess.size = model.cfg().vision.image_size;
  ev.imagenet_val = o.get("imagenet-val");
  ev.zeroshot_data = o.get("zeroshot-data");
  const std::string cn = o.get("zeroshot-classnames");
  if (cn.size() > 5 && cn.substr(cn.size() - 5) == ".json" && !ev.zeroshot_data.empty()) ev.zeroshot_task = cn;
  else ev.classnames_file = cn;
  ev.templates_file = o.get("zeroshot-templates");
  ev.val_data = ev.base.data;
  ev.val_num_samples = ev.base.num_samples;
  ev.dedup_images = o.flag("val-dedup-images");
  ev.batch_size = int(o.get_int("batch-size"));
  ev.workers = int(o.get_int("workers"));
  ev.predictions_dir = o.get("predictions-dir");
  ev.checkpoint = o.get("pretrained");
  if (!ev.predictions_dir.empty()) fs::make_dirs(ev.predictions_dir);
  if (ev.imagenet_val.empty() && ev.zeroshot_data.empty() && ev.val_data.empty())
    OC_USER_ERROR("nothing to evaluate: give --imagenet-val, --zeroshot-data or --val-data");
  auto m = evaluate(model, tok, ev);
  if (o.flag("json")) {
    std::printf("%s\n", nlohmann::json(m).dump().c_str());
  } else {
    for (auto& [k, v] : m) std::printf("%-32s %.4f\n", k.c_str(), v);
  }
  return 0;
}

OC_REGISTER_COMMAND("eval", "zero-shot and retrieval metrics of a model (OpenCLIP's keys)", run);

}  // namespace
}  // namespace oc::cli
