// The training program: set-up (train/setup.cpp), then epochs of steps (train/optimizer_step.cpp)
// with their log (train/step_log.cpp), and after each epoch the evaluation and checkpoints
// (train/epoch_end.cpp). train/session.h holds the run's state.
#include "train/trainer.h"

#include <csignal>
#include <cstdio>

#include "core/flags.h"
#include "core/check.h"
#include "core/log.h"
#include "core/timer.h"
#include "train/faults.h"
#include "train/session.h"
#include "train/optimizer_step.h"
#include "train/step_log.h"

namespace oc {

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;
extern "C" void on_stop_signal(int sig) { g_stop_signal = sig; }

enum class EpochEnd { Done, Stopped, GaveUp, PlanEnd };

class EpochRunner {
 public:
  EpochRunner(TrainSession& s, TrainStep& step, const FaultHooks& faults) : s_(s), step_(step), faults_(faults) {}
  // With several ranks a signal counts once all ranks know it (agreed at each step's
  // all-reduce), so they stop after the same step and save one checkpoint together.
  int stopping() const { return s_.cluster.size > 1 ? step_.agreed_stop() : int(g_stop_signal); }
  EpochEnd run(int64_t epoch, ResumeState* st);

 private:
  int64_t start(int64_t epoch, ResumeState* st);  // batches already done in this epoch
  bool replan(int64_t steps_done);                 // TrainArgs::replan; true: the plan ends here
  TrainSession& s_;
  TrainStep& step_;
  const FaultHooks& faults_;
};

int64_t EpochRunner::start(int64_t epoch, ResumeState* st) {
  data::DataLoader& loader = *s_.feed.loader;
  std::optional<data::LoaderPosition>& pos = s_.start.position;
  if (pos && pos->epoch == epoch) {
    Status r = loader.resume(*pos);
    if (!r) OC_USER_ERROR("{}: cannot restore the data position: {}", s_.start.checkpoint, r.error());
    const int64_t done = pos->batches;
    pos.reset();
    s_.feed.steps->restart();
    return done;
  }
  loader.start_epoch(epoch);
  s_.feed.steps->restart();
  st->step_in_epoch = 0;
  return 0;
}

bool EpochRunner::replan(int64_t steps_done) {
  if (!s_.a.replan) return false;
  const int64_t total = s_.a.replan(steps_done, s_.train_seconds);
  if (total > 0 && total != s_.plan_end) {
    s_.plan_end = total;
    s_.learner.schedule.total_steps = total;  // the LR schedule ends where the run now ends
  }
  return s_.plan_end > 0 && steps_done >= s_.plan_end;
}

EpochEnd EpochRunner::run(int64_t epoch, ResumeState* st) {
  const TrainArgs& a = s_.a;
  const Feed& f = s_.feed;
  log::info("Start epoch {}", epoch);
  int64_t batch_i = start(epoch, st);
  StepLogger logger(s_, epoch);
  double t_end = now_seconds();
  while (!stopping()) {
    if (!f.steps->next_step()) break;
    batch_i += a.accum_freq;
    StepTimes t;
    t.data = now_seconds() - t_end;
    const int64_t i_accum = batch_i / a.accum_freq - 1;
    const int64_t gstep = f.steps_per_epoch * epoch + i_accum;
    const double lr = a.skip_scheduler ? a.lr : lr_at(s_.learner.schedule, gstep);
    const StepOutcome out = step_.run(*f.steps, gstep, lr, int(g_stop_signal), st);
    if (out.give_up) return EpochEnd::GaveUp;
    st->global_step = gstep + 1;
    st->step_in_epoch = batch_i;
    st->samples_seen += int64_t(a.batch_size) * a.accum_freq * s_.cluster.size;
    t.batch = now_seconds() - t_end;
    t_end = now_seconds();
    s_.train_seconds += t.batch;
    logger.log(gstep, i_accum, batch_i, lr, out.loss, out.scale, t);
    faults_.after_step(st->global_step);
    if (batch_i != f.num_batches) step_checkpoint(s_, epoch, *st);
    if (replan(st->global_step)) return EpochEnd::PlanEnd;
  }
  return stopping() ? EpochEnd::Stopped : EpochEnd::Done;
}

}  // namespace

int train(const TrainArgs& a) {
  OC_CHECK(a.batch_size > 0 && a.accum_freq >= 1 && a.log_every_n_steps >= 1,
           "TrainArgs: batch_size {}, accum_freq {}, log_every_n_steps {} out of range", a.batch_size, a.accum_freq,
           a.log_every_n_steps);
  TrainSession s(a);
  open_cluster(s);
  open_run_folder(s);
  build_learner(s);
  build_feed(s);
  resume(s);
  sync_and_describe(s);
  std::signal(SIGINT, on_stop_signal);
  std::signal(SIGTERM, on_stop_signal);
  const FaultHooks faults = FaultHooks::from_env(s.cluster.rank);
  TrainStep step(s, faults);
  EpochRunner epochs(s, step, faults);
  ResumeState st = s.start.state;
  int exit_code = 0;
  for (int64_t epoch = s.start.epoch; epoch < a.epochs && !epochs.stopping(); ++epoch) {
    const EpochEnd end = epochs.run(epoch, &st);
    if (end == EpochEnd::GaveUp) {
      exit_code = 1;
      break;
    }
    if (end == EpochEnd::Stopped) {
      save_on_stop(s, epoch, st, epochs.stopping());
      break;
    }
    if (end == EpochEnd::PlanEnd) s.final_epoch = epoch + 1;
    st.completed_epochs = epoch + 1;
    st.step_in_epoch = 0;
    st.loader_state.clear();
    end_epoch(s, epoch + 1, st);
    if (end == EpochEnd::PlanEnd) break;
  }
  if (s.tb) s.tb->flush();
  log::end_progress();
  log::info("Done.");
  log::set_file("");
  return exit_code;
}

int train_main(const std::vector<std::string>& argv) {
  Options o = options_for("train");
  o.parse(argv);
  if (o.help_requested()) {
    std::printf("%s", o.help().c_str());
    return 0;
  }
  return train(resolve_train_args(o));
}

}  // namespace oc
