// `openclip train`: OpenCLIP's training program (main.py + train.py) on the CPU backend.
#pragma once
#include <string>
#include <vector>

#include "train/args.h"

namespace oc {

// The library's training entry point: one run (OpenCLIP's main.py + train.py) with these
// settings (start from train_defaults() and set fields, or resolve_train_args()). Returns
// the process exit status (0 also after a SIGINT/SIGTERM that saved a resumable checkpoint).
int train(const TrainArgs& args);

// `openclip train ARGS`: parses OpenCLIP's flags once (core/flags.h) and calls train().
int train_main(const std::vector<std::string>& args);

}  // namespace oc
