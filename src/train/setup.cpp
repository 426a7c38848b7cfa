// Set-up of a training run: processes, run folder, model, data, optimizer, resume.
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "data/csv.h"
#include "model/model_tokenizer.h"
#include "model/weights.h"
#include "ops/adamw.h"
#include "ops/registry.h"
#include "step/comm_io.h"
#include "model/model_source.h"
#include "train/freeze.h"
#include "train/session.h"

namespace oc {

namespace {

// The resolved config with OpenCLIP main.py's model_kwargs and --force-* overrides.
ModelCfg model_config(const TrainArgs& a, ModelCfg cfg) {
  if (a.force_quick_gelu) cfg.quick_gelu = true;
  if (a.force_quick_gelu && cfg.text.gelu_tanh)  // OpenCLIP fails: QuickGELU(approximate="tanh")
    OC_USER_ERROR(
        "--force-quick-gelu with {}: its text_cfg.act_kwargs (GELU's tanh approximation) do not apply to "
        "QuickGELU (OpenCLIP fails building it); drop the flag",
        cfg.name);
  if (a.force_custom_text) cfg.custom_text = true;
  if (a.siglip) use_siglip_init(cfg);
  if (a.force_context_length > 0) cfg.text.context_length = a.force_context_length;
  if (a.force_patch_dropout >= 0) {  // OpenCLIP: vision_cfg["patch_dropout"] = force_patch_dropout
    if (a.force_patch_dropout >= 1) OC_USER_ERROR("--force-patch-dropout {} must be in [0, 1)", a.force_patch_dropout);
    // A tower that would drop patches in OpenCLIP but not here refuses rather than ignores it.
    if (a.force_patch_dropout > 0)
      if (const std::string why = make_image_tower(cfg)->patch_dropout_refusal(); !why.empty())
        OC_USER_ERROR("--force-patch-dropout {}: model {} {}", a.force_patch_dropout, cfg.name, why);
    cfg.vision.patch_dropout = a.force_patch_dropout;
  }
  if (a.force_image_size > 0) {
    if (a.force_image_size % cfg.vision.patch_size)
      OC_USER_ERROR("--force-image-size {} is not a multiple of the patch size {}", a.force_image_size,
                    cfg.vision.patch_size);
    cfg.vision.image_size = a.force_image_size;
  }
  return cfg;
}

// 2.24's merge: defaults, the hub folder's / pretrained tag's preprocess_cfg (hint), the flags.
PreprocessCfg preprocess_config(const TrainArgs& a, const ModelCfg& cfg, const PreprocessHint& hint) {
  PreprocessCfg p;
  p.size = cfg.vision.image_size;
  auto three = [](const auto& v, std::array<float, 3>* out) {
    if (v.empty()) return;
    for (int i = 0; i < 3; ++i) (*out)[size_t(i)] = float(v.size() == 1 ? v[0] : v[size_t(i)]);
  };
  three(hint.mean, &p.mean);
  three(hint.std, &p.std);
  if (hint.interpolation == "bilinear") p.interpolation = Interp::Bilinear;
  if (hint.resize_mode == "longest") p.resize_mode = ResizeMode::Longest;
  else if (hint.resize_mode == "squash") p.resize_mode = ResizeMode::Squash;
  three(a.image_mean, &p.mean);
  three(a.image_std, &p.std);
  if (a.image_interpolation == "bicubic") p.interpolation = Interp::Bicubic;
  if (a.image_interpolation == "bilinear") p.interpolation = Interp::Bilinear;
  else if (!a.image_interpolation.empty() && a.image_interpolation != "bicubic" && a.image_interpolation != "random")
    OC_USER_ERROR("--image-interpolation {}: choose bicubic or bilinear", a.image_interpolation);
  if (a.image_resize_mode == "shortest") p.resize_mode = ResizeMode::Shortest;
  if (a.image_resize_mode == "longest") p.resize_mode = ResizeMode::Longest;
  else if (a.image_resize_mode == "squash") p.resize_mode = ResizeMode::Squash;
  else if (!a.image_resize_mode.empty() && a.image_resize_mode != "shortest")
    OC_USER_ERROR("--image-resize-mode {}: choose shortest, longest or squash", a.image_resize_mode);
  if (!a.aug_cfg.empty()) {
    Status s = parse_aug_cfg(a.aug_cfg, &p);
    if (!s) OC_USER_ERROR("--aug-cfg: {}", s.error());
  }
  return p;
}

// The loader's settings from the data fields of the run (data::data_config: the one mapping).
data::DataConfig data_config(const TrainArgs& a) {
  data::DataConfig dc;
  if (Status st = data::data_config(a, /*train=*/true, &dc); !st) OC_USER_ERROR("{}", st.error());
  dc.seed = uint64_t(a.seed);
  return dc;
}

}  // namespace

void open_cluster(TrainSession& s) {
  const TrainArgs& a = s.a;
  if (a.threads > 0) set_num_threads(a.threads);
  // Data parallel: the launcher's layout (mpirun, srun, torchrun variables), one communicator.
  Cluster& c = s.cluster;
  c.world = dist::world_from_env();
  // NCCL when the backend is a device backend (its stream orders the collectives), else MPI.
  c.comm = dist::make_communicator(c.world, a.dist_timeout, ops::backend(a.device).device_stream());
  c.rank = c.comm->rank(), c.size = c.comm->size();
  c.master = c.rank == 0;
  if (a.debug) log::set_level(log::Level::Debug);
  const bool synthetic = a.dataset_type == data::DatasetType::Synthetic ||
                         a.dataset_type == data::DatasetType::SyntheticLearnable;
  if (a.train_data.empty() && !synthetic)
    OC_USER_ERROR("no training data: give --train-data (or --dataset-type synthetic)");
}

void open_run_folder(TrainSession& s) {
  const TrainArgs& a = s.a;
  Cluster& c = s.cluster;
  s.learner.precision = a.precision;
  // One run name for all ranks (it contains the time): rank 0's.
  int64_t start_time = int64_t(std::time(nullptr));
  c.comm->broadcast(&start_time, sizeof(start_time), 0);
  if (c.master) s.run = prepare_run_dir(a, long(start_time));
  c.comm->barrier("run folder creation");
  if (!c.master) {
    TrainArgs b = a;
    b.resume = "latest";  // the folder exists now: rank 0 made it
    s.run = prepare_run_dir(b, long(start_time), /*writer=*/false);
    s.run.tensorboard.clear();
  }
  // OpenCLIP: out.log from rank 0; with --log-local, each node's local rank 0 writes
  // out-<rank> (its name has no extension) and the other ranks log no file.
  if (a.log_local && c.world.local_rank == 0) log::set_file(fs::join(s.run.root, fmt::format("out-{}", c.rank)));
  else if (!a.log_local && c.master) log::set_file(s.run.log_path);
  else log::set_level(log::Level::Warning);  // others: warnings and errors only
  if (c.size > 1)
    log::info("Running in distributed mode with multiple processes. Device {}. Process (global: {}, local {}), total "
              "{} ({}, {}, {} threads per rank).",
              a.device, c.rank, c.world.local_rank, c.size, c.world.source, c.comm->backend(), num_threads());
  else
    log::info("Running with a single process. Device {}, {} threads.", a.device, num_threads());
  if (precision_label(a) == "amp") log::info("{}", kAmpOnCpuNote);
  if (c.master) write_params(s.run, a, c.rank, c.world.local_rank, c.size);
  log::info("Params:");
  for (auto& [k, v] : train_settings(a)) log::info("  {}: {}", k, v);
}

void build_learner(TrainSession& s) {
  const TrainArgs& a = s.a;
  Learner& l = s.learner;
  s.source = resolve_model_source(a.model, a.pretrained, a.cache_dir);
  l.cfg = model_config(a, s.source.cfg);
  ops::backend(a.device).set_allow_tf32(a.allow_tf32);
  l.model = std::make_unique<Clip>(l.cfg, ops::backend(a.device));
  Clip& model = *l.model;
  model.init(uint64_t(a.seed));
  // Each rank draws its own patches (OpenCLIP: torch's RNG differs per rank), from the seed.
  model.vision_tower().set_patch_dropout_seed(mix_seed(uint64_t(a.seed), 0x70617463, uint64_t(s.cluster.rank)));
  if (!s.source.weights.empty()) {
    load_weights(model, s.source.weights);
    log::info("Loaded pretrained weights from {}", s.source.weights);
  }
  if (!s.source.preprocess.source.empty()) log::info("Preprocessing from {}", s.source.preprocess.source);
  model.set_precision(l.precision);
  round_lp_params(model.backend(), model.table(), model.params(), l.precision);  // OpenCLIP casts at creation
  model.plan_training(a.batch_size, a.grad_checkpointing);
  l.trainable = trainable_mask(model, a);
  model.set_freeze_bn_stats(a.lock_image && a.lock_image_freeze_bn_stats);  // ModifiedResNet.lock(freeze_bn_stats)
  l.logit_scale = model.params() + model.table().find("logit_scale")->offset;
  const AdamWCfg ac = adamw_cfg(a);
  l.opt = std::make_unique<AdamW>(model.table(), ac, model.backend());
  ScheduleCfg& sc = l.schedule;
  sc.kind = parse_lr_schedule(a.lr_scheduler);
  sc.base_lr = a.lr;
  sc.warmup = a.warmup;
  sc.cooldown_end = a.lr_cooldown_end;
  sc.cooldown_power = a.lr_cooldown_power;
  log::info("Created AdamW (adamw) optimizer: lr: {}, betas: ({}, {}), eps: {}, weight_decay: {}, amsgrad: False",
            python_float_str(ac.lr), python_float_str(ac.beta1), python_float_str(ac.beta2), python_float_str(ac.eps),
            python_float_str(ac.wd));
}

void build_feed(TrainSession& s) {
  const TrainArgs& a = s.a;
  Feed& f = s.feed;
  f.config = data_config(a);
  f.config.rank = s.cluster.rank;
  f.config.world_size = s.cluster.size;
  f.config.preprocess = preprocess_config(a, s.learner.cfg, s.source.preprocess);
  f.config.context_length = s.learner.cfg.text.context_length;
  f.tok = model_tokenizer(s.learner.cfg, "", s.source.tokenizer_dir);  // BPE, or WordPiece (-CLIPA)
  f.loader = std::make_unique<data::DataLoader>(f.config, f.tok);
  f.steps = std::make_unique<StepBatches>(*f.loader, *s.learner.model, a.accum_freq);
  f.num_batches = f.loader->num_batches();
  f.steps_per_epoch = f.num_batches / a.accum_freq;
  f.samples_per_epoch = f.loader->num_samples();
  if (f.steps_per_epoch <= 0)
    OC_USER_ERROR("an epoch has {} batches, fewer than --accum-freq {}: nothing to train", f.num_batches, a.accum_freq);
  s.learner.schedule.total_steps = f.steps_per_epoch * a.epochs;
  s.learner.schedule.cooldown_steps = f.steps_per_epoch * a.epochs_cooldown;
}

namespace {

// A mid-epoch checkpoint's loader position for this rank, or none (another world size:
// the epoch restarts, as OpenCLIP resumes).
void restore_position(TrainSession& s, const std::string& from) {
  StartPoint& p = s.start;
  ResumeState& st = p.state;
  const int world_size = s.cluster.size;
  if (st.step_in_epoch >= s.feed.num_batches)
    OC_USER_ERROR("{}: openclip_cpp.step_in_epoch is {} but an epoch of this run has {} batches; the checkpoint "
                  "does not belong to this data or is damaged",
                  from, st.step_in_epoch, s.feed.num_batches);
  nlohmann::json j = nlohmann::json::parse(st.loader_state, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    OC_USER_ERROR("{}: openclip_cpp.loader_state is not a JSON object; the checkpoint is damaged", from);
  if (j.contains("ranks")) j = int(j["ranks"].size()) == world_size ? j["ranks"][size_t(s.cluster.rank)] : nlohmann::json();
  else if (world_size != 1) j = nlohmann::json();
  if (j.is_null()) {
    log::warn("{}: saved mid-epoch with another number of ranks: epoch {} restarts from its beginning", from, p.epoch);
    st.step_in_epoch = 0;
    st.global_step = p.epoch * s.feed.steps_per_epoch;
  } else {
    auto pos = data::LoaderPosition::from_json(j);
    if (!pos) OC_USER_ERROR("{}: loader position: {}", from, pos.error());
    p.position = pos.value();
  }
}

}  // namespace

void resume(TrainSession& s) {
  const TrainArgs& a = s.a;
  StartPoint& p = s.start;
  std::string from = a.resume;
  if (from == "latest") {
    from = s.run.enabled() ? find_latest_checkpoint(s.run.checkpoints, a.save_most_recent) : "";
    if (from.empty()) log::info("No latest resume checkpoint found in {}.", s.run.checkpoints);
  }
  p.checkpoint = from;
  if (from.empty()) return;
  Checkpoint ck = load_checkpoint(from);
  restore_checkpoint(ck, *s.learner.model, s.learner.opt.get(), from);
  if (!ck.has_epoch) {
    log::info("=> loaded state_dict from '{}' (no epoch: training starts at epoch 0)", from);
    return;
  }
  p.state = ck.state;
  p.epoch = p.state.completed_epochs;
  if (!ck.has_extras) p.state.global_step = p.epoch * s.feed.steps_per_epoch;
  s.learner.model->vision_tower().set_patch_dropout_draws(uint64_t(p.state.patch_dropout_draws));
  if (ck.has_extras && p.state.step_in_epoch > 0 && !p.state.loader_state.empty()) restore_position(s, from);
  log::info("=> resuming checkpoint '{}' (epoch {}, global step {}{})", from, p.epoch, p.state.global_step,
            p.state.step_in_epoch ? fmt::format(", batch {} of the epoch", p.state.step_in_epoch) : "");
}

void sync_and_describe(TrainSession& s) {
  const TrainArgs& a = s.a;
  Clip& model = *s.learner.model;
  // Identical initial weights everywhere (DDP's broadcast from rank 0). Every rank loaded
  // the same checkpoint for the optimizer state; the weights are rank 0's regardless.
  CommIO(model.backend(), *s.cluster.comm).broadcast(model.params(), int64_t(model.table().total), 0);
  auto mem = model.memory();
  log::info("Memory (MiB): parameters {:.0f}, gradients {:.0f}, AdamW state {:.0f}, activations {:.0f}", mem.params,
            mem.grads, s.learner.opt->mib(), mem.activations);
  log::info("Epoch: {} batches of {} ({} samples per epoch), {} optimizer steps per epoch", s.feed.num_batches,
            a.batch_size, s.feed.samples_per_epoch, s.feed.steps_per_epoch);
  if (s.cluster.master && !s.run.tensorboard.empty()) {
    s.tb = std::make_unique<io::EventWriter>(s.run.tensorboard, 5.0);
    if (s.start.state.global_step > 0) s.tb->session_start(s.start.state.global_step);  // drops points >= this step
  }
}

}  // namespace oc
