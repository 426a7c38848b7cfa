#include "train/args.h"

#include "ops/backend.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <ctime>
#include <fmt/format.h>

#include "core/check.h"
#include "ops/backend.h"
#include "optim/adamw.h"

namespace oc {

Options train_options() {
  using T = OptType;
  const std::string timm = "timm optimizers are not part of openclip-cpp";
  const std::string cuda_only = "this is a CUDA/PyTorch feature with no CPU equivalent";
  return Options(
      "train",
      "Train or fine-tune a CLIP model with OpenCLIP's flags (python -m open_clip_train.main).",
      {
          // data
          {"train-data", T::String, "", "webdataset shards ('dir/{00000..00011}.tar', '::' between sources) or a CSV/TSV"},
          {"train-data-upsampling-factors", T::String, "", "'::'-separated weights, one per source (needs --dataset-resampled)"},
          {"val-data", T::String, "", "validation data (same formats) for retrieval metrics"},
          {"train-num-samples", T::Int, "", "samples per epoch (webdataset; else sizes.json or __len__ beside the shards)"},
          {"val-num-samples", T::Int, "", "validation samples (webdataset)"},
          {"val-dedup-images", T::Flag, "", "ours: retrieval counts several captions of one image (same key) as one image; OpenCLIP scores every row as its own pair"},
          {"dataset-type", T::String, "auto", "webdataset, csv, synthetic, auto (by extension)"},
          {"dataset-resampled", T::Flag, "", "sample shards with replacement"},
          {"no-shuffle", T::Flag, "", "openclip-cpp: no shard/sample shuffling (deterministic accuracy comparisons)"},
          {"csv-separator", T::String, "\t", "CSV separator (TAB by default, as OpenCLIP)"},
          {"csv-img-key", T::String, "filepath", "CSV column with image paths"},
          {"csv-caption-key", T::String, "title", "CSV column with captions"},
          {"imagenet-val", T::String, "", "ImageNet val folder (one sub-folder per class) for zero-shot"},
          {"imagenet-v2", T::String, "", "ImageNetV2 location", "ImageNetV2 needs the imagenetv2_pytorch package; use --zeroshot-data"},
          {"zeroshot-data", T::String, "", "openclip-cpp: a labelled webdataset (cls) or CSV for zero-shot eval"},
          {"zeroshot-classnames", T::String, "", "openclip-cpp: class names file (one per line, or a task JSON)"},
          {"zeroshot-templates", T::String, "", "openclip-cpp: prompt templates file (one per line with {c})"},
          {"cache-dir", T::String, "", "download cache (unused: no downloads)"},
          {"workers", T::Int, "4", "data loader threads"},
          {"batch-size", T::Int, "64", "batch size per process"},
          // optimization
          {"epochs", T::Int, "32", "epochs"},
          {"epochs-cooldown", T::Int, "", "cooldown epochs for const-cooldown"},
          {"lr", T::Float, "", "learning rate (default 5e-4)"},
          {"beta1", T::Float, "", "AdamW beta1 (default 0.9)"},
          {"beta2", T::Float, "", "AdamW beta2 (default 0.98 for ViT models, else 0.999)"},
          {"eps", T::Float, "", "AdamW epsilon (default 1e-6 for ViT models, else 1e-8)"},
          {"wd", T::Float, "0.2", "weight decay of the decay group"},
          {"momentum", T::Float, "", "momentum (timm optimizers)", timm},
          {"warmup", T::Int, "10000", "warmup steps"},
          {"opt", T::String, "adamw", "optimizer (adamw)"},
          {"use-bn-sync", T::Flag, "", "SyncBatchNorm", "ViT models have no BatchNorm"},
          {"skip-scheduler", T::Flag, "", "keep the LR at --lr"},
          {"lr-scheduler", T::String, "cosine", "cosine, const, const-cooldown"},
          {"lr-cooldown-end", T::Float, "0.0", "end LR of the cooldown"},
          {"lr-cooldown-power", T::Float, "1.0", "polynomial power of the cooldown"},
          {"accum-freq", T::Int, "1", "gradient accumulation steps (OpenCLIP's feature caching)"},
          {"grad-clip-norm", T::Float, "", "clip the global gradient L2 norm"},
          {"grad-checkpointing", T::Flag, "", "recompute each block in backward (less memory)"},
          {"local-loss", T::Flag, "", "distributed: logits of local features against all"},
          {"gather-with-grad", T::Flag, "", "distributed: all-gather with gradient"},
          {"global-batch-gradient", T::Flag, "",
           "ours: in the default distributed loss (no --gather-with-grad, no --local-loss) give the towers the "
           "single-process gradient of the global batch; OpenCLIP's default gives them 1/world of it"},
          {"lock-image", T::Flag, "", "freeze the image tower (LiT)"},
          {"lock-image-unlocked-groups", T::Int, "0", "leave the last N image groups trainable"},
          {"lock-image-freeze-bn-stats", T::Flag, "", "freeze BatchNorm stats (no effect on ViTs)"},
          {"lock-text", T::Flag, "", "freeze the text tower"},
          {"lock-text-unlocked-layers", T::Int, "0", "leave the last N text groups trainable"},
          {"lock-text-freeze-layer-norm", T::Flag, "", "also freeze LayerNorms of unlocked text groups"},
          {"seed", T::Int, "0", "random seed"},
          {"siglip", T::Flag, "", "SigLIP's sigmoid loss (init logit_scale ln 10, logit_bias -10; neighbour exchange across ranks)"},
          {"loss-dist-impl", T::String, "", "SigLIP's distributed implementation: bidir (OpenCLIP 2.24's, the only one built)"},
          {"coca-caption-loss-weight", T::Float, "2.0", "CoCa caption loss weight"},
          {"coca-contrastive-loss-weight", T::Float, "1.0", "CoCa contrastive loss weight"},
          {"distill-model", T::String, "", "teacher model", "distillation is not built yet"},
          {"distill-pretrained", T::String, "", "teacher weights", "distillation is not built yet"},
          // model
          {"model", T::String, "ViT-B-32", "model config name or JSON path (OpenCLIP's default RN50 is not supported)"},
          {"pretrained", T::String, "", "weights file (.pt/.bin/.pth/.safetensors) to start from"},
          {"pretrained-image", T::Flag, "", "timm ImageNet weights", "timm towers are not supported"},
          {"image-mean", T::List, "", "normalization mean (3 values)"},
          {"image-std", T::List, "", "normalization std (3 values)"},
          {"image-interpolation", T::String, "", "bicubic or bilinear"},
          {"image-resize-mode", T::String, "", "shortest, longest, squash (eval)"},
          {"aug-cfg", T::List, "", "augmentation: scale=(a,b) ratio=(a,b)"},
          {"force-context-length", T::Int, "", "override the text context length"},
          {"force-image-size", T::Int, "", "override the image size"},
          {"force-quick-gelu", T::Flag, "", "QuickGELU in both towers"},
          {"force-patch-dropout", T::Float, "", "patch dropout", "patch dropout is not built yet"},
          {"force-custom-text", T::Flag, "", "CustomTextCLIP layout", "the text.* layout is not built yet"},
          {"torchscript", T::Flag, "", "TorchScript", cuda_only},
          {"torchcompile", T::Flag, "", "torch.compile", cuda_only},
          {"trace", T::Flag, "", "torch.jit.trace", cuda_only},
          {"use-bnb-linear", T::String, "", "bitsandbytes linear", cuda_only},
          // precision / device / distributed
          {"precision", T::String, "amp", "amp, amp_bf16, amp_bfloat16, bf16, pure_bf16, fp32 (amp = bf16 autocast on CPU)"},
          {"device", T::String, "cpu", "compute backend: cpu, ref (plain reference loops; `openclip info` lists them)"},
          {"dist-url", T::String, "", "distributed init URL (MPI is used)"},
          {"dist-backend", T::String, "", "distributed backend (mpi)"},
          {"horovod", T::Flag, "", "Horovod", "use mpirun: the MPI communicator replaces Horovod"},
          {"ddp-static-graph", T::Flag, "", "accepted for compatibility (no effect)"},
          {"no-set-device-rank", T::Flag, "", "accepted for compatibility (no effect on CPU)"},
          {"threads", T::Int, "0", "openclip-cpp: compute threads per process (0 = all cores)"},
          // logging
          {"logs", T::String, "./logs/", "where run folders go ('none' disables checkpoints and TensorBoard)"},
          {"log-local", T::Flag, "", "each node's local rank 0 writes its own log file, out-<rank> (OpenCLIP's name, no extension)"},
          {"name", T::String, "", "run name (default: date-model-lr-batch-workers-precision)"},
          {"report-to", T::String, "", "'tensorboard' (wandb is not available offline)"},
          {"wandb-notes", T::String, "", "wandb notes"},
          {"wandb-project-name", T::String, "open-clip", "wandb project"},
          {"debug", T::Flag, "", "debug logging"},
          {"log-every-n-steps", T::Int, "100", "log interval in optimizer steps"},
          {"copy-codebase", T::Flag, "", "copy the code into the run folder", "not meaningful for a binary"},
          // checkpointing / eval
          {"save-frequency", T::Int, "1", "save epoch_N.pt every N epochs (0: never, except the last)"},
          {"save-most-recent", T::Flag, "", "also keep checkpoints/epoch_latest.pt"},
          {"delete-previous-checkpoint", T::Flag, "", "delete epoch_{N-1}.pt after saving epoch_N.pt"},
          {"checkpoint-every-n-steps", T::Int, "0", "openclip-cpp: also save a resumable checkpoint every N steps"},
          {"keep-step-checkpoints", T::Int, "2",
           "openclip-cpp: keep the newest K step checkpoints (epoch_E_step_S.pt), delete older ones (0: keep all)"},
          {"resume", T::String, "", "checkpoint path or 'latest'"},
          {"remote-sync", T::String, "", "remote sync target", "no network access"},
          {"remote-sync-frequency", T::Int, "300", "remote sync interval"},
          {"remote-sync-protocol", T::String, "s3", "remote sync protocol"},
          {"zeroshot-frequency", T::Int, "2", "zero-shot eval every N epochs"},
          {"val-frequency", T::Int, "1", "val-data eval every N epochs"},
          {"max-bad-steps", T::Int, "10", "openclip-cpp: stop after N non-finite steps in a row"},
      });
}

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

TrainArgs resolve_train_args(const Options& o) {
  TrainArgs a;
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
  a.imagenet_val = o.get("imagenet-val");
  a.zeroshot_data = o.get("zeroshot-data");
  a.zeroshot_classnames = o.get("zeroshot-classnames");
  a.zeroshot_templates = o.get("zeroshot-templates");
  a.workers = int(o.get_int("workers"));
  a.batch_size = int(o.get_int("batch-size"));
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
  if (o.get("opt") != "adamw") OC_USER_ERROR("--opt {}: only adamw is available", o.get("opt"));
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
  a.pretrained = o.get("pretrained");
  a.precision = o.get("precision");
  a.image_mean = o.float_list("image-mean");
  a.image_std = o.float_list("image-std");
  a.image_interpolation = o.get("image-interpolation");
  a.image_resize_mode = o.get("image-resize-mode");
  a.aug_cfg = o.get("aug-cfg");
  a.force_context_length = o.has("force-context-length") ? int(o.get_int("force-context-length")) : 0;
  a.force_image_size = o.has("force-image-size") ? int(o.get_int("force-image-size")) : 0;
  a.force_quick_gelu = o.flag("force-quick-gelu");
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
  if (a.keep_step_checkpoints < 0)
    OC_USER_ERROR("--keep-step-checkpoints {}: give 0 (keep all) or a positive count", a.keep_step_checkpoints);
  a.resume = o.get("resume");
  a.zeroshot_frequency = int(o.get_int("zeroshot-frequency"));
  a.val_frequency = int(o.get_int("val-frequency"));
  a.max_bad_steps = int(o.get_int("max-bad-steps"));
  a.threads = int(o.get_int("threads"));
  a.device = ops::resolve_device(o.get("device"));

  // Checks OpenCLIP makes (or should): each names the flag.
  if (a.batch_size <= 0) OC_USER_ERROR("--batch-size must be positive, got {}", a.batch_size);
  if (a.epochs < 0) OC_USER_ERROR("--epochs must be >= 0, got {}", a.epochs);
  if (a.workers < 0) OC_USER_ERROR("--workers must be >= 0, got {}", a.workers);
  if (a.accum_freq < 1) OC_USER_ERROR("--accum-freq must be >= 1, got {}", a.accum_freq);
  if (a.warmup < 0) OC_USER_ERROR("--warmup must be >= 0, got {}", a.warmup);
  if (!(a.lr >= 0)) OC_USER_ERROR("--lr must be >= 0, got {}", a.lr);
  if (a.log_every_n_steps < 1) OC_USER_ERROR("--log-every-n-steps must be >= 1");
  if (a.siglip && (a.local_loss || a.gather_with_grad || a.global_batch_gradient))
    OC_USER_ERROR("--siglip exchanges text features between neighbouring ranks; --local-loss, --gather-with-grad and "
                  "--global-batch-gradient belong to the contrastive loss (OpenCLIP ignores them with --siglip): "
                  "remove them");
  if (o.has("loss-dist-impl") && o.get("loss-dist-impl") != "bidir")
    OC_USER_ERROR("--loss-dist-impl {}: only bidir (OpenCLIP 2.24's neighbour exchange) is built; shift, reduce and "
                  "gather give the same loss and gradients", o.get("loss-dist-impl"));
  if (a.siglip && a.accum_freq > 1)
    OC_USER_ERROR("--siglip with --accum-freq {}: gradient accumulation is built for the contrastive loss only",
                  a.accum_freq);
  if (a.global_batch_gradient && (a.local_loss || a.gather_with_grad))
    OC_USER_ERROR("--global-batch-gradient changes the default distributed loss only, not --local-loss or "
                  "--gather-with-grad (--gather-with-grad already gives the global batch's gradient)");
  if (!a.upsampling_factors.empty() && !a.dataset_resampled)
    OC_USER_ERROR("--train-data-upsampling-factors is only supported with --dataset-resampled");
  if (a.lr_scheduler == "const-cooldown" && a.epochs_cooldown <= 0)
    OC_USER_ERROR("--lr-scheduler const-cooldown needs --epochs-cooldown");
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

}  // namespace oc
