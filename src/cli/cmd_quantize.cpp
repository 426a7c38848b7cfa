// openclip quantize: static int8 activation scales for --precision int8 (model/calibrate.h),
// written beside the weights so `--precision int8` (embed, classify, eval, index build, serve,
// bench infer, Python) starts with them and no calibration.
#include <algorithm>
#include <cstdio>

#include "cli/args.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "core/fs.h"
#include "core/log.h"
#include "data/stats.h"
#include "eval/zeroshot.h"
#include "index/sources.h"
#include "model/calibrate.h"
#include "model/model_source.h"

namespace oc::cli {
namespace {

// The folder's image files, sorted, at most `limit` (0: all).
std::vector<std::string> calibration_images(const std::string& dir, int limit) {
  if (dir.empty()) OC_USER_ERROR("quantize needs --calib FOLDER (calibration images)");
  if (!fs::is_dir(dir)) OC_USER_ERROR("--calib {}: not a folder", dir);
  data::DataStats stats;
  std::vector<std::string> out;
  for (const auto& it : index::list_sources(dir, &stats).items) {
    if (it.path.size() > 4 && it.path.compare(it.path.size() - 4, 4, ".tar") == 0)
      OC_USER_ERROR("--calib {}: holds shards (.tar); quantize reads image files (.jpg .jpeg .png .webp)", dir);
    out.push_back(it.path);
  }
  if (limit > 0 && out.size() > size_t(limit)) out.resize(size_t(limit));
  return out;
}

// --calib-captions, or the ImageNet templates over every 100th class name.
std::vector<std::string> calibration_captions(const std::string& file) {
  std::vector<std::string> out;
  if (!file.empty()) {
    auto text = fs::read_text(file);
    if (!text) OC_USER_ERROR("--calib-captions {}: {}", file, text.error());
    size_t b = 0;
    const std::string& t = text.value();
    while (b < t.size()) {
      size_t e = t.find('\n', b);
      if (e == std::string::npos) e = t.size();
      std::string line = t.substr(b, e - b);
      if (!line.empty() && line.back() == '\r') line.pop_back();
      if (!line.empty()) out.push_back(line);
      b = e + 1;
    }
    if (out.empty()) OC_USER_ERROR("--calib-captions {}: no captions (one per line)", file);
    return out;
  }
  const ZeroShotTask task = imagenet_task();
  for (size_t c = 0; c < task.classnames.size(); c += 100)
    for (const std::string& tmpl : task.templates) out.push_back(fill_template(tmpl, task.classnames[c]));
  return out;
}

int run(const std::vector<std::string>& args) {
  std::vector<std::string> a = args;
  for (auto& s : a)
    if (s == "-o") s = "--out";
  QuantizeArgs q;
  if (!parse_flags("quantize", a, &q)) return 0;
  // Random weights (seed 0, as bench infer's) only with --out: scales for benchmarks, nothing to sit beside.
  if (q.pretrained.empty() && !model_carries_weights(q.model) && q.out.empty())
    OC_USER_ERROR(
        "quantize needs --pretrained WEIGHTS|TAG|hf-hub:ORG/NAME, --model a hub folder, or --out FILE "
        "(then random weights, for benchmarks)");
  const std::vector<std::string> images = calibration_images(q.calib, q.calib_images);
  const std::vector<std::string> captions = calibration_captions(q.calib_captions);
  InferenceOptions io;
  io.model = q.model, io.weights = q.pretrained;
  io.precision = Precision::Fp32;  // calibration measures the fp32 model's activations
  io.max_batch = q.batch_size, io.threads = q.threads;
  InferenceModel model(io);
  const std::string out = q.out.empty() ? int8_scales_beside(model.weights()) : q.out;
  log::info("quantize: {} on {} images, {} captions", model.cfg().name, images.size(), captions.size());
  CalibrationReport r = calibrate_int8(model, images, captions, q.calib_percentile);
  write_int8_scales(out, r.scales);
  std::printf("wrote %s: %zu int8 scales (%s) of %s from %lld images (%lld unreadable, skipped) and %lld captions\n",
              out.c_str(), r.scales.scale.size(), r.scales.range.c_str(), r.scales.model.c_str(), (long long)r.scales.calib_images,
              (long long)r.unreadable, (long long)r.scales.calib_texts);
  return 0;
}

OC_REGISTER_COMMAND("quantize", "static int8 activation scales from calibration images (for --precision int8)", run);

}  // namespace
}  // namespace oc::cli
