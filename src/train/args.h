// The settings of a training run (TrainArgs), resolved from `openclip train`'s flags
// (declared in cli/flags_train.cpp: OpenCLIP's params.py with its defaults, plus ours).
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "core/options.h"
#include "data/dataset.h"
#include "model/precision.h"

namespace oc {

struct AdamWCfg;

// The settings of a training run: what train(const TrainArgs&) takes. The CLI fills it from
// the flags (resolve_train_args: each registry entry writes its field, with the registry's
// defaults); a program starts from train_defaults() and sets fields. A field without an
// initializer here takes the registry's default; the ones with one hold OpenCLIP's None.
struct TrainArgs : data::DataFlags {
  using FlagParts = std::tuple<data::DataFlags>;  // the data flags are bound to the base
  // optimization
  int epochs = 0, epochs_cooldown = 0, accum_freq = 0, seed = 0;  // epochs_cooldown 0: None
  double lr = 5e-4;                         // None: OpenCLIP's 5e-4 for every model
  std::optional<double> beta1, beta2, eps;  // None: OpenCLIP's default for the model (adamw_cfg)
  double wd = 0, grad_clip_norm = 0;        // grad_clip_norm 0: None (no clipping)
  int64_t warmup = 0;
  std::string lr_scheduler;
  double lr_cooldown_end = 0, lr_cooldown_power = 0;
  bool skip_scheduler = false, grad_checkpointing = false, allow_tf32 = false, local_loss = false, gather_with_grad = false,
       global_batch_gradient = false, siglip = false;
  bool lock_image = false, lock_text = false, lock_text_freeze_layer_norm = false, lock_image_freeze_bn_stats = false;
  int lock_image_unlocked_groups = 0, lock_text_unlocked_layers = 0;
  // model
  std::string model, pretrained, aug_cfg, image_interpolation, image_resize_mode;
  // --precision: the mode, and the flag as spelled (OpenCLIP's run name and params.txt show the
  // spelling: `amp` and `amp_bfloat16` select AmpBf16 too). A program that sets `precision`
  // may leave the spelling: one that does not name the mode is not shown (precision_label).
  Precision precision = Precision::AmpBf16;
  std::string precision_spelled;
  std::string cache_dir;  // --cache-dir: where --pretrained TAG's weights are looked for
  std::string device;     // a registered backend (ops::resolve_device)
  std::vector<double> image_mean, image_std;
  int force_context_length = 0, force_image_size = 0;  // 0: None
  bool force_quick_gelu = false, force_custom_text = false;
  double force_patch_dropout = -1;  // < 0: None (the config's)
  // logging / checkpoints / eval
  std::string logs, name, report_to, resume;
  bool log_local = false, debug = false, save_most_recent = false, delete_previous_checkpoint = false;
  int log_every_n_steps = 0, save_frequency = 0, zeroshot_frequency = 0, val_frequency = 0, max_bad_steps = 0;
  int64_t checkpoint_every_n_steps = 0;
  int keep_step_checkpoints = 0;  // newest step checkpoints kept (0: all)
  int threads = 0;
  double dist_timeout = 0;  // seconds a collective waits for the other ranks
  // Every flag of `openclip train` as given or defaulted ("flag-name" -> value), for the
  // settings OpenCLIP logs that have no field here (no-op flags); train_settings() lays the
  // fields over it.
  std::map<std::string, std::string> flags;
  // Optional, for programs (no flag): asked after every optimizer step with the steps done
  // and the training seconds so far, returns the run's total optimizer steps: the LR schedule
  // follows it and the run ends after that step (within --epochs), with the final evaluation
  // and checkpoint. 0 keeps the plan. `openclip demo --minutes` sizes its run with it.
  std::function<int64_t(int64_t steps_done, double train_seconds)> replan;
};

// The settings from `openclip train`'s parsed flags, checked where a check needs several fields.
TrainArgs resolve_train_args(const Options& o);
// The optimizer's settings: --lr, --wd and the betas and eps given, else OpenCLIP's for the model.
AdamWCfg adamw_cfg(const TrainArgs& a);
// The registry's defaults of `openclip train` for this model, resolved (batch 64, AdamW's
// betas and eps by model name as OpenCLIP, ...).
TrainArgs train_defaults(const std::string& model = "ViT-B-32");
// params.txt and the "Params:" log: every setting as "name_with_underscores" -> value, in
// OpenCLIP's notation (None, True/False, Python floats).
std::map<std::string, std::string> train_settings(const TrainArgs& a);

// OpenCLIP's default run name: "%Y_%m_%d-%H_%M_%S-model_<m>-lr_<lr>-b_<bs>-j_<w>-p_<prec>"
// with lr printed as Python's str(float) does (0.0005, 0.001, 5e-05).
std::string default_run_name(const TrainArgs& a, long unix_time);
// --precision as the run shows it: precision_spelled where it names `precision`, else the mode's name.
std::string precision_label(const TrainArgs& a);
std::string python_float_str(double v);

}  // namespace oc
