// openclip demo: the main job on the embedded default, end to end on real data.
//   1. import Fashion-MNIST (Debian's dataset-fashion-mnist) into webdataset shards (once);
//   2. time a few training steps of the demo recipe and size the run to --minutes;
//   3. train a small CLIP from scratch with `openclip train` (the same code path and run
//      folder as the CLI), zero-shot evaluated on the 10,000 test images after every epoch
//      with prompts not used in training;
//   4. the HTML report (`openclip report`) from the event files, results.jsonl and the
//      last evaluation's per-sample predictions (zeroshot_<task>.json);
//   5. one JSON line: zeroshot_top1/top5, train_seconds, seconds_to_85, run_dir, report.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <nlohmann/json.hpp>

#include "cli/command.h"
#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/flags.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/fashion_mnist.h"
#include "eval/evaluate.h"
#include "model/config.h"
#include "optim/adamw.h"
#include "optim/step.h"
#include "train/trainer.h"

namespace oc::cli {
namespace {

// The recipe (README "The main job"): chosen by the experiments recorded in
// docs/BENCHMARKS.md to reach the quality target within 10 minutes on 2 cores.
struct Recipe {
  std::string model = "fmnist-S";
  int batch_size = 128;
  double lr = 1e-3, wd = 0.1;
  int64_t warmup = 100;
  int epochs = 10;          // evaluation points: the planned samples are split into this many epochs
  double max_passes = 12;   // at most this many passes over the 60,000 training images
  std::string precision = "fp32";
};

// Training samples/s of the recipe on this machine: three timed steps after one warm-up,
// on random images and caption-length token rows (the speed does not depend on content).
double measure_samples_per_second(const Recipe& r) {
  ModelCfg cfg = load_model_config(r.model);
  Clip model(cfg);
  model.init(0);
  model.set_precision(parse_precision(r.precision));
  const int64_t B = r.batch_size;
  model.plan_training(B);
  AdamW opt(model.table(), default_adamw(cfg.name));
  ContrastiveStep step(model, B);
  Rng rng(1);
  const int S = cfg.vision.image_size, ctx = cfg.text.context_length;
  std::vector<float> images(static_cast<size_t>(B * 3 * S * S));
  for (auto& v : images) v = float(rng.normal());
  std::vector<int32_t> tokens(static_cast<size_t>(B * ctx), 0);
  for (int64_t i = 0; i < B; ++i) {  // Fashion-MNIST captions are 6-14 tokens long
    const int len = 8 + int(rng.next_u64() % 9);
    int32_t* row = tokens.data() + i * ctx;
    row[0] = cfg.text.vocab_size - 2;
    for (int t = 1; t < len - 1; ++t) row[t] = int32_t(rng.next_u64() % 40000);
    row[len - 1] = cfg.text.vocab_size - 1;
  }
  auto one = [&] {
    step.forward_backward(images.data(), tokens.data(), B);
    opt.step(model.params(), model.grads(), 1e-5);
  };
  one();
  Timer t;
  const int steps = 3;
  for (int i = 0; i < steps; ++i) one();
  return double(B * steps) / t.seconds();
}

// Reads checkpoints/results.jsonl: per-epoch zero-shot top-1 and training seconds.
struct EpochResult {
  int64_t epoch;
  double top1, top5, train_seconds;
};
std::vector<EpochResult> read_results(const std::string& run_dir, const std::string& key) {
  std::vector<EpochResult> out;
  auto text = fs::read_text(fs::join(run_dir, "checkpoints/results.jsonl"));
  if (!text.ok()) return out;
  size_t pos = 0;
  const std::string& s = text.value();
  while (pos < s.size()) {
    size_t nl = s.find('\n', pos);
    if (nl == std::string::npos) nl = s.size();
    auto j = nlohmann::json::parse(s.substr(pos, nl - pos), nullptr, false);
    pos = nl + 1;
    if (j.is_discarded() || !j.contains(key + "-top1")) continue;
    out.push_back({j.value("epoch", int64_t(0)), j[key + "-top1"].get<double>(), j.value(key + "-top5", 0.0),
                   j.value("train_seconds", 0.0)});
  }
  return out;
}

int run(const std::vector<std::string>& args) {
  Recipe rc;
  Options o = options_for("demo");
  o.parse(args);
  if (o.help_requested()) return std::printf("%s", o.help().c_str()), 0;
  if (o.get_int("threads") > 0) set_num_threads(int(o.get_int("threads")));
  rc.model = o.get("model");
  rc.batch_size = int(o.get_int("batch-size"));
  rc.lr = o.get_float("lr");
  rc.wd = o.get_float("wd");
  rc.warmup = o.get_int("warmup");
  rc.epochs = int(o.get_int("epochs"));
  rc.max_passes = o.get_float("max-passes");
  rc.precision = o.get("precision");
  (void)parse_precision(rc.precision);  // a bad value fails here, before the import and timing
  const double minutes = o.get_float("minutes");
  if (!(minutes > 0)) OC_USER_ERROR("--minutes must be positive (got {})", minutes);
  if (rc.batch_size <= 0 || rc.epochs <= 0) OC_USER_ERROR("--batch-size and --epochs must be positive");
  const std::string out = o.get("out");

  // 1. Data (idempotent: a complete import is reused).
  data::FashionMnistOptions fo;
  fo.out = fs::join(out, o.get_int("limit") > 0 ? fmt::format("fmnist-limit{}", o.get_int("limit")) : "fmnist");
  fo.limit = o.get_int("limit") > 0 ? o.get_int("limit") : -1;
  fo.source = o.get("source");
  std::string train_data, test_data;
  for (auto& s : data::import_fashion_mnist(fo)) {
    log::info("Fashion-MNIST {}: {} samples in {} shards at {}{}", s.name, s.samples, s.shards, s.dir,
              s.reused ? " (already imported)" : "");
    OC_CHECK(s.shards > 0, "{}: the import reports no shards", s.dir);
    (s.name == "train" ? train_data : test_data) = fs::join(s.dir, fmt::format("{{00000..{:05d}}}.tar", s.shards - 1));
  }
  const std::string task_json = fs::join(fo.out, "fashion_mnist_zeroshot.json");

  // 2. Size the run: samples = budget x measured speed, in whole batches per epoch.
  int64_t samples = o.get_int("samples");
  if (samples <= 0) {
    const double sps = measure_samples_per_second(rc);
    const double cap = rc.max_passes * double(fo.limit > 0 ? std::min<int64_t>(fo.limit, 60000) : 60000);
    // 0.93: the loader, logging and checkpoint writes cost a few percent over the bare step.
    samples = int64_t(std::min(cap, 0.93 * sps * minutes * 60.0));
    log::info("Demo: {} at batch {} trains {:.0f} samples/s here: {} samples fit in {} minutes ({:.2f} passes)",
              rc.model, rc.batch_size, sps, samples, minutes, double(samples) / 60000.0);
  }
  const int64_t per_epoch = std::max<int64_t>(1, samples / rc.epochs / rc.batch_size) * rc.batch_size;

  // 3. Train through the CLI's own program.
  std::string name = o.get("name");
  if (name.empty()) {
    std::time_t t = std::time(nullptr);
    std::tm tm{};
    localtime_r(&t, &tm);
    char date[64];
    std::strftime(date, sizeof date, "%Y_%m_%d-%H_%M_%S", &tm);
    name = fmt::format("fmnist-{}", date);
  }
  const std::string logs = fs::join(out, "logs");
  std::vector<std::string> targs = {
      "--train-data", train_data, "--dataset-type", "webdataset", "--train-num-samples", std::to_string(per_epoch),
      "--batch-size", std::to_string(rc.batch_size), "--epochs", std::to_string(rc.epochs), "--model", rc.model,
      "--lr", fmt::format("{}", rc.lr), "--wd", fmt::format("{}", rc.wd), "--warmup", std::to_string(rc.warmup),
      "--workers", std::to_string(o.get_int("workers")), "--precision", rc.precision, "--seed",
      std::to_string(o.get_int("seed")), "--logs", logs, "--name", name, "--report-to", "tensorboard",
      "--log-every-n-steps", "10", "--save-frequency", "0", "--zeroshot-data", test_data,
      "--zeroshot-classnames", task_json, "--zeroshot-frequency", "1"};
  const int rc_train = train_main(targs);
  if (rc_train != 0) OC_USER_ERROR("demo: training failed (exit status {}); see {}", rc_train, fs::join(logs, name));
  const std::string run_dir = fs::join(logs, name);

  // 4. The last epoch's zero-shot evaluation left the per-sample predictions in the run
  // folder (zeroshot_<task>.json); the report draws from it and the event files.
  const std::string task_name = load_zeroshot_task(task_json).name;
  auto epochs = read_results(run_dir, task_name + "-zeroshot");
  if (epochs.empty() || epochs.back().epoch != rc.epochs)
    OC_USER_ERROR("demo: {} has no zero-shot result for the last epoch", fs::join(run_dir, "checkpoints/results.jsonl"));
  const EpochResult& last = epochs.back();
  std::string report;
  if (!o.flag("no-report")) {
    // A failing report must not lose the trained run: warn and still print the result.
    try {
      for (const Command& c : registry())
        if (c.name == "report" && c.run({run_dir}) == 0) report = fs::join(run_dir, "report.html");
    } catch (const std::exception& e) {
      log::warn("demo: the report failed: {}", e.what());
    }
    if (report.empty()) log::warn("demo: no report written; retry with `openclip report {}`", run_dir);
  }

  const double train_seconds = last.train_seconds;
  nlohmann::json seconds_to_85 = nullptr;
  for (auto& e : epochs)
    if (e.top1 >= 0.85) {
      seconds_to_85 = std::round(e.train_seconds * 10) / 10;
      break;
    }
  nlohmann::json j = {{"zeroshot_top1", last.top1},
                      {"zeroshot_top5", last.top5},
                      {"train_seconds", std::round(train_seconds * 10) / 10},
                      {"seconds_to_85", seconds_to_85},
                      {"samples", per_epoch * rc.epochs},
                      {"model", rc.model},
                      {"run_dir", run_dir},
                      {"report", report}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

OC_REGISTER_COMMAND("demo", "the main job: Fashion-MNIST import, training, zero-shot evaluation, report", run);

}  // namespace
}  // namespace oc::cli
