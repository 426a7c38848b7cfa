// The flags of `openclip train` (OpenCLIP's params.py with its defaults, plus ours: status
// "*ours*"), of `openclip eval`, and the data flags they share with other commands.
#include <fmt/format.h>

#include "cli/args.h"
#include "core/flags.h"
#include "train/args.h"

namespace oc {

namespace {
using T = OptType;
using TA = TrainArgs;
using D = data::DataFlags;  // the data flags of train and eval (TrainArgs and EvalCommandArgs derive from it)
using cli::EvalCommandArgs;
const char* kInference[] = {"eval", "classify", "embed", "index build", "serve"};  // default --precision fp32

double positive_clip_norm(double v) {
  if (!(v > 0))
    OC_USER_ERROR("--grad-clip-norm {}: OpenCLIP 2.24 scales every gradient by max_norm / norm (clip_grad_norm_), so "
                  "0 zeroes all of them (the weights only decay) and a negative value reverses them; give a positive "
                  "norm, or leave the flag out for no clipping",
                  v);
  return v;
}
}  // namespace

static void add_data_flags(FlagList* l) {
  l->section("data");
  const std::vector<std::string> te = {"train", "eval"};
  l->add("train-data", T::String, "", "training data: webdataset shards ('dir/{00000..00011}.tar', local, pipe:, "
         "http(s); '::' between sources) or a CSV/TSV file").on(te).bind(&D::train_data);
  l->add("train-data-upsampling-factors", T::String, "",
         "'::'-separated weights, one per source (needs --dataset-resampled)").on(te).bind(&D::upsampling_factors);
  l->add("val-data", T::String, "", "validation data (same formats) for retrieval metrics").on(te).bind(&D::val_data);
  l->add("train-num-samples", T::Int, "", "samples per epoch (default: sizes.json or __len__ beside the shards)").on(te).wide()
      .bind(&D::train_num_samples);
  l->add("val-num-samples", T::Int, "", "validation samples (webdataset)").on(te).wide().bind(&D::val_num_samples);
  l->add("val-dedup-images", T::Flag, "", "retrieval counts several captions of one image (same key) as one image; "
         "OpenCLIP scores every row as its own pair").on(te).ours().bind(&D::val_dedup_images);
  l->add("dataset-type", T::String, "auto", "data format; auto = by extension (synthetic-learnable is ours)")
      .on({"train", "eval", "bench data"}).choices({"auto", "webdataset", "csv", "synthetic", "synthetic-learnable"})
      .bind(&D::dataset_type, data::kDatasetTypeNames).bind(&data::DataConfig::type, data::kDatasetTypeNames);
  l->add("dataset-resampled", T::Flag, "", "sample shards with replacement (webdataset training)").on(te)
      .bind(&D::dataset_resampled);
  l->add("no-shuffle", T::Flag, "", "no shard, sample or CSV shuffling (deterministic accuracy comparisons)").on(te).ours()
      .bind(&D::no_shuffle);
  l->add("csv-separator", T::String, "\t", "CSV separator (TAB by default, as OpenCLIP; '\\t' is TAB too)")
      .on({"train", "eval", "data split", "data shards", "data inspect"}).def("data inspect", "\\t")
      .bind(&D::csv_separator).bind(&cli::DataToolArgs::csv_separator);
  l->add("csv-img-key", T::String, "filepath", "CSV column with image paths (relative to the CSV's folder)")
      .on({"train", "eval", "data split", "data shards", "data inspect"}).bind(&D::csv_img_key)
      .bind(&cli::DataToolArgs::csv_img_key);
  l->add("csv-caption-key", T::String, "title", "CSV column with captions")
      .on({"train", "eval", "data shards", "data inspect"}).bind(&D::csv_caption_key)
      .bind(&cli::DataToolArgs::csv_caption_key);
  l->add("csv-label-key", T::String, "", "optional CSV column with integer class labels (zero-shot evaluation)")
      .on(te).ours().bind(&D::csv_label_key);
  l->add("imagenet-val", T::String, "", "ImageNet val folder (one sub-folder per class) for zero-shot").on(te)
      .bind(&D::imagenet_val);
  l->add("imagenet-v2", T::String, "", "ImageNetV2 location")
      .not_built("ImageNetV2 needs the imagenetv2_pytorch package; use --zeroshot-data").on({"train"});
  l->add("zeroshot-data", T::String, "", "a labelled webdataset (cls) or CSV (--csv-label-key) for zero-shot")
      .on(te).ours().bind(&D::zeroshot_data);
  l->add("zeroshot-classnames", T::String, "", "class names: a task JSON or a file with one name per line")
      .on(te).ours().bind(&D::zeroshot_classnames);
  l->add("zeroshot-templates", T::String, "", "prompt templates file (one per line with {c})").on(te).ours()
      .bind(&D::zeroshot_templates);
  l->add("cache-dir", T::String, "", "the download cache of --pretrained TAG and hf-hub: (OpenCLIP's cache_dir: "
         "default the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub) and ~/.cache/clip)").on({"train"}).v3()
      .bind(&TA::cache_dir);
  l->add("workers", T::Int, "2", "data loader threads per process (0: in the calling thread)")
      .on({"train", "eval", "bench data", "demo"}).def("train", "4").def("demo", "1").at_least(0)
      .at_most(kMaxWorkers, "the cap on loader threads").bind(&D::workers).bind(&data::DataConfig::workers)
      .bind(&cli::DemoArgs::workers);
  l->add("batch-size", T::Int, "64", "batch size (per process)")
      .on({"train", "eval", "embed", "index build", "bench train", "bench infer", "bench zeroshot", "bench data", "demo",
           "quantize"})
      .def("embed", "32").def("index build", "32").def("quantize", "32").def("bench train", "128").def("demo", "")
      .at_least(1).bind(&cli::QuantizeArgs::batch_size)
      .bind(&D::batch_size).bind(&EvalArgs::batch_size).bind(&openclip::LoadOptions::batch_size)
      .bind(&index::BuildOptions::batch).bind(&cli::BenchArgs::batch_size)
      .bind(&data::DataConfig::batch_size).bind(&cli::DemoArgs::batch_size);
}

static void add_optimization_flags(FlagList* l) {
  l->section("optimization");
  const std::vector<std::string> t = {"train"};
  l->add("epochs", T::Int, "32", "epochs (demo: the zero-shot evaluation points)").on({"train", "demo"})
      .def("demo", "").at_least(0).bind(&TA::epochs).bind(&cli::DemoArgs::epochs);
  l->add("epochs-cooldown", T::Int, "", "cooldown epochs for const-cooldown").on(t).bind(&TA::epochs_cooldown);
  l->add("lr", T::Float, "", "peak learning rate (train's default 5e-4)").on({"train", "demo"}).def("demo", "")
      .at_least(0).bind(&TA::lr).bind(&cli::DemoArgs::lr);
  l->add("beta1", T::Float, "", "AdamW beta1 (default 0.9)").on(t).bind(&TA::beta1);
  l->add("beta2", T::Float, "", "AdamW beta2 (default 0.98 for ViT models, else 0.999)").on(t).bind(&TA::beta2);
  l->add("eps", T::Float, "", "AdamW epsilon (default 1e-6 for ViT models, else 1e-8)").on(t).bind(&TA::eps);
  l->add("wd", T::Float, "0.2", "weight decay of the decay group").on({"train", "demo"}).def("demo", "")
      .bind(&TA::wd).bind(&cli::DemoArgs::wd);
  l->add("momentum", T::Float, "", "momentum (timm optimizers)")
      .not_built("timm optimizers are not part of openclip-cpp").on(t).v3();
  l->add("warmup", T::Int, "10000", "warm-up steps (bench data: untimed batches first)")
      .on({"train", "bench data", "demo"}).def("bench data", "3").def("demo", "").at_least(0).wide()
      .bind(&TA::warmup).bind(&cli::BenchDataArgs::warmup).bind(&cli::DemoArgs::warmup);
  l->add("opt", T::String, "adamw", "optimizer").on(t).choices({"adamw"}).v3();
  l->add("use-bn-sync", T::Flag, "", "SyncBatchNorm").not_built("BatchNorm statistics are not synchronized across processes (ResNet towers use each process's batch)").on(t);
  l->add("skip-scheduler", T::Flag, "", "keep the LR at --lr").on(t).bind(&TA::skip_scheduler);
  l->add("lr-scheduler", T::String, "cosine", "LR schedule after the warm-up").on(t)
      .choices({"cosine", "const", "const-cooldown"}).bind(&TA::lr_scheduler);
  l->add("lr-cooldown-end", T::Float, "0.0", "end LR of the cooldown").on(t).bind(&TA::lr_cooldown_end);
  l->add("lr-cooldown-power", T::Float, "1.0", "polynomial power of the cooldown").on(t).bind(&TA::lr_cooldown_power);
  l->add("accum-freq", T::Int, "1",
         "gradient accumulation steps (OpenCLIP's feature caching; per rank with several processes)")
      .on(t).at_least(1).bind(&TA::accum_freq);
  l->add("grad-clip-norm", T::Float, "", "clip the global gradient L2 norm (> 0; 2.24 zeroes the gradients at 0)")
      .on(t).bind([](TA& a, double v) { a.grad_clip_norm = positive_clip_norm(v); });
  l->add("grad-checkpointing", T::Flag, "", "recompute each block in backward (less memory, equal gradients)").on(t)
      .bind(&TA::grad_checkpointing);
  l->add("allow-tf32", T::Flag, "",
         "CUDA: fp32 GEMMs may use TF32 tensor cores (OpenCLIP always allows it; off here so fp32 stays fp32; "
         "no effect on the CPU)")
      .on({"train", "bench train", "bench infer"}).ours().bind(&TA::allow_tf32).bind(&cli::BenchArgs::allow_tf32);
  l->add("local-loss", T::Flag, "", "distributed: logits of local features against all").on(t).bind(&TA::local_loss);
  l->add("gather-with-grad", T::Flag, "", "distributed: all-gather with gradient").on(t).bind(&TA::gather_with_grad);
  l->add("global-batch-gradient", T::Flag, "",
         "in the default distributed loss (no --gather-with-grad, no --local-loss) give the towers the "
         "single-process gradient of the global batch; OpenCLIP's default gives them 1/world of it").on(t).ours()
      .bind(&TA::global_batch_gradient);
  l->add("lock-image", T::Flag, "", "freeze the image tower (LiT)").on(t).bind(&TA::lock_image);
  l->add("lock-image-unlocked-groups", T::Int, "0", "leave the last N image groups trainable").on(t)
      .bind(&TA::lock_image_unlocked_groups);
  l->add("lock-image-freeze-bn-stats", T::Flag, "", "with --lock-image: BatchNorm in eval mode, running stats frozen "
         "(ResNet towers; no effect on ViTs)").on(t).bind(&TA::lock_image_freeze_bn_stats);
  l->add("lock-text", T::Flag, "", "freeze the text tower as OpenCLIP 3.x (2.24 cannot lock a CLIP text tower); "
         "needs --lock-text-freeze-layer-norm").on(t).bind(&TA::lock_text);
  l->add("lock-text-unlocked-layers", T::Int, "0", "leave the last N text groups trainable, LayerNorms included").on(t)
      .bind(&TA::lock_text_unlocked_layers);
  l->add("lock-text-freeze-layer-norm", T::Flag, "", "required with --lock-text (3.x asserts it; it freezes nothing "
         "more)").on(t).bind(&TA::lock_text_freeze_layer_norm);
  l->add("seed", T::Int, "0", "random seed (data split: of the choice; data fashion-mnist: of the captions)")
      .on({"train", "bench train", "bench infer", "bench data", "demo", "data split", "data fashion-mnist"})
      .def("demo", "").bind(&TA::seed).bind(&cli::BenchArgs::seed).bind([](data::DataConfig& c, int v) { c.seed = uint64_t(v); })
      .bind(&cli::DataToolArgs::seed).bind(&cli::DemoArgs::seed);
  l->add("siglip", T::Flag, "", "SigLIP's sigmoid loss (init logit_scale ln 10, logit_bias -10; neighbour exchange "
         "across ranks)").on({"train", "bench train"}).bind(&TA::siglip).bind(&cli::BenchArgs::siglip);
  l->add("loss-dist-impl", T::String, "", "SigLIP's distributed implementation (2.24 has no flag and always uses "
         "bidir, its neighbour exchange, the only one built; 3.x's shift, reduce and gather give the same loss and "
         "gradients)")
      .on(t).choices({"bidir"}).v3();
  l->add("coca-caption-loss-weight", T::Float, "2.0", "CoCa caption loss weight (no CoCa models)").on(t).no_op();
  l->add("coca-contrastive-loss-weight", T::Float, "1.0", "CoCa contrastive loss weight (no CoCa models)").on(t).no_op();
  l->add("distill-model", T::String, "", "teacher model").not_built("distillation is not built yet").on(t);
  l->add("distill-pretrained", T::String, "", "teacher weights").not_built("distillation is not built yet").on(t);
}

static void add_model_flags(FlagList* l) {
  l->section("model");
  const std::vector<std::string> t = {"train"};
  l->add("model", T::String, "ViT-B-32", "model config name (configs/models/) or JSON path, or a whole model: "
         "hf-hub:ORG/NAME[@REV] (downloaded into the Hugging Face cache), local-dir:PATH or a hub folder (config, "
         "preprocessing, weights, tokenizer files; docs/HUB.md) (OpenCLIP's default is RN50; the config picks the "
         "tokenizer and context length: -CLIPA configs use WordPiece, SigLIP ones SentencePiece, their files "
         "from the folder or repository, the data folders, or the tokenizer's hub repository)")
      .on({"train", "eval", "classify", "embed", "index build", "bench train", "bench infer", "bench zeroshot", "demo",
           "tokenize", "serve", "quantize"})
      .def("demo", "").def("tokenize", "").bind(&TA::model).bind(&EvalArgs::model).bind(&cli::QuantizeArgs::model)
      .bind(&cli::ModelArgs::model).bind(&index::BuildOptions::model).bind(&serve::ServeOptions::model)
      .bind(&cli::BenchArgs::model).bind(&cli::TokenizeArgs::model).bind(&cli::DemoArgs::model);
  l->add("pretrained", T::String, "", "weights file (.pt/.bin/.pth/.safetensors, or an epoch_N.pt checkpoint; index "
         "search: default the path recorded in the index), a whole model (hf-hub:ORG/NAME[@REV], local-dir:PATH, "
         "a hub folder: its own config), or an OpenCLIP 2.24/3.3 tag of the model (e.g. laion2b_s34b_b79k): its "
         "preprocessing applies and its weights come from the download cache or are downloaded as OpenCLIP 3.3 "
         "does ($HF_ENDPOINT, $HF_TOKEN, $HF_HUB_OFFLINE=1: the cache only)")
      .on({"train", "eval", "classify", "embed", "index build", "index search", "serve", "bench infer", "bench zeroshot",
           "quantize"})
      .bind(&TA::pretrained).bind(&EvalArgs::pretrained).bind(&cli::ModelArgs::pretrained).bind(&cli::BenchArgs::pretrained)
      .bind(&cli::QuantizeArgs::pretrained)
      .bind(&index::BuildOptions::weights).bind(&cli::IndexSearchArgs::pretrained).bind(&serve::ServeOptions::weights);
  l->add("pretrained-image", T::Flag, "", "timm ImageNet weights").not_built("timm towers are not supported").on(t);
  l->add("image-mean", T::List, "", "normalization mean (1 or 3 values)").on(t).bind(&TA::image_mean);
  l->add("image-std", T::List, "", "normalization std (1 or 3 values)").on(t).bind(&TA::image_std);
  l->add("image-interpolation", T::String, "", "eval resize interpolation (random: as bicubic)").on(t)
      .choices({"bicubic", "bilinear", "random"}).bind(&TA::image_interpolation);
  l->add("image-resize-mode", T::String, "", "eval resize mode").on(t).choices({"shortest", "longest", "squash"})
      .bind(&TA::image_resize_mode);
  l->add("aug-cfg", T::List, "", "train augmentation: scale=(a,b), color_jitter=(b,c,s,h) with color_jitter_prob=p, "
         "gray_scale_prob=p; ratio=(a,b) is ours (2.24 ignores it without use_timm)").on(t).bind(&TA::aug_cfg);
  l->add("force-context-length", T::Int, "", "override the text context length").on(t).v3()
      .bind(&TA::force_context_length);
  l->add("force-image-size", T::Int, "", "override the image size (one value, a multiple of the patch)").on(t)
      .bind(&TA::force_image_size);
  l->add("force-quick-gelu", T::Flag, "", "QuickGELU in both towers").on(t).bind(&TA::force_quick_gelu);
  l->add("force-patch-dropout", T::Float, "", "override the vision tower's patch_dropout in [0, 1) (0: off, e.g. to "
         "fine-tune a model trained with it); the training forward only").on(t).bind(&TA::force_patch_dropout);
  l->add("force-custom-text", T::Flag, "", "CustomTextCLIP layout: the text tower's parameters under text.* (a "
         "checkpoint in CLIP's layout is converted on load, as OpenCLIP does)").on(t).bind(&TA::force_custom_text);
  const std::string torch_only = "it compiles or traces PyTorch graphs; openclip-cpp's kernels are hand-written C++, "
                                 "so there is no graph to compile";
  l->add("torchscript", T::Flag, "", "TorchScript").not_built(torch_only).on(t);
  l->add("torchcompile", T::Flag, "", "torch.compile").not_built(torch_only).on(t);
  l->add("trace", T::Flag, "", "torch.jit.trace").not_built(torch_only).on(t);
  l->add("use-bnb-linear", T::String, "", "bitsandbytes linear").not_built("bitsandbytes' 8-bit layers are CUDA kernels").on(t);
}

static void add_precision_flags(FlagList* l) {
  const std::vector<std::string> t = {"train"};
  l->section("precision, device, distributed");
  Flag& p = l->add("precision", T::String, "amp_bf16",
                   "amp, amp_bf16 and amp_bfloat16: bf16 autocast (amp is fp16 autocast with a GradScaler on CUDA "
                   "in OpenCLIP); bf16, pure_bf16: bf16 weights; fp32; int8 (inference, ViT towers: int8 block "
                   "GEMMs, activations quantized per row or with --int8-scales; no VNNI: a warning and "
                   "amp_bf16/fp32); fp16 and pure_fp16 are refused on the CPU")
                .on({"train", "eval", "classify", "embed", "index build", "bench train", "bench infer",
                     "bench zeroshot", "demo", "serve"})
                .def("train", "amp").def("demo", "")
                .choices({"amp", "amp_bf16", "amp_bfloat16", "bf16", "pure_bf16", "fp32", "int8"})
      .bind(&TA::precision, kPrecisionNames).bind(&TA::precision_spelled).bind(&openclip::LoadOptions::precision)
      .bind(&cli::BenchArgs::precision_spelled)
      .bind(&EvalArgs::precision, kPrecisionNames).bind(&index::BuildOptions::precision, kPrecisionNames)
      .bind(&serve::ServeOptions::precision, kPrecisionNames).bind(&cli::BenchArgs::precision, kPrecisionNames)
      .bind(&cli::DemoArgs::precision);
  for (const char* c : kInference) p.def(c, "fp32");
  l->add("device", T::String, "cpu", "compute backend: cpu, ref (plain reference loops), or cuda in a CUDA build "
         "with a visible GPU (otherwise an error saying which is missing); `openclip info` lists them")
      .on({"train", "eval", "classify", "embed", "index build", "index search", "serve", "bench train", "bench infer",
           "bench zeroshot"})
      .v3()
      .bind(&TA::device).bind(&EvalArgs::device).bind(&openclip::LoadOptions::device).bind(&cli::BenchArgs::device)
      .bind(&index::BuildOptions::device).bind(&cli::IndexSearchArgs::device).bind(&serve::ServeOptions::device);
  l->add("dist-url", T::String, "", "distributed init URL (MPI is used)").on(t).no_op();
  l->add("dist-backend", T::String, "", "distributed backend (MPI is used)").on(t).no_op();
  l->add("horovod", T::Flag, "", "Horovod").not_built("use mpirun: the MPI communicator replaces Horovod").on(t);
  l->add("ddp-static-graph", T::Flag, "", "accepted for compatibility (no effect)").on(t).no_op();
  l->add("no-set-device-rank", T::Flag, "", "accepted for compatibility (no effect on CPU)").on(t).no_op();
  l->add("threads", T::Int, "0", "compute threads per process (0 = all cores)")
      .on({"train", "eval", "bench train", "bench infer", "bench zeroshot", "demo", "quantize"}).ours().at_least(0)
      .at_most(kMaxThreads, "the cap on compute threads").bind(&TA::threads).bind(&EvalArgs::threads)
      .bind(&cli::BenchArgs::threads).bind(&cli::DemoArgs::threads).bind(&cli::QuantizeArgs::threads);
  l->add("dist-timeout", T::Float, "600", "seconds a collective may wait for the other ranks before the job is "
         "aborted with a message (a rank died or hangs)").on(t).ours().bind(&TA::dist_timeout);
}

static void add_logging_flags(FlagList* l) {
  l->section("logging");
  const std::vector<std::string> t = {"train"};
  l->add("logs", T::String, "./logs/", "where run folders go ('none' disables checkpoints and TensorBoard)").on(t)
      .bind(&TA::logs);
  l->add("log-local", T::Flag, "", "each node's local rank 0 writes its own log file, out-<rank> (OpenCLIP's name, "
         "no extension)").on(t).bind(&TA::log_local);
  l->add("name", T::String, "", "run name (train: date-model-lr-batch-workers-precision; demo: fmnist-<date>)")
      .on({"train", "demo"}).plain_name().bind(&TA::name).bind(&cli::DemoArgs::name);
  l->add("report-to", T::String, "", "where scalars go: tensorboard (wandb and all are refused: no network)").on(t)
      .bind(&TA::report_to);
  l->add("wandb-notes", T::String, "", "wandb notes").on(t).no_op();
  l->add("wandb-project-name", T::String, "open-clip", "wandb project").on(t).no_op();
  l->add("debug", T::Flag, "", "debug logging").on(t).bind(&TA::debug);
  l->add("log-every-n-steps", T::Int, "100", "log interval in optimizer steps").on(t).at_least(1)
      .bind(&TA::log_every_n_steps);
  l->add("copy-codebase", T::Flag, "", "copy the code into the run folder").not_built("not meaningful for a binary").on(t);

  l->section("checkpoints, evaluation");
  l->add("save-frequency", T::Int, "1", "save epoch_N.pt every N epochs (0: never, except the last)").on(t)
      .bind(&TA::save_frequency);
  l->add("save-most-recent", T::Flag, "", "also keep checkpoints/epoch_latest.pt").on(t).bind(&TA::save_most_recent);
  l->add("delete-previous-checkpoint", T::Flag, "", "delete epoch_{N-1}.pt after each epoch (refused with "
         "--save-frequency > 1, where 2.24 deletes each checkpoint one epoch after saving it)").on(t)
      .bind(&TA::delete_previous_checkpoint);
  l->add("checkpoint-every-n-steps", T::Int, "0", "also save a resumable checkpoint every N steps").on(t).ours().wide()
      .bind(&TA::checkpoint_every_n_steps);
  l->add("keep-step-checkpoints", T::Int, "2", "keep the newest K step checkpoints (epoch_E_step_S.pt), delete older "
         "ones (0: keep all)").on(t).at_least(0).ours().bind(&TA::keep_step_checkpoints);
  l->add("resume", T::String, "", "checkpoint path or 'latest' (exact, also mid-epoch)").on(t).bind(&TA::resume);
  l->add("remote-sync", T::String, "", "remote sync target").not_built("no network access").on(t);
  l->add("remote-sync-frequency", T::Int, "300", "remote sync interval").on(t).no_op();
  l->add("remote-sync-protocol", T::String, "s3", "remote sync protocol").on(t).no_op();
  l->add("zeroshot-frequency", T::Int, "2", "zero-shot eval every N epochs").on(t).bind(&TA::zeroshot_frequency);
  l->add("val-frequency", T::Int, "1", "val-data eval every N epochs").on(t).bind(&TA::val_frequency);
  l->add("max-bad-steps", T::Int, "10", "stop after N non-finite steps in a row (each is skipped)").on(t).ours()
      .bind(&TA::max_bad_steps);
  l->add("predictions-dir", T::String, "", "also write each zero-shot task's per-sample predictions to "
         "DIR/zeroshot_<task>.json (for `openclip report`)").on({"eval"}).ours()
      .bind([](EvalArgs& e, std::string v) { e.data.predictions_dir = std::move(v); });
}

void add_train_flags(FlagList* l) {
  add_data_flags(l);
  add_optimization_flags(l);
  add_model_flags(l);
  add_precision_flags(l);
  add_logging_flags(l);
}

// Into the registry (core/flags.h) when these objects are linked: first in the docs.
[[maybe_unused]] const bool kTrainFlagsRegistered = (register_flag_table(0, add_train_flags), true);

}  // namespace oc
