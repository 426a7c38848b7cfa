// openclip eval: zero-shot and retrieval metrics of a trained model (OpenCLIP's eval-only
// mode: main.py without --train-data).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/flags.h"
#include "core/parallel.h"
#include "data/dataset.h"
#include "eval/eval_run.h"
#include "model/weights.h"

namespace oc::cli {
namespace {

int run(const std::vector<std::string>& args) {
  Options o = options_for("eval");
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  EvalArgs e;
  e.model = o.get("model");
  e.pretrained = o.get("pretrained");
  e.precision = o.get("precision");
  e.device = o.get("device");
  e.batch_size = int(o.get_int("batch-size"));
  e.threads = int(o.get_int("threads"));
  EvalData& ev = e.data;
  Status s = data::apply_data_options(o, false, &ev.base);
  if (!s) OC_USER_ERROR("{}", s.error());
  ev.imagenet_val = o.get("imagenet-val");
  ev.zeroshot_data = o.get("zeroshot-data");
  set_zeroshot_classnames(&ev, o.get("zeroshot-classnames"));
  ev.templates_file = o.get("zeroshot-templates");
  ev.val_data = ev.base.data;
  ev.val_num_samples = ev.base.num_samples;
  ev.dedup_images = o.flag("val-dedup-images");
  ev.workers = int(o.get_int("workers"));
  ev.predictions_dir = o.get("predictions-dir");
  const std::map<std::string, double> m = eval(e);
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
