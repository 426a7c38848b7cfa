// The run folder, as OpenCLIP lays it out: logs/<name>/{out.log, params.txt,
// checkpoints/{epoch_N.pt, epoch_latest.pt, results.jsonl}, tensorboard/}.
#pragma once
#include <string>

#include "core/options.h"
#include "train/args.h"

namespace oc {

struct RunDir {
  std::string name;
  std::string root;         // logs/<name> ("" when --logs none)
  std::string log_path;     // out.log
  std::string checkpoints;  // "" when --logs none
  std::string tensorboard;  // "" unless --report-to tensorboard
  bool enabled() const { return !checkpoints.empty(); }
};

// Resolves the name and creates the folders. Throws OpenCLIP's "Experiment already exists"
// error unless resuming with `latest`. Removes stale temporary checkpoint files.
RunDir prepare_run_dir(const TrainArgs& a, long unix_time);
// params.txt: every resolved setting, "name: value" sorted by name (as OpenCLIP).
void write_params(const RunDir& r, const Options& o, const TrainArgs& a);

}  // namespace oc
