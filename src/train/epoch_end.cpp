// What happens between the steps of a run: checkpoints, and after an epoch the evaluation
// (OpenCLIP's evaluate()) with its results in the log, TensorBoard and results.jsonl.
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "core/fs.h"
#include "core/log.h"
#include "eval/evaluate.h"
#include "train/session.h"

namespace oc {

std::string loader_state(TrainSession& s) {
  // After the last step's batches: the next step's, taken ahead, are read again on resume.
  std::string mine = s.feed.steps->position().to_json().dump();
  if (s.cluster.size == 1) return mine;
  nlohmann::json j;
  for (auto& r : s.cluster.comm->allgather_strings(mine)) j["ranks"].push_back(nlohmann::json::parse(r));
  return j.dump();
}

void save(TrainSession& s, const std::string& file, const ResumeState& state) {
  if (s.cluster.master && s.run.enabled()) {
    if (s.tb) s.tb->flush();  // events up to a checkpoint are durable with it
    ResumeState st = state;  // every rank has drawn as often (one draw per training forward)
    st.patch_dropout_draws = int64_t(s.learner.model->vision_tower().patch_dropout_draws());
    save_checkpoint(fs::join(s.run.checkpoints, file), *s.learner.model, *s.learner.opt, s.learner.trainable,
                    s.run.name, st, s.cluster.size > 1);
  }
  s.cluster.comm->barrier("checkpoint save");
}

void step_checkpoint(TrainSession& s, int64_t epoch, const ResumeState& st) {
  const TrainArgs& a = s.a;
  if (a.checkpoint_every_n_steps <= 0 || st.global_step % a.checkpoint_every_n_steps != 0) return;
  ResumeState r = st;
  r.completed_epochs = epoch;
  r.loader_state = loader_state(s);
  save(s, fmt::format("epoch_{}_step_{}.pt", epoch, st.global_step), r);
  if (a.save_most_recent) save(s, "epoch_latest.pt", r);
  if (s.cluster.master && s.run.enabled())
    for (const auto& p : prune_step_checkpoints(s.run.checkpoints, a.keep_step_checkpoints))
      log::info("Deleted the older step checkpoint {} (--keep-step-checkpoints {})", p, a.keep_step_checkpoints);
}

void save_on_stop(TrainSession& s, int64_t epoch, const ResumeState& st, int signal) {
  ResumeState r = st;
  r.completed_epochs = epoch;
  r.loader_state = loader_state(s);
  const std::string file = fmt::format("epoch_{}_step_{}.pt", epoch, st.global_step);
  save(s, file, r);
  if (s.a.save_most_recent) save(s, "epoch_latest.pt", r);
  log::info("Signal {} received: saved a resumable checkpoint {} and stopped", signal, file);
}

namespace {

// What the evaluation after `epoch_done` covers: zero-shot when epoch_done %
// --zeroshot-frequency == 0 (or the last epoch), val-data retrieval likewise with
// --val-frequency; the last one also leaves per-sample predictions for `openclip report`.
EvalData eval_plan(const TrainSession& s, int64_t epoch_done) {
  const TrainArgs& a = s.a;
  const bool last = epoch_done == s.final_epoch;
  EvalData e;
  if (a.zeroshot_frequency > 0 && (epoch_done % a.zeroshot_frequency == 0 || last)) {
    e.imagenet_val = a.imagenet_val;
    e.zeroshot_data = a.zeroshot_data;
    set_zeroshot_classnames(&e, a.zeroshot_classnames);
    e.templates_file = a.zeroshot_templates;
  }
  if (a.val_frequency > 0 && (epoch_done % a.val_frequency == 0 || last)) e.val_data = a.val_data;
  e.val_num_samples = a.val_num_samples > 0 ? a.val_num_samples : -1;
  e.dedup_images = a.val_dedup_images;
  e.batch_size = a.batch_size;
  e.workers = std::max(1, a.workers);
  e.base = s.feed.config;
  if (last && s.run.enabled()) {
    e.predictions_dir = s.run.root;
    e.checkpoint = fs::join(s.run.checkpoints, fmt::format("epoch_{}.pt", epoch_done));
  }
  return e;
}

void record_results(TrainSession& s, std::map<std::string, double> m, int64_t epoch_done) {
  m["epoch"] = double(epoch_done);
  // Our addition to OpenCLIP's keys: training wall time so far in this process (steps and
  // data waits; evaluation and checkpoint writes excluded), for time-to-accuracy figures.
  m["train_seconds"] = s.train_seconds;
  std::string line = fmt::format("Eval Epoch: {} ", epoch_done);
  for (auto& [k, v] : m) line += fmt::format("{}: {:.4f}\t", k, v);
  log::info("{}", line);
  if (s.tb)
    for (auto& [k, v] : m)
      if (k != "epoch" && k != "train_seconds") s.tb->add_scalar("val/" + k, float(v), epoch_done);
  if (!s.run.enabled()) return;
  nlohmann::json j;
  for (auto& [k, v] : m) j[k] = (k == "epoch" || k == "num_samples") ? nlohmann::json(int64_t(v)) : nlohmann::json(v);
  const std::string path = fs::join(s.run.checkpoints, "results.jsonl");
  std::string prev = fs::exists(path) ? fs::read_text(path).value() : "";
  fs::write_atomic(path, prev + j.dump() + "\n");
}

void evaluate_epoch(TrainSession& s, int64_t epoch_done) {
  if (!s.cluster.master) return;
  EvalData e = eval_plan(s, epoch_done);
  if (e.imagenet_val.empty() && e.zeroshot_data.empty() && e.val_data.empty()) return;
  Feed& f = s.feed;
  const Clip& model = *s.learner.model;
  // An inference copy of the weights being trained, so the training arenas (activations
  // planned for the training batch, the bf16 weight copies) stay untouched. Not an
  // InferenceModel (model/inference.h): that one loads a model source (a weights file, or a
  // random init) and its own tokenizer, where this needs the live training weights on the
  // run's backend and the feed's tokenizer; loading the source and overwriting its weights
  // would read the file again after every epoch for the same result.
  Clip evm(s.learner.cfg, model.backend());
  model.backend().copy(evm.params(), model.params(), sizeof(float) * model.table().total);
  evm.set_precision(s.learner.precision);
  evm.plan_inference(s.a.batch_size);
  record_results(s, evaluate(evm, f.tok, e), epoch_done);
}

}  // namespace

void end_epoch(TrainSession& s, int64_t completed, const ResumeState& st) {
  const TrainArgs& a = s.a;
  if (s.tb) s.tb->flush();
  evaluate_epoch(s, completed);
  s.cluster.comm->barrier("evaluation");
  if (!s.run.enabled()) return;
  if (completed == s.final_epoch || (a.save_frequency > 0 && completed % a.save_frequency == 0))
    save(s, fmt::format("epoch_{}.pt", completed), st);
  // OpenCLIP 2.24: after every epoch, saved or not (--save-frequency > 1 is refused: args.cpp).
  if (a.delete_previous_checkpoint) {
    std::string prev = fs::join(s.run.checkpoints, fmt::format("epoch_{}.pt", completed - 1));
    if (s.cluster.master && fs::exists(prev)) std::remove(prev.c_str());
  }
  if (a.save_most_recent) save(s, "epoch_latest.pt", st);
}

}  // namespace oc
