#include "io/run_logs.h"

#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <memory>

#include "core/check.h"
#include "core/fs.h"
#include "io/tfevents.h"

namespace oc {

namespace {
std::vector<std::string> event_files(const std::string& dir) {
  std::vector<std::string> out;
  std::unique_ptr<DIR, int (*)(DIR*)> d(opendir(dir.c_str()), closedir);
  if (!d) return out;
  while (dirent* e = readdir(d.get())) {
    std::string n = e->d_name;
    if (n.find("tfevents") != std::string::npos) out.push_back(fs::join(dir, n));
  }
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

std::map<std::string, ScalarSeries> read_run_scalars(const std::string& where) {
  std::vector<std::string> files;
  if (fs::is_dir(where)) {
    files = event_files(fs::join(where, "tensorboard"));
    if (files.empty()) files = event_files(where);
  } else if (fs::exists(where)) {
    files.push_back(where);
  }
  if (files.empty())
    OC_USER_ERROR("{}: no TensorBoard event files (looked in {}/tensorboard and {}; was the run started with "
                  "--report-to tensorboard?)",
                  where, where, where);
  // One stream over all files, so a restart marker in a later file applies to earlier ones.
  std::vector<uint8_t> all;
  for (auto& f : files) {
    auto bytes = fs::read_file(f);
    if (!bytes) OC_USER_ERROR("{}", bytes.error());
    auto scan = io::scan_events(bytes.value(), false, f);
    if (!scan) OC_USER_ERROR("{}", scan.error());
    all.insert(all.end(), bytes->begin(), bytes->begin() + int64_t(scan->complete_bytes));
  }
  auto scan = io::scan_events(all, true, where);
  if (!scan) OC_USER_ERROR("{}", scan.error());
  std::map<std::string, ScalarSeries> out;
  for (auto& p : scan->scalars) {
    out[p.tag].by_step[p.step] = p.value;
    out[p.tag].wall_time[p.step] = p.wall_time;
  }
  return out;
}

CompareResult compare_series(const ScalarSeries& a, const ScalarSeries& b) {
  CompareResult r;
  for (auto& [step, va] : a.by_step) {
    auto it = b.by_step.find(step);
    if (it == b.by_step.end()) {
      ++r.only_a;
      continue;
    }
    const double vb = it->second;
    double rel = std::fabs(double(va) - vb) / std::max(std::fabs(vb), 1e-12);
    if (std::isnan(va) != std::isnan(vb)) rel = INFINITY;
    r.rows.push_back({step, va, vb, rel});
    r.max_rel_diff = std::max(r.max_rel_diff, rel);
  }
  for (auto& [step, _] : b.by_step)
    if (!a.by_step.count(step)) ++r.only_b;
  return r;
}

}  // namespace oc
