// openclip eval: zero-shot and retrieval metrics of a trained model (OpenCLIP's eval-only
// mode: main.py without --train-data).
#include <cstdio>
#include <nlohmann/json.hpp>

#include "cli/args.h"
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
  EvalCommandArgs e;
  if (!parse_flags("eval", args, &e)) return 0;
  EvalData& ev = e.data;
  Status s = data::data_config(e, /*train=*/false, &ev.base);
  if (!s) OC_USER_ERROR("{}", s.error());
  ev.imagenet_val = e.imagenet_val;
  ev.zeroshot_data = e.zeroshot_data;
  set_zeroshot_classnames(&ev, e.zeroshot_classnames);
  ev.templates_file = e.zeroshot_templates;
  ev.val_data = ev.base.data;
  ev.val_num_samples = ev.base.num_samples;
  ev.dedup_images = e.val_dedup_images;
  ev.workers = e.workers;
  const std::map<std::string, double> m = eval(e);
  if (e.json) {
    std::printf("%s\n", nlohmann::json(m).dump().c_str());
  } else {
    for (auto& [k, v] : m) std::printf("%-32s %.4f\n", k.c_str(), v);
  }
  return 0;
}

OC_REGISTER_COMMAND("eval", "zero-shot and retrieval metrics of a model (OpenCLIP's keys)", run);

}  // namespace
}  // namespace oc::cli
