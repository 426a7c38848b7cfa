#include "train/args.h"

#include "ops/registry.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <fmt/format.h>

#include "core/check.h"
#include "core/flags.h"
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
                     a.precision);
}

namespace {

void resolve_data(const Options& o, TrainArgs& a) {
  a.train_data = o.get("train-data");
  a.val_data = o.get("val-data");
  a.upsampling_factors = o.get("train-data-upsampling-factors");
  a.train_num_samples = o.has("train-num-samples") ? o.get_int("train-num-samples") : 0;
  a.val_num_samples = o.has("val-num-samples") ? o.get_int("val-num-samples") : 0;
  a.val_dedup_images = o.flag("val-dedup-images");
  a.dataset_type = o.get("dataset-type");
  a.dataset_resampled = o.flag("dataset-resampled");
  a.no_shuffle = o.flag("no-shuffle");
  a.csv_separator = o.get("csv-separator");
  a.csv_img_key = o.get("csv-img-key");
  a.csv_caption_key = o.get("csv-caption-key");
  a.csv_label_key = o.get("csv-label-key");
  a.imagenet_val = o.get("imagenet-val");
  a.zeroshot_data = o.get("zeroshot-data");
  a.zeroshot_classnames = o.get("zeroshot-classnames");
  a.zeroshot_templates = o.get("zeroshot-templates");
  a.workers = int(o.get_int("workers"));
  a.batch_size = int(o.get_int("batch-size"));
}

void resolve_optimization(const Options& o, TrainArgs& a) {
  a.epochs = int(o.get_int("epochs"));
  a.epochs_cooldown = o.has("epochs-cooldown") ? int(o.get_int("epochs-cooldown")) : 0;
  a.model = o.get("model");
  AdamWCfg d = default_adamw(a.model);
  a.lr = o.has("lr") ? o.get_float("lr") : 5e-4;
  a.beta1 = o.has("beta1") ? o.get_float("beta1") : d.beta1;
  a.beta2 = o.has("beta2") ? o.get_float("beta2") : d.beta2;
  a.eps = o.has("eps") ? o.get_float("eps") : d.eps;
  a.wd = o.get_float("wd");
  a.warmup = o.get_int("warmup");
  a.skip_scheduler = o.flag("skip-scheduler");
  a.lr_scheduler = o.get("lr-scheduler");
  a.lr_cooldown_end = o.get_float("lr-cooldown-end");
  a.lr_cooldown_power = o.get_float("lr-cooldown-power");
  a.accum_freq = int(o.get_int("accum-freq"));
  a.grad_clip_norm = o.has("grad-clip-norm") ? o.get_float("grad-clip-norm") : 0;
  a.grad_checkpointing = o.flag("grad-checkpointing");
  a.local_loss = o.flag("local-loss");
  a.gather_with_grad = o.flag("gather-with-grad");
  a.global_batch_gradient = o.flag("global-batch-gradient");
  a.siglip = o.flag("siglip");
  a.lock_image = o.flag("lock-image");
  a.lock_image_unlocked_groups = int(o.get_int("lock-image-unlocked-groups"));
  a.lock_text = o.flag("lock-text");
  a.lock_text_unlocked_layers = int(o.get_int("lock-text-unlocked-layers"));
  a.lock_text_freeze_layer_norm = o.flag("lock-text-freeze-layer-norm");
  a.seed = int(o.get_int("seed"));
}

void resolve_model_and_logging(const Options& o, TrainArgs& a) {
  a.pretrained = o.get("pretrained");
  a.cache_dir = o.get("cache-dir");
  a.precision = o.get("precision");
  a.image_mean = o.float_list("image-mean");
  a.image_std = o.float_list("image-std");
  a.image_interpolation = o.get("image-interpolation");
  a.image_resize_mode = o.get("image-resize-mode");
  a.aug_cfg = o.get("aug-cfg");
  a.force_context_length = o.has("force-context-length") ? int(o.get_int("force-context-length")) : 0;
  a.force_image_size = o.has("force-image-size") ? int(o.get_int("force-image-size")) : 0;
  a.force_quick_gelu = o.flag("force-quick-gelu");
  a.force_patch_dropout = o.has("force-patch-dropout") ? o.get_float("force-patch-dropout") : -1;
  a.logs = o.get("logs");
  a.log_local = o.flag("log-local");
  a.name = o.get("name");
  a.report_to = o.get("report-to");
  a.debug = o.flag("debug");
  a.log_every_n_steps = int(o.get_int("log-every-n-steps"));
  a.save_frequency = int(o.get_int("save-frequency"));
  a.save_most_recent = o.flag("save-most-recent");
  a.delete_previous_checkpoint = o.flag("delete-previous-checkpoint");
  a.checkpoint_every_n_steps = o.get_int("checkpoint-every-n-steps");
  a.keep_step_checkpoints = int(o.get_int("keep-step-checkpoints"));
  a.resume = o.get("resume");
  a.zeroshot_frequency = int(o.get_int("zeroshot-frequency"));
  a.val_frequency = int(o.get_int("val-frequency"));
  a.max_bad_steps = int(o.get_int("max-bad-steps"));
  a.threads = int(o.get_int("threads"));
  a.dist_timeout = o.get_float("dist-timeout");
  if (!(a.dist_timeout > 0)) OC_USER_ERROR("--dist-timeout {}: must be positive seconds", a.dist_timeout);
  // Where OpenCLIP 2.24's behaviour is a trap, refused (docs/CLI.md "Refused where 2.24 misbehaves").
  if (a.delete_previous_checkpoint && a.save_frequency > 1)
    OC_USER_ERROR("--delete-previous-checkpoint with --save-frequency {}: OpenCLIP 2.24 deletes epoch_<N-1>.pt after "
                  "every epoch, so each saved checkpoint is removed one epoch later and most epochs end with none; "
                  "use --save-frequency 1, or --save-most-recent without --delete-previous-checkpoint",
                  a.save_frequency);
  if (o.has("grad-clip-norm") && !(o.get_float("grad-clip-norm") > 0))
    OC_USER_ERROR("--grad-clip-norm {}: OpenCLIP 2.24 scales every gradient by max_norm / norm (clip_grad_norm_), so "
                  "0 zeroes all of them (the weights only decay) and a negative value reverses them; give a positive "
                  "norm, or leave the flag out for no clipping",
                  o.get("grad-clip-norm"));
  for (auto& s : o.specs()) a.flags[s.name] = o.get(s.name);
  a.device = ops::resolve_device(o.get("device"));  // unknown: an error listing the available backends
}

}  // namespace

TrainArgs resolve_train_args(const Options& o) {
  TrainArgs a;
  resolve_data(o, a);
  resolve_optimization(o, a);
  resolve_model_and_logging(o, a);
  // Single-flag checks (ranges, choices) and the cross-flag rules ran in the parser
  // (core/flags*.cpp); these need the values resolved above.
  if (a.report_to.find("wandb") != std::string::npos || a.report_to == "all")
    OC_USER_ERROR("--report-to {}: wandb is not available (no network); use --report-to tensorboard", a.report_to);
  if (!a.report_to.empty() && a.report_to.find("tensorboard") == std::string::npos)
    OC_USER_ERROR("--report-to {}: only tensorboard is available", a.report_to);
  if (!a.image_mean.empty() && a.image_mean.size() != 3 && a.image_mean.size() != 1)
    OC_USER_ERROR("--image-mean takes 1 or 3 values, got {}", a.image_mean.size());
  if (!a.image_std.empty() && a.image_std.size() != 3 && a.image_std.size() != 1)
    OC_USER_ERROR("--image-std takes 1 or 3 values, got {}", a.image_std.size());
  return a;
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
  v["train-data"] = str(a.train_data), v["val-data"] = str(a.val_data), v["dataset-type"] = a.dataset_type;
  v["csv-separator"] = a.csv_separator, v["csv-img-key"] = a.csv_img_key, v["csv-caption-key"] = a.csv_caption_key;
  v["csv-label-key"] = str(a.csv_label_key), v["imagenet-val"] = str(a.imagenet_val);
  v["train-data-upsampling-factors"] = str(a.upsampling_factors), v["zeroshot-data"] = str(a.zeroshot_data);
  v["zeroshot-classnames"] = str(a.zeroshot_classnames), v["zeroshot-templates"] = str(a.zeroshot_templates);
  v["train-num-samples"] = opt_int(a.train_num_samples), v["val-num-samples"] = opt_int(a.val_num_samples);
  v["dataset-resampled"] = flag(a.dataset_resampled), v["no-shuffle"] = flag(a.no_shuffle);
  v["workers"] = std::to_string(a.workers), v["batch-size"] = std::to_string(a.batch_size);
  v["epochs"] = std::to_string(a.epochs), v["epochs-cooldown"] = opt_int(a.epochs_cooldown);
  v["accum-freq"] = std::to_string(a.accum_freq), v["seed"] = std::to_string(a.seed);
  v["lr"] = num(a.lr), v["beta1"] = num(a.beta1), v["beta2"] = num(a.beta2), v["eps"] = num(a.eps), v["wd"] = num(a.wd);
  v["grad-clip-norm"] = a.grad_clip_norm > 0 ? num(a.grad_clip_norm) : "None";
  v["warmup"] = std::to_string(a.warmup), v["lr-scheduler"] = a.lr_scheduler;
  v["lr-cooldown-end"] = num(a.lr_cooldown_end), v["lr-cooldown-power"] = num(a.lr_cooldown_power);
  v["skip-scheduler"] = flag(a.skip_scheduler), v["grad-checkpointing"] = flag(a.grad_checkpointing);
  v["local-loss"] = flag(a.local_loss), v["gather-with-grad"] = flag(a.gather_with_grad);
  v["global-batch-gradient"] = flag(a.global_batch_gradient), v["siglip"] = flag(a.siglip);
  v["lock-image"] = flag(a.lock_image), v["lock-text"] = flag(a.lock_text);
  v["lock-text-freeze-layer-norm"] = flag(a.lock_text_freeze_layer_norm);
  v["lock-image-unlocked-groups"] = std::to_string(a.lock_image_unlocked_groups);
  v["lock-text-unlocked-layers"] = std::to_string(a.lock_text_unlocked_layers);
  v["model"] = a.model, v["pretrained"] = str(a.pretrained), v["precision"] = a.precision;
  v["aug-cfg"] = str(a.aug_cfg), v["image-interpolation"] = str(a.image_interpolation);
  v["image-resize-mode"] = str(a.image_resize_mode), v["image-mean"] = list(a.image_mean);
  v["image-std"] = list(a.image_std), v["force-context-length"] = opt_int(a.force_context_length);
  v["force-image-size"] = opt_int(a.force_image_size), v["force-quick-gelu"] = flag(a.force_quick_gelu);
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
