// `openclip bench data PATTERN`: the data loader's throughput (decode, augmentation,
// tokenization, batching) with --workers threads. Dispatched from cmd_bench.cpp.
#pragma once
#include <string>
#include <vector>

namespace oc::cli {

int run_bench_data(const std::vector<std::string>& args);

}  // namespace oc::cli
