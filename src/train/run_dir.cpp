#include "train/run_dir.h"

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <map>

#include "core/check.h"
#include "core/fs.h"
#include "core/options.h"

namespace oc {

namespace {
bool logs_disabled(const std::string& logs) {
  std::string l = logs;
  std::transform(l.begin(), l.end(), l.begin(), [](unsigned char c) { return std::tolower(c); });
  return l == "none";
}

}  // namespace

RunDir prepare_run_dir(const TrainArgs& a, long unix_time, bool writer) {
  RunDir r;
  r.name = a.name.empty() ? default_run_name(a, unix_time) : a.name;
  if (std::string why = why_not_plain_name(a.name); !a.name.empty() && !why.empty())  // TrainArgs may come from code
    OC_USER_ERROR("--name '{}' {}", a.name, why);
  // --logs none: OpenCLIP still creates none/<name>/out.log but writes no checkpoints,
  // results or TensorBoard.
  const bool off = logs_disabled(a.logs);
  r.root = fs::join(off ? "none" : a.logs, r.name);
  r.log_path = fs::join(r.root, "out.log");
  if (fs::exists(r.log_path) && a.resume != "latest")
    OC_USER_ERROR("Error. Experiment already exists. Use --name {} to specify a new experiment. ({} exists; use "
                  "--resume latest to continue it)",
                  "<another name>", r.log_path);
  fs::make_dirs(r.root);
  if (::access(r.root.c_str(), W_OK) != 0) OC_USER_ERROR("cannot write to the run folder {} (read-only?)", r.root);
  if (writer) r.lock = std::make_shared<FolderLock>(r.root);
  if (!off) {
    r.checkpoints = fs::join(r.root, "checkpoints");
    fs::make_dirs(r.checkpoints);
    if (writer) remove_stale_tmp(r.checkpoints);
    if (a.report_to.find("tensorboard") != std::string::npos) {
      r.tensorboard = fs::join(r.root, "tensorboard");
      fs::make_dirs(r.tensorboard);
    }
  }
  return r;
}

void write_params(const RunDir& r, const TrainArgs& a, int rank, int local_rank, int world_size) {
  std::map<std::string, std::string> v = train_settings(a);
  // Resolved values OpenCLIP writes too.
  v["name"] = r.name;
  v["log_path"] = r.log_path;
  v["checkpoint_path"] = r.checkpoints.empty() ? "None" : r.checkpoints;
  v["tensorboard_path"] = r.tensorboard.empty() ? "" : r.tensorboard;
  v["tensorboard"] = r.tensorboard.empty() ? "False" : "True";
  v["wandb"] = "False";
  // init_distributed_device's values, as the writing process (global rank 0) holds them.
  v["distributed"] = world_size > 1 ? "True" : "False";
  v["world_size"] = std::to_string(world_size);
  v["rank"] = std::to_string(rank);
  v["local_rank"] = std::to_string(local_rank);
  v["device"] = "cpu";
  std::string text;
  for (auto& [k, val] : v) text += k + ": " + val + "\n";
  fs::write_atomic(fs::join(r.root, "params.txt"), text);
}

}  // namespace oc
