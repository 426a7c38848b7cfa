#include "train/trainer.h"

#include <csignal>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>
#include <ctime>
#include <memory>
#include <optional>
#include <thread>
#include <chrono>

#include "core/bf16.h"
#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/parallel.h"
#include "core/timer.h"
#include "data/loader.h"
#include "dist/comm.h"
#include "eval/evaluate.h"
#include "io/tfevents.h"
#include "model/clip.h"
#include "model/weights.h"
#include "ops/adamw.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/step.h"
#include "text/tokenizer.h"
#include "train/args.h"
#include "train/checkpoint.h"
#include "train/lock.h"
#include "train/run_dir.h"

namespace oc {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

struct Meter {
  double sum = 0, last = 0;
  long n = 0;
  void add(double v) { last = v, sum += v, ++n; }
  double avg() const { return n ? sum / double(n) : 0; }
  void reset() { *this = {}; }
};

ModelCfg model_config(const TrainArgs& a) {
  ModelCfg cfg = load_model_config(a.model);
  if (a.force_quick_gelu) cfg.quick_gelu = true;
  if (a.siglip) {  // OpenCLIP main.py: model_kwargs for --siglip override the config's
    cfg.init_logit_scale = std::log(10.0);
    cfg.init_logit_bias = -10.0;
  }
  if (a.force_context_length > 0) cfg.text.context_length = a.force_context_length;
  if (a.force_image_size > 0) {
    if (a.force_image_size % cfg.vision.patch_size)
      OC_USER_ERROR("--force-image-size {} is not a multiple of the patch size {}", a.force_image_size,
                    cfg.vision.patch_size);
    cfg.vision.image_size = a.force_image_size;
  }
  return cfg;
}

PreprocessCfg preprocess_config(const TrainArgs& a, const ModelCfg& cfg) {
  PreprocessCfg p;
  p.size = cfg.vision.image_size;
  auto three = [](const std::vector<double>& v, std::array<float, 3>* out) {
    if (v.empty()) return;
    for (int i = 0; i < 3; ++i) (*out)[size_t(i)] = float(v.size() == 1 ? v[0] : v[size_t(i)]);
  };
  three(a.image_mean, &p.mean);
  three(a.image_std, &p.std);
  if (a.image_interpolation == "bilinear") p.interpolation = Interp::Bilinear;
  else if (!a.image_interpolation.empty() && a.image_interpolation != "bicubic" && a.image_interpolation != "random")
    OC_USER_ERROR("--image-interpolation {}: choose bicubic or bilinear", a.image_interpolation);
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

std::string fmt_g(double v) { return fmt::format("{:#g}", v); }

}  // namespace

int train_main(const std::vector<std::string>& argv) {
  Options o = train_options();
  {
    std::vector<OptionSpec> extra = data::data_option_specs();
    for (auto& s : dist::dist_option_specs()) extra.push_back(s);
    // The data flags the data module adds beyond the train table (e.g. --csv-label-key).
    std::vector<OptionSpec> specs = o.specs();
    append_missing_specs(&specs, extra);
    o = Options("train", "Train or fine-tune a CLIP model with OpenCLIP's flags.", specs);
  }
  o.parse(argv);
  if (o.help_requested()) {
    std::printf("%s", o.help().c_str());
    return 0;
  }
  TrainArgs a = resolve_train_args(o);
  if (a.threads > 0) set_num_threads(a.threads);
  // Data parallel: the launcher's layout (mpirun, srun, torchrun variables), one
  // communicator; rank 0 alone writes logs, TensorBoard, checkpoints and evaluates.
  const dist::World world = dist::world_from_env();
  const double dist_timeout = o.get_float("dist-timeout");
  if (!(dist_timeout > 0)) OC_USER_ERROR("--dist-timeout {}: must be positive seconds", dist_timeout);
  std::unique_ptr<dist::Communicator> comm = dist::make_communicator(world, dist_timeout);
  const int rank = comm->rank(), world_size = comm->size();
  const bool master = rank == 0;
  if (world_size > 1 && a.accum_freq > 1)
    OC_USER_ERROR("--accum-freq {} with {} ranks is not built yet: use a larger --batch-size or more ranks",
                  a.accum_freq, world_size);
  if (a.debug) log::set_level(log::Level::Debug);
  std::string prec_note;
  const Precision precision = parse_precision(a.precision, &prec_note);
  if (a.train_data.empty() && a.dataset_type != "synthetic" && a.dataset_type != "synthetic-learnable")
    OC_USER_ERROR("no training data: give --train-data (or --dataset-type synthetic)");

  // Run folder and logs.
  // One run name for all ranks (it contains the time): rank 0's.
  int64_t start_time = int64_t(std::time(nullptr));
  comm->broadcast(&start_time, sizeof(start_time), 0);
  RunDir run;
  if (master) run = prepare_run_dir(a, long(start_time));
  comm->barrier("run folder creation");
  if (!master) {
    TrainArgs b = a;
    b.resume = "latest";  // the folder exists now: rank 0 made it
    run = prepare_run_dir(b, long(start_time), /*writer=*/false);
    run.tensorboard.clear();
  }
  // OpenCLIP: out.log from rank 0; with --log-local, each node's local rank 0 writes
  // out-<rank> (its name has no extension) and the other ranks log no file.
  if (a.log_local && world.local_rank == 0) log::set_file(fs::join(run.root, fmt::format("out-{}", rank)));
  else if (!a.log_local && master) log::set_file(run.log_path);
  else log::set_level(log::Level::Warning);  // others: warnings and errors only
  if (world_size > 1)
    log::info("Running in distributed mode with multiple processes. Device cpu. Process (global: {}, local {}), total "
              "{} ({}, {}, {} threads per rank).",
              rank, world.local_rank, world_size, world.source, comm->backend(), num_threads());
  else
    log::info("Running with a single process. Device cpu, {} threads.", num_threads());
  if (!prec_note.empty()) log::info("{}", prec_note);
  if (master) write_params(run, o, a);
  log::info("Params:");
  {
    std::string t = o.settings_table();
    size_t p = 0;
    while (p < t.size()) {
      size_t q = t.find('\n', p);
      log::info("  {}", t.substr(p, q - p));
      p = q + 1;
    }
  }

  // Model.
  ModelCfg cfg = model_config(a);
  Clip model(cfg, ops::backend(a.device));
  model.init(uint64_t(a.seed));
  if (!a.pretrained.empty()) {
    load_weights(model, a.pretrained);
    log::info("Loaded pretrained weights from {}", a.pretrained);
  }
  model.set_precision(precision);
  round_lp_params(model.table(), model.params(), precision);  // OpenCLIP casts at creation
  model.plan_training(a.batch_size, a.grad_checkpointing);
  std::vector<bool> trainable = trainable_mask(model, a);

  // Data.
  data::DataConfig dc;
  {
    Status s = data::apply_data_options(o, true, &dc);
    if (!s) OC_USER_ERROR("{}", s.error());
  }
  dc.batch_size = a.batch_size;
  dc.workers = a.workers;
  dc.rank = rank;
  dc.world_size = world_size;
  dc.seed = uint64_t(a.seed);
  dc.preprocess = preprocess_config(a, cfg);
  dc.context_length = cfg.text.context_length;
  std::shared_ptr<const Tokenizer> tok;
  if (cfg.text.vocab_size == 49408) tok = std::make_shared<Tokenizer>(Tokenizer::load_default());
  data::DataLoader loader(dc, tok);
  const int64_t num_batches = loader.num_batches();
  const int64_t steps_per_epoch = num_batches / a.accum_freq;
  if (steps_per_epoch <= 0)
    OC_USER_ERROR("an epoch has {} batches, fewer than --accum-freq {}: nothing to train", num_batches, a.accum_freq);

  // Optimizer and schedule.
  AdamWCfg ac;
  ac.lr = a.lr, ac.beta1 = a.beta1, ac.beta2 = a.beta2, ac.eps = a.eps, ac.wd = a.wd;
  AdamW opt(model.table(), ac, model.backend());
  ScheduleCfg sc;
  sc.kind = parse_lr_schedule(a.lr_scheduler);
  sc.base_lr = a.lr;
  sc.warmup = a.warmup;
  sc.total_steps = steps_per_epoch * a.epochs;
  sc.cooldown_steps = steps_per_epoch * a.epochs_cooldown;
  sc.cooldown_end = a.lr_cooldown_end;
  sc.cooldown_power = a.lr_cooldown_power;
  log::info("Created AdamW (adamw) optimizer: lr: {}, betas: ({}, {}), eps: {}, weight_decay: {}, amsgrad: False",
            python_float_str(a.lr), python_float_str(a.beta1), python_float_str(a.beta2), python_float_str(a.eps),
            python_float_str(a.wd));

  // Resume.
  int64_t start_epoch = 0;
  ResumeState st;
  std::optional<data::LoaderPosition> resume_pos;
  std::string resume_from = a.resume;
  if (resume_from == "latest") {
    resume_from = run.enabled() ? find_latest_checkpoint(run.checkpoints, a.save_most_recent) : "";
    if (resume_from.empty()) log::info("No latest resume checkpoint found in {}.", run.checkpoints);
  }
  if (!resume_from.empty()) {
    Checkpoint ck = load_checkpoint(resume_from);
    restore_checkpoint(ck, model, &opt, resume_from);
    if (ck.has_epoch) {
      st = ck.state;
      start_epoch = st.completed_epochs;
      if (!ck.has_extras) st.global_step = start_epoch * steps_per_epoch;
      if (ck.has_extras && st.step_in_epoch > 0 && !st.loader_state.empty()) {
        // Distributed runs save every rank's position ({"ranks": [...]}). Another world
        // size cannot continue mid-epoch exactly: the epoch restarts (as OpenCLIP resumes).
        if (st.step_in_epoch >= num_batches)
          OC_USER_ERROR("{}: openclip_cpp.step_in_epoch is {} but an epoch of this run has {} batches; the checkpoint "
                        "does not belong to this data or is damaged",
                        resume_from, st.step_in_epoch, num_batches);
        nlohmann::json j = nlohmann::json::parse(st.loader_state, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object())
          OC_USER_ERROR("{}: openclip_cpp.loader_state is not a JSON object; the checkpoint is damaged", resume_from);
        if (j.contains("ranks")) j = int(j["ranks"].size()) == world_size ? j["ranks"][size_t(rank)] : nlohmann::json();
        else if (world_size != 1) j = nlohmann::json();
        if (j.is_null()) {
          log::warn("{}: saved mid-epoch with another number of ranks: epoch {} restarts from its beginning",
                    resume_from, start_epoch);
          st.step_in_epoch = 0;
          st.global_step = start_epoch * steps_per_epoch;
        } else {
          auto pos = data::LoaderPosition::from_json(j);
          if (!pos) OC_USER_ERROR("{}: loader position: {}", resume_from, pos.error());
          resume_pos = pos.value();
        }
      }
      log::info("=> resuming checkpoint '{}' (epoch {}, global step {}{})", resume_from, start_epoch, st.global_step,
                st.step_in_epoch ? fmt::format(", batch {} of the epoch", st.step_in_epoch) : "");
    } else {
      log::info("=> loaded state_dict from '{}' (no epoch: training starts at epoch 0)", resume_from);
    }
  }

  // Identical initial weights everywhere (DDP's broadcast from rank 0). Every rank loaded
  // the same checkpoint for the optimizer state; the weights are rank 0's regardless.
  comm->broadcast(model.params(), int64_t(sizeof(float) * model.table().total), 0);
  auto mem = model.memory();
  log::info("Memory (MiB): parameters {:.0f}, gradients {:.0f}, AdamW state {:.0f}, activations {:.0f}", mem.params,
            mem.grads, opt.mib(), mem.activations);
  log::info("Epoch: {} batches of {} ({} samples per epoch), {} optimizer steps per epoch", num_batches, a.batch_size,
            loader.num_samples(), steps_per_epoch);

  std::unique_ptr<io::EventWriter> tb;
  if (master && !run.tensorboard.empty()) {
    tb = std::make_unique<io::EventWriter>(run.tensorboard, 5.0);
    if (st.global_step > 0) tb->session_start(st.global_step);  // TensorBoard drops points >= this step
  }

  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  ContrastiveStep step(model, a.batch_size);
  std::unique_ptr<GradAllReduce> reducer;
  if (world_size > 1) {
    reducer = std::make_unique<GradAllReduce>(model, *comm);
    reducer->set_overlap(std::getenv("OPENCLIP_DIST_NO_OVERLAP") == nullptr);
    log::info("Data parallel: {} ranks x batch {} = global batch {}; loss: {}{}; gradient all-reduce in buckets of "
              "one block (largest {:.1f} MiB) overlapped with backward, dist timeout {:g} s",
              world_size, a.batch_size, int64_t(world_size) * a.batch_size,
              a.siglip ? "sigmoid (SigLIP, neighbour exchange)" : a.local_loss ? "local" : "global",
              a.gather_with_grad ? ", gather with grad" : (a.global_batch_gradient ? ", global-batch gradient" : ""),
              reducer->bucket_mib_max(), dist_timeout);
  }
  const ContrastiveStep::DistMode dist_mode{a.local_loss, a.gather_with_grad, a.global_batch_gradient};
  float* logit_scale = model.params() + model.table().find("logit_scale")->offset;
  const int64_t samples_per_epoch = loader.num_samples();

  // Tests of crash recovery: the process kills itself (SIGKILL, nothing flushed or saved)
  // right after this optimizer step.
  // OPENCLIP_DEBUG_FAULT_RANK limits it (and OPENCLIP_DEBUG_HANG_AT_STEP, a rank that
  // stops answering) to one rank.
  const char* kill_env = std::getenv("OPENCLIP_DEBUG_SIGKILL_AT_STEP");
  const char* hang_env = std::getenv("OPENCLIP_DEBUG_HANG_AT_STEP");
  const char* fault_rank_env = std::getenv("OPENCLIP_DEBUG_FAULT_RANK");
  const bool fault_here = !fault_rank_env || std::atoi(fault_rank_env) == rank;
  const int64_t kill_at = kill_env && fault_here ? std::atoll(kill_env) : -1;
  const int64_t hang_at = hang_env && fault_here ? std::atoll(hang_env) : -1;
  // Fault tests: poison logit_scale with NaN before this step (every later step is then
  // non-finite), or deliver SIGTERM to ourselves after it (the real signal path).
  const char* nan_env = std::getenv("OPENCLIP_DEBUG_NAN_AT_STEP");
  const char* term_env = std::getenv("OPENCLIP_DEBUG_SIGTERM_AT_STEP");
  const int64_t nan_at = nan_env && fault_here ? std::atoll(nan_env) : -1;
  const int64_t term_at = term_env && fault_here ? std::atoll(term_env) : -1;
  // Distributed tests: every rank prints its own loss per step (OpenCLIP logs rank 0's).
  const bool debug_rank_loss = std::getenv("OPENCLIP_DEBUG_RANK_LOSS") != nullptr;
  // Mid-epoch loader positions: every rank's, gathered (collective: all ranks call it).
  auto loader_state = [&]() -> std::string {
    std::string mine = loader.position().to_json().dump();
    if (world_size == 1) return mine;
    nlohmann::json j;
    for (auto& s : comm->allgather_strings(mine)) j["ranks"].push_back(nlohmann::json::parse(s));
    return j.dump();
  };

  auto save = [&](const std::string& file, const ResumeState& s) {
    if (master && run.enabled()) {
      if (tb) tb->flush();  // events up to a checkpoint are durable with it
      save_checkpoint(fs::join(run.checkpoints, file), model, opt, trainable, run.name, s, world_size > 1);
    }
    comm->barrier("checkpoint save");
  };

  // Evaluation after an epoch, as OpenCLIP's evaluate(): zero-shot when completed %
  // --zeroshot-frequency == 0 (or the last epoch), val-data retrieval likewise with
  // --val-frequency; results to the log, TensorBoard val/* (step = epoch) and results.jsonl.
  EvalData ev;
  ev.imagenet_val = a.imagenet_val;
  ev.zeroshot_data = a.zeroshot_data;
  ev.classnames_file = a.zeroshot_classnames;
  ev.templates_file = a.zeroshot_templates;
  if (!a.zeroshot_data.empty() && a.zeroshot_classnames.size() > 5 &&
      a.zeroshot_classnames.substr(a.zeroshot_classnames.size() - 5) == ".json")
    ev.zeroshot_task = a.zeroshot_classnames, ev.classnames_file.clear();
  ev.val_data = a.val_data;
  ev.val_num_samples = a.val_num_samples > 0 ? a.val_num_samples : -1;
  ev.dedup_images = a.val_dedup_images;
  ev.batch_size = a.batch_size;
  ev.workers = std::max(1, a.workers);
  ev.base = dc;
  double train_seconds = 0;
  auto run_evaluation = [&](int64_t epoch_done) {
    if (!master) return;
    const bool last = epoch_done == a.epochs;
    EvalData e = ev;
    if (!(a.zeroshot_frequency > 0 && (epoch_done % a.zeroshot_frequency == 0 || last)))
      e.imagenet_val.clear(), e.zeroshot_data.clear();
    if (!(a.val_frequency > 0 && (epoch_done % a.val_frequency == 0 || last))) e.val_data.clear();
    if (e.imagenet_val.empty() && e.zeroshot_data.empty() && e.val_data.empty()) return;
    if (last && run.enabled()) {  // the final evaluation leaves per-sample predictions for `openclip report`
      e.predictions_dir = run.root;
      e.checkpoint = fs::join(run.checkpoints, fmt::format("epoch_{}.pt", epoch_done));
    }
    if (!tok) tok = std::make_shared<Tokenizer>(Tokenizer::load_default());
    Clip evm(cfg, model.backend());  // inference copy: the training arenas stay untouched
    model.backend().copy(evm.params(), model.params(), sizeof(float) * model.table().total);
    evm.set_precision(precision);
    evm.plan_inference(a.batch_size);
    std::map<std::string, double> m = evaluate(evm, *tok, e);
    m["epoch"] = double(epoch_done);
    // Our addition to OpenCLIP's keys: training wall time so far in this process (steps and
    // data waits; evaluation and checkpoint writes excluded), for time-to-accuracy figures.
    m["train_seconds"] = train_seconds;
    std::string line = fmt::format("Eval Epoch: {} ", epoch_done);
    for (auto& [k, v] : m) line += fmt::format("{}: {:.4f}\t", k, v);
    log::info("{}", line);
    if (tb)
      for (auto& [k, v] : m)
        if (k != "epoch" && k != "train_seconds") tb->add_scalar("val/" + k, float(v), epoch_done);
    if (run.enabled()) {
      nlohmann::json j;
      for (auto& [k, v] : m) j[k] = (k == "epoch" || k == "num_samples") ? nlohmann::json(int64_t(v)) : nlohmann::json(v);
      const std::string path = fs::join(run.checkpoints, "results.jsonl");
      std::string prev = fs::exists(path) ? fs::read_text(path).value() : "";
      fs::write_atomic(path, prev + j.dump() + "\n");
    }
  };

  int exit_code = 0;
  // With several ranks a signal counts once all ranks know it (agreed at each step's
  // all-reduce), so they stop after the same step and save one checkpoint together.
  int agreed_stop = 0;
  auto stopping = [&]() -> int { return world_size > 1 ? agreed_stop : int(g_stop_signal); };
  for (int64_t epoch = start_epoch; epoch < a.epochs && !stopping(); ++epoch) {
    log::info("Start epoch {}", epoch);
    int64_t batch_i = 0;
    if (resume_pos && resume_pos->epoch == epoch) {
      Status s = loader.resume(*resume_pos);
      if (!s) OC_USER_ERROR("{}: cannot restore the data position: {}", resume_from, s.error());
      batch_i = resume_pos->batches;
      resume_pos.reset();
    } else {
      loader.start_epoch(epoch);
      st.step_in_epoch = 0;
    }
    Meter loss_m, data_t, batch_t;
    Timer since_log;
    double t_end = now_seconds();
    std::vector<data::Batch> pending;
    while (!stopping()) {
      std::optional<data::Batch> b = loader.next();
      if (!b) break;
      ++batch_i;
      pending.push_back(std::move(*b));
      if (int(pending.size()) < a.accum_freq) continue;
      const double t_data = now_seconds() - t_end;
      const int64_t i_accum = batch_i / a.accum_freq - 1;
      const int64_t gstep = steps_per_epoch * epoch + i_accum;
      const double lr = a.skip_scheduler ? a.lr : lr_at(sc, gstep);

      if (gstep == nan_at) model.backend().write_scalar(logit_scale, NAN);
      double loss, scale_fwd = NAN;
      comm->set_step(gstep);
      if (a.siglip) {
        loss = step.forward_backward_siglip(pending[0].images.data(), pending[0].tokens.data(), pending[0].size, *comm);
      } else if (world_size > 1) {
        loss = step.forward_backward_dist(pending[0].images.data(), pending[0].tokens.data(), pending[0].size, *comm,
                                          dist_mode);
      } else if (a.accum_freq == 1) {
        loss = step.forward_backward(pending[0].images.data(), pending[0].tokens.data(), pending[0].size);
      } else {
        std::vector<const float*> im;
        std::vector<const int32_t*> tk;
        for (auto& p : pending) im.push_back(p.images.data()), tk.push_back(p.tokens.data());
        loss = step.forward_backward_accum(im, tk, a.batch_size);
      }
      if (world_size > 1) {
        reducer->finish();
        // Every rank must take the same decision on a non-finite step and on a stop signal,
        // so the sum of the losses is agreed; the LOGGED loss stays this rank's own, as
        // OpenCLIP logs rank 0's (with --local-loss, its rows only).
        double ls[2] = {loss, double(g_stop_signal)};
        comm->allreduce_sum(ls, 2);
        if (!std::isfinite(ls[0])) loss = ls[0];
        if (ls[1] != 0) agreed_stop = g_stop_signal ? int(g_stop_signal) : SIGTERM;
        if (debug_rank_loss) std::fprintf(stderr, "debug: rank %d step %lld loss %.9g\n", rank, (long long)gstep, loss);
      }
      for (auto& p : pending) loader.recycle(std::move(p));  // reuse the batch buffers
      pending.clear();
      mask_frozen_grads(model, trainable);
      const double gnorm = clip_grad_norm(model.backend(), model.grads(), model.table(), a.grad_clip_norm);
      if (!std::isfinite(loss) || !std::isfinite(gnorm)) {
        ++st.bad_steps;
        log::warn("Non-finite {} at step {} (loss {}, grad norm {}): update skipped ({} in a row)",
                  std::isfinite(loss) ? "gradient" : "loss", gstep, loss, gnorm, st.bad_steps);
        if (st.bad_steps >= a.max_bad_steps) {
          log::error("{} non-finite steps in a row (--max-bad-steps): stopping; the last checkpoint is intact",
                     st.bad_steps);
          exit_code = 1;
          break;
        }
      } else {
        st.bad_steps = 0;
        scale_fwd = std::exp(model.logit_scale());  // the forward's scale, as OpenCLIP logs it
        opt.step(model.params(), model.grads(), lr, trainable);
        clamp_logit_scale(model.backend(), logit_scale);
        round_lp_params(model.table(), model.params(), precision);  // bf16 / pure_bf16
      }
      st.global_step = gstep + 1;
      st.step_in_epoch = batch_i;
      st.samples_seen += int64_t(a.batch_size) * a.accum_freq * world_size;
      const double t_batch = now_seconds() - t_end;
      t_end = now_seconds();
      train_seconds += t_batch;
      data_t.add(t_data), batch_t.add(t_batch);

      const bool last = batch_i == num_batches;
      if (i_accum % a.log_every_n_steps == 0 || last) {
        // As OpenCLIP's train_one_epoch: the loss meter is updated at logged steps only
        // ("coarsely sampled"), the text line shows the window's average data/batch times,
        // and samples/s and the TensorBoard scalars use the last step's values.
        loss_m.add(loss);
        const int64_t samples = batch_i * a.batch_size * world_size;
        const double sps = double(a.batch_size) * a.accum_freq * world_size / t_batch;
        const double sps_rank = sps / world_size;
        const double scale = std::isnan(scale_fwd) ? std::exp(model.logit_scale()) : scale_fwd;
        const double eta = batch_t.avg() * double((num_batches - batch_i) / a.accum_freq +
                                                  (a.epochs - epoch - 1) * steps_per_epoch);
        log::info("Train Epoch: {} [{:>{}}/{} ({:.0f}%)] Data (t): {:.3f} Batch (t): {:.3f}, {}/s, {}/s/gpu LR: {:5f} "
                  "Logit Scale: {:.3f} Contrastive_loss: {:#.5g} ({:#.5g}) Loss: {:#.5g} ({:#.5g}) ETA: {:.0f}s",
                  epoch, samples, std::to_string(samples_per_epoch).size(), samples_per_epoch,
                  100.0 * double(batch_i) / double(num_batches), data_t.avg(), batch_t.avg(), fmt_g(sps), fmt_g(sps_rank),
                  lr, scale, loss, loss_m.avg(), loss, loss_m.avg(), eta);
        if (tb) {
          const int64_t s = gstep;
          tb->add_scalar("train/data_time", float(t_data), s);
          tb->add_scalar("train/batch_time", float(t_batch), s);
          tb->add_scalar("train/samples_per_second", float(sps), s);
          tb->add_scalar("train/samples_per_second_per_gpu", float(sps_rank), s);
          tb->add_scalar("train/scale", float(scale), s);
          tb->add_scalar("train/lr", float(lr), s);
          tb->add_scalar("train/contrastive_loss", float(loss), s);
          tb->add_scalar("train/loss", float(loss), s);
        }
        data_t.reset(), batch_t.reset();
      }
      {
        const int width = 30, done = int(width * batch_i / std::max<int64_t>(1, num_batches));
        log::progress(fmt::format("epoch {} [{}{}] {}/{} loss {:.4f} {:.1f} samples/s", epoch, std::string(size_t(done), '='),
                                  std::string(size_t(width - done), ' '), batch_i, num_batches, loss,
                                  double(a.batch_size) * a.accum_freq / std::max(1e-9, t_batch)));
      }
      if (st.global_step == kill_at) std::raise(SIGKILL);
      if (st.global_step == term_at) std::raise(SIGTERM);
      if (st.global_step == hang_at)
        for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));
      if (a.checkpoint_every_n_steps > 0 && st.global_step % a.checkpoint_every_n_steps == 0 && !last) {
        ResumeState s = st;
        s.completed_epochs = epoch;
        s.loader_state = loader_state();
        save(fmt::format("epoch_{}_step_{}.pt", epoch, st.global_step), s);
        if (a.save_most_recent) save("epoch_latest.pt", s);
        if (master && run.enabled())
          for (const auto& p : prune_step_checkpoints(run.checkpoints, a.keep_step_checkpoints))
            log::info("Deleted the older step checkpoint {} (--keep-step-checkpoints {})", p, a.keep_step_checkpoints);
      }
    }
    if (exit_code) break;
    if (stopping()) {
      ResumeState s = st;
      s.completed_epochs = epoch;
      s.loader_state = loader_state();
      const std::string file = fmt::format("epoch_{}_step_{}.pt", epoch, st.global_step);
      save(file, s);
      if (a.save_most_recent) save("epoch_latest.pt", s);
      log::info("Signal {} received: saved a resumable checkpoint {} and stopped", stopping(), file);
      break;
    }
    const int64_t completed = epoch + 1;
    st.completed_epochs = completed;
    st.step_in_epoch = 0;
    st.loader_state.clear();
    if (tb) tb->flush();
    run_evaluation(completed);
    comm->barrier("evaluation");
    if (run.enabled()) {
      if (completed == a.epochs || (a.save_frequency > 0 && completed % a.save_frequency == 0)) {
        save(fmt::format("epoch_{}.pt", completed), st);
        if (a.delete_previous_checkpoint) {
          std::string prev = fs::join(run.checkpoints, fmt::format("epoch_{}.pt", completed - 1));
          if (master && fs::exists(prev)) std::remove(prev.c_str());
        }
      }
      if (a.save_most_recent) save("epoch_latest.pt", st);
    }
  }
  if (tb) tb->flush();
  log::end_progress();
  log::info("Done.");
  log::set_file("");
  return exit_code;
}

}  // namespace oc
