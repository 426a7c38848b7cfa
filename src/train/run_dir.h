// The run folder, as OpenCLIP lays it out: logs/<name>/{out.log, params.txt,
// checkpoints/{epoch_N.pt, epoch_latest.pt, results.jsonl}, tensorboard/}.
#pragma once
#include <memory>
#include <string>

#include "train/args.h"
#include "core/folder_lock.h"

namespace oc {

struct RunDir {
  std::string name;
  std::string root;         // logs/<name> ("" when --logs none)
  std::string log_path;     // out.log
  std::string checkpoints;  // "" when --logs none
  std::string tensorboard;  // "" unless --report-to tensorboard
  std::shared_ptr<FolderLock> lock;  // held by the writer (rank 0) for the life of the run
  bool enabled() const { return !checkpoints.empty(); }
};

// Resolves the name and creates the folders. Throws OpenCLIP's "Experiment already exists"
// error unless resuming with `latest`. The writer (`writer`: rank 0) locks the folder
// (refused while another run holds it) and then removes temporary checkpoint files whose
// writer is gone.
RunDir prepare_run_dir(const TrainArgs& a, long unix_time, bool writer = true);
// params.txt: every resolved setting, "name: value" sorted by name (as OpenCLIP), with the
// writer's rank and local rank and the world size (`distributed` when it is over 1).
void write_params(const RunDir& r, const TrainArgs& a, int rank = 0, int local_rank = 0, int world_size = 1);

}  // namespace oc
