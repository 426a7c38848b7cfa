#include "train/args.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>

#include "core/check.h"
#include "core/flags.h"
#include "model/model_source.h"
#include "ops/registry.h"
#include "optim/adamw.h"

namespace oc {

std::string python_float_str(double v) {
  // Python's repr(float): shortest round-trip digits; exponent form below 1e-4 or from 1e16.
  for (int prec = 1; prec <= 17; ++prec) {
    std::string s = fmt::format("{:.{}g}", v, prec);
    if (std::strtod(s.c_str(), nullptr) != v) continue;
    auto e = s.find('e');
    if (e != std::string::npos) {  // 5e-05 style: at least two exponent digits, as Python
      std::string mant = s.substr(0, e), ex = s.substr(e + 1);
      const char sign = ex[0] == '-' ? '-' : '+';
      if (ex[0] == '-' || ex[0] == '+') ex = ex.substr(1);
      while (ex.size() > 1 && ex[0] == '0') ex = ex.substr(1);
      if (ex.size() < 2) ex = "0" + ex;
      return mant + "e" + sign + ex;
    }
    if (s.find('.') == std::string::npos) s += ".0";
    return s;
  }
  return fmt::format("{}", v);
}

std::string default_run_name(const TrainArgs& a, long unix_time) {
  std::time_t t = unix_time;
  std::tm tm{};
  localtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof date, "%Y_%m_%d-%H_%M_%S", &tm);
  std::string model = a.model;
  std::replace(model.begin(), model.end(), '/', '-');
  return fmt::format("{}-model_{}-lr_{}-b_{}-j_{}-p_{}", date, model, python_float_str(a.lr), a.batch_size, a.workers,
                     precision_label(a));
}

std::string precision_label(const TrainArgs& a) {
  for (const auto& [spelling, p] : kPrecisionNames)
    if (spelling == a.precision_spelled && p == a.precision) return a.precision_spelled;
  return precision_name(a.precision);
}

TrainArgs resolve_train_args(const Options& o) {
  TrainArgs a;
  fill_flags(o, &a);  // each flag writes its field (cli/flags_train.cpp)
  for (auto& s : o.specs()) a.flags[s.name] = o.get(s.name);
  // Single-flag checks (ranges, choices) and the cross-flag rules ran in the parser
  // (cli/flags_*.cpp); these need several fields.
  if (!(a.dist_timeout > 0)) OC_USER_ERROR("--dist-timeout {}: must be positive seconds", a.dist_timeout);
  // Where OpenCLIP 2.24's behaviour is a trap, refused (docs/CLI.md "Refused where 2.24 misbehaves").
  if (a.delete_previous_checkpoint && a.save_frequency > 1)
    OC_USER_ERROR("--delete-previous-checkpoint with --save-frequency {}: OpenCLIP 2.24 deletes epoch_<N-1>.pt after "
                  "every epoch, so each saved checkpoint is removed one epoch later and most epochs end with none; "
                  "use --save-frequency 1, or --save-most-recent without --delete-previous-checkpoint",
                  a.save_frequency);
  a.device = ops::resolve_device(a.device);  // unknown: an error listing the available backends
  if (a.report_to.find("wandb") != std::string::npos || a.report_to == "all")
    OC_USER_ERROR("--report-to {}: wandb is not available (no network); use --report-to tensorboard", a.report_to);
  if (!a.report_to.empty() && a.report_to.find("tensorboard") == std::string::npos)
    OC_USER_ERROR("--report-to {}: only tensorboard is available", a.report_to);
  if (!a.image_mean.empty() && a.image_mean.size() != 3 && a.image_mean.size() != 1)
    OC_USER_ERROR("--image-mean takes 1 or 3 values, got {}", a.image_mean.size());
  if (!a.image_std.empty() && a.image_std.size() != 3 && a.image_std.size() != 1)
    OC_USER_ERROR("--image-std takes 1 or 3 values, got {}", a.image_std.size());
  for (size_t i = 0; i < a.image_mean.size(); i++)
    if (!(std::abs(a.image_mean[i]) <= kMaxMean))  // NaN fails too
      OC_USER_ERROR("--image-mean value {} is {}; it must be within +-{} (pixels are in [0, 1])", i + 1,
                    a.image_mean[i], kMaxMean);
  for (size_t i = 0; i < a.image_std.size(); i++)
    if (!(a.image_std[i] >= kMinStd && a.image_std[i] <= kMaxStd))  // 0 made every loss NaN
      OC_USER_ERROR("--image-std value {} is {}; it must be from {} to {} (pixels are in [0, 1])", i + 1,
                    a.image_std[i], kMinStd, kMaxStd);
  return a;
}

AdamWCfg adamw_cfg(const TrainArgs& a) {
  AdamWCfg c = default_adamw(a.model);
  c.lr = a.lr, c.wd = a.wd;
  c.beta1 = a.beta1.value_or(c.beta1), c.beta2 = a.beta2.value_or(c.beta2), c.eps = a.eps.value_or(c.eps);
  return c;
}

TrainArgs train_defaults(const std::string& model) {
  Options o = options_for("train");
  o.parse({"--model", model});
  return resolve_train_args(o);
}

std::map<std::string, std::string> train_settings(const TrainArgs& a) {
  std::map<std::string, std::string> v;
  auto str = [](const std::string& s) { return s.empty() ? std::string("None") : s; };
  auto flag = [](bool b) { return std::string(b ? "True" : "False"); };
  auto num = [](double d) { return python_float_str(d); };
  auto opt_int = [](int64_t i) { return i > 0 ? std::to_string(i) : std::string("None"); };
  auto list = [](const std::vector<double>& l) {
    std::string s;
    for (double d : l) s += (s.empty() ? "" : " ") + python_float_str(d);
    return s.empty() ? std::string("None") : s;
  };
  // Flags without a field (accepted for compatibility): as given.
  for (auto& [k, val] : a.flags) v[k] = val.empty() ? "None" : val == "true" ? "True" : val == "false" ? "False" : val;
  v["train-data"] = str(a.train_data), v["val-data"] = str(a.val_data), v["dataset-type"] = data::dataset_type_name(a.dataset_type);
  v["csv-separator"] = a.csv_separator, v["csv-img-key"] = a.csv_img_key, v["csv-caption-key"] = a.csv_caption_key;
  v["csv-label-key"] = str(a.csv_label_key), v["imagenet-val"] = str(a.imagenet_val);
  v["train-data-upsampling-factors"] = str(a.upsampling_factors), v["zeroshot-data"] = str(a.zeroshot_data);
  v["zeroshot-classnames"] = str(a.zeroshot_classnames), v["zeroshot-templates"] = str(a.zeroshot_templates);
  v["train-num-samples"] = opt_int(a.train_num_samples), v["val-num-samples"] = opt_int(a.val_num_samples);
  v["dataset-resampled"] = flag(a.dataset_resampled), v["no-shuffle"] = flag(a.no_shuffle);
  v["workers"] = std::to_string(a.workers), v["batch-size"] = std::to_string(a.batch_size);
  v["epochs"] = std::to_string(a.epochs), v["epochs-cooldown"] = opt_int(a.epochs_cooldown);
  v["accum-freq"] = std::to_string(a.accum_freq), v["seed"] = std::to_string(a.seed);
  const AdamWCfg opt = adamw_cfg(a);
  v["lr"] = num(a.lr), v["beta1"] = num(opt.beta1), v["beta2"] = num(opt.beta2), v["eps"] = num(opt.eps);
  v["wd"] = num(a.wd);
  v["grad-clip-norm"] = a.grad_clip_norm > 0 ? num(a.grad_clip_norm) : "None";
  v["warmup"] = std::to_string(a.warmup), v["lr-scheduler"] = a.lr_scheduler;
  v["lr-cooldown-end"] = num(a.lr_cooldown_end), v["lr-cooldown-power"] = num(a.lr_cooldown_power);
  v["skip-scheduler"] = flag(a.skip_scheduler), v["grad-checkpointing"] = flag(a.grad_checkpointing);
  v["allow-tf32"] = flag(a.allow_tf32);
  v["local-loss"] = flag(a.local_loss), v["gather-with-grad"] = flag(a.gather_with_grad);
  v["global-batch-gradient"] = flag(a.global_batch_gradient), v["siglip"] = flag(a.siglip);
  v["lock-image"] = flag(a.lock_image), v["lock-text"] = flag(a.lock_text);
  v["lock-text-freeze-layer-norm"] = flag(a.lock_text_freeze_layer_norm);
  v["lock-image-unlocked-groups"] = std::to_string(a.lock_image_unlocked_groups);
  v["lock-image-freeze-bn-stats"] = flag(a.lock_image_freeze_bn_stats);
  v["lock-text-unlocked-layers"] = std::to_string(a.lock_text_unlocked_layers);
  v["model"] = a.model, v["pretrained"] = str(a.pretrained), v["precision"] = precision_label(a);
  v["aug-cfg"] = str(a.aug_cfg), v["image-interpolation"] = str(a.image_interpolation);
  v["image-resize-mode"] = str(a.image_resize_mode), v["image-mean"] = list(a.image_mean);
  v["image-std"] = list(a.image_std), v["force-context-length"] = opt_int(a.force_context_length);
  v["force-image-size"] = opt_int(a.force_image_size), v["force-quick-gelu"] = flag(a.force_quick_gelu);
  v["force-custom-text"] = flag(a.force_custom_text);
  v["force-patch-dropout"] = a.force_patch_dropout >= 0 ? fmt::format("{}", a.force_patch_dropout) : "None";
  v["logs"] = a.logs, v["name"] = str(a.name), v["report-to"] = str(a.report_to), v["resume"] = str(a.resume);
  v["val-dedup-images"] = flag(a.val_dedup_images), v["log-local"] = flag(a.log_local), v["debug"] = flag(a.debug);
  v["save-most-recent"] = flag(a.save_most_recent);
  v["delete-previous-checkpoint"] = flag(a.delete_previous_checkpoint);
  v["log-every-n-steps"] = std::to_string(a.log_every_n_steps), v["save-frequency"] = std::to_string(a.save_frequency);
  v["zeroshot-frequency"] = std::to_string(a.zeroshot_frequency), v["val-frequency"] = std::to_string(a.val_frequency);
  v["max-bad-steps"] = std::to_string(a.max_bad_steps);
  v["checkpoint-every-n-steps"] = std::to_string(a.checkpoint_every_n_steps);
  v["keep-step-checkpoints"] = std::to_string(a.keep_step_checkpoints), v["threads"] = std::to_string(a.threads);
  v["dist-timeout"] = num(a.dist_timeout);
  std::map<std::string, std::string> out;
  for (auto& [k, val] : v) {
    std::string key = k;
    std::replace(key.begin(), key.end(), '-', '_');
    out[key] = val;
  }
  return out;
}

}  // namespace oc
