// Reading a run's TensorBoard scalars back (for `openclip logs export|compare` and the
// HTML report): every event file of the run, in file-name order, as TensorBoard reads a run
// folder, with its restart rule (a SessionLog START at step S drops earlier points >= S).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace oc {

struct ScalarSeries {
  std::map<int64_t, float> by_step;  // last value written for each step
  std::map<int64_t, double> wall_time;
};

// `where`: a run folder (its tensorboard/ is used), a folder of event files, or one file.
std::map<std::string, ScalarSeries> read_run_scalars(const std::string& where);

struct CompareRow {
  int64_t step;
  double a, b, rel_diff;
};
struct CompareResult {
  std::vector<CompareRow> rows;  // every common step
  size_t only_a = 0, only_b = 0;
  double max_rel_diff = 0;
};
// rel_diff = |a - b| / max(|b|, 1e-12): B is the reference.
CompareResult compare_series(const ScalarSeries& a, const ScalarSeries& b);

}  // namespace oc
