// `openclip report RUN_DIR`: one self-contained HTML page about a training run: the run's
// settings and final zero-shot accuracy, its training curves, zero-shot accuracy per
// epoch, and (from zeroshot_<task>.json) per-class accuracy, the confusion matrix and
// example test images with their top-3 predictions. Inline CSS and SVG, images as data:
// URIs, no network; a few lines of optional script add hover read-outs to the curves.
#pragma once
#include <string>

#include "report/run_data.h"

namespace oc::report {

struct ReportOptions {
  std::string title;  // empty: the run's name
  std::string generated_at;  // footer timestamp; empty: now (tests fix it)
};

std::string render_report(const RunData& run, const ReportOptions& opt = {});

// Reads `run_dir`, renders, writes `out_path` (empty: RUN_DIR/report.html) atomically and
// returns the path written. Throws oc::Error naming the folder when it does not exist.
std::string write_report(const std::string& run_dir, const std::string& out_path, const ReportOptions& opt = {});

}  // namespace oc::report
