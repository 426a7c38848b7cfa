// OpenCLIP training checkpoints: torch.save'd dicts {epoch, name, state_dict, optimizer}
// that torch.load and OpenCLIP's --resume / --pretrained read, plus what exact resumption
// needs (AdamW moments live in `optimizer`; the step and the loader position in the extra
// "openclip_cpp" entry, which OpenCLIP ignores). Written atomically.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "model/clip.h"
#include "model/weights.h"
#include "optim/adamw.h"

namespace oc {

struct ResumeState {
  int64_t completed_epochs = 0;  // OpenCLIP's `epoch`: epochs fully done
  int64_t step_in_epoch = 0;     // batches done in the epoch in progress (0 at epoch end)
  int64_t global_step = 0;       // optimizer steps done
  int64_t samples_seen = 0;
  int64_t bad_steps = 0;         // consecutive non-finite steps
  int64_t patch_dropout_draws = 0;  // the patch-dropout stream's position (VisionTower)
  std::string loader_state;      // the data loader's position (its own JSON)
};

// trainable: per ParamTable entry, whether it is in the optimizer (frozen towers are not,
// as in OpenCLIP); empty = all.
void save_checkpoint(const std::string& path, const Clip& model, const AdamW& opt, const std::vector<bool>& trainable,
                     const std::string& run_name, const ResumeState& state, bool ddp_prefix = false);

struct Checkpoint {
  NamedTensors state_dict;
  bool has_epoch = false;  // a training checkpoint (else a bare state_dict)
  std::string name;
  ResumeState state;
  bool has_optimizer = false;
  bool has_extras = false;  // written by openclip-cpp (exact resume possible)
  // optimizer moments by parameter name (trainable ones), and the step count
  std::vector<std::pair<std::string, std::pair<HostTensor, HostTensor>>> moments;
  int64_t optimizer_step = 0;
};

Checkpoint load_checkpoint(const std::string& path);
// Model weights, then (if present) AdamW moments and step. Errors name the key.
void restore_checkpoint(const Checkpoint& ck, Clip& model, AdamW* opt, const std::string& where);

// OpenCLIP's --resume latest: checkpoints/epoch_latest.pt when --save-most-recent, else the
// natural-sort last *.pt under the folder; "" when there is none.
std::string find_latest_checkpoint(const std::string& checkpoint_dir, bool save_most_recent);

// --keep-step-checkpoints: deletes all but the `keep` newest (by global step) step
// checkpoints `epoch_E_step_S.pt` in `dir`; keep = 0 deletes nothing. Returns the deleted paths.
std::vector<std::string> prune_step_checkpoints(const std::string& dir, int keep);

}  // namespace oc
