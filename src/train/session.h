// One training run in pieces a reader can follow (train/trainer.cpp calls them in order):
//   setup.cpp           the processes, the run folder, the model, the data, the optimizer, resume
//   optimizer_step.cpp  one optimizer step (forward, loss, backward, all-reduce, update)
//   step_log.cpp        the per-step log line, TensorBoard scalars and the progress bar
//   epoch_end.cpp       evaluation, checkpoints and results.jsonl after an epoch (or a signal)
//   faults.cpp          the fault hooks of the crash-recovery tests (environment variables)
// The pieces share the run's state through the structs below, grouped by what owns them.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/step_rate.h"
#include "data/loader.h"
#include "dist/comm.h"
#include "io/tfevents.h"
#include "model/clip.h"
#include "model/model_source.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "text/text_tokenizer.h"
#include "train/args.h"
#include "train/checkpoint.h"
#include "train/run_dir.h"
#include "train/step_batches.h"

namespace oc {

// The processes of a data-parallel run: rank 0 (master) alone writes logs, TensorBoard and
// checkpoints and evaluates.
struct Cluster {
  dist::World world;
  std::unique_ptr<dist::Communicator> comm;
  int rank = 0, size = 1;
  bool master = true;
};

// The model being trained and how it trains.
struct Learner {
  ModelCfg cfg;
  Precision precision = Precision::Fp32;
  std::unique_ptr<Clip> model;
  std::vector<bool> trainable;  // per parameter (--lock-image / --lock-text)
  std::unique_ptr<AdamW> opt;
  ScheduleCfg schedule;
  float* logit_scale = nullptr;  // inside model->params()
};

// The training data.
struct Feed {
  data::DataConfig config;
  std::shared_ptr<const TextTokenizer> tok;
  std::unique_ptr<data::DataLoader> loader;
  std::unique_ptr<StepBatches> steps;  // the loader's batches by step, one step ahead
  int64_t num_batches = 0, steps_per_epoch = 0, samples_per_epoch = 0;
};

// Where the run starts: epoch, counters, and a mid-epoch loader position.
struct StartPoint {
  int64_t epoch = 0;
  ResumeState state;
  std::optional<data::LoaderPosition> position;
  std::string checkpoint;  // the resumed file ("" when starting fresh)
};

struct TrainSession {
  const TrainArgs& a;
  Cluster cluster;
  RunDir run;
  Learner learner;
  Feed feed;
  StartPoint start;
  ModelSource source;  // what --model / --pretrained resolved to (config, weights file, preprocessing)
  std::unique_ptr<io::EventWriter> tb;  // rank 0 with --report-to tensorboard
  double train_seconds = 0;             // steps and data waits so far (evaluation and saves excluded)
  StepRate step_rate;                   // the smoothed step time of the ETAs (step_log.cpp)
  int64_t final_epoch = 0;              // the last epoch (a.epochs, or earlier when TrainArgs::replan ends the run)
  int64_t plan_end = 0;                 // optimizer steps TrainArgs::replan asked for (0: no plan)
  explicit TrainSession(const TrainArgs& args) : a(args), final_epoch(args.epochs) {}
};

// setup.cpp, in this order.
void open_cluster(TrainSession& s);      // communicator from the launcher's environment
void open_run_folder(TrainSession& s);   // run folder, log file, params.txt
void build_learner(TrainSession& s);     // model (pretrained weights, precision), optimizer, schedule
void build_feed(TrainSession& s);        // loader; sets the schedule's length
void resume(TrainSession& s);            // --resume: weights, optimizer, counters, loader position
void sync_and_describe(TrainSession& s); // rank 0's weights to all, memory and epoch lines, TensorBoard

// epoch_end.cpp
// The loader position of every rank (collective: all ranks call it).
std::string loader_state(TrainSession& s);
// Saves checkpoints/<file> on rank 0 (then all ranks meet).
void save(TrainSession& s, const std::string& file, const ResumeState& state);
// After a step: the --checkpoint-every-n-steps checkpoint and pruning.
void step_checkpoint(TrainSession& s, int64_t epoch, const ResumeState& st);
// A signal stopped the run in `epoch`: a resumable checkpoint.
void save_on_stop(TrainSession& s, int64_t epoch, const ResumeState& st, int signal);
// After a completed epoch: evaluation, results.jsonl, epoch checkpoints.
void end_epoch(TrainSession& s, int64_t completed, const ResumeState& st);

}  // namespace oc
