// `openclip train`: OpenCLIP's training program (main.py + train.py) on the CPU backend.
#pragma once
#include <string>
#include <vector>

namespace oc {

// Runs training with OpenCLIP's flags. Returns the process exit status (0 also after a
// SIGINT/SIGTERM that saved a resumable checkpoint).
int train_main(const std::vector<std::string>& args);

}  // namespace oc
