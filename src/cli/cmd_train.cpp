// openclip train: OpenCLIP's training program (see train/trainer.h).
#include "cli/command.h"
#include "train/trainer.h"

namespace oc::cli {
namespace {
OC_REGISTER_COMMAND("train", "train or fine-tune with OpenCLIP's flags (run folder, checkpoints, TensorBoard)",
                    train_main);
}  // namespace
}  // namespace oc::cli
