// openclip demo: the main job on the embedded default, end to end on real data.
//   1. import Fashion-MNIST (Debian's dataset-fashion-mnist) into webdataset shards (once);
//   2. time a few training steps of the demo recipe and size the run to --minutes;
//   3. train a small CLIP from scratch with train(TrainArgs) (the same code path and run
//      folder as `openclip train`), zero-shot evaluated on the 10,000 test images after every epoch
//      with prompts not used in training;
//   4. the HTML report (`openclip report`) from the event files, results.jsonl and the
//      last evaluation's per-sample predictions (zeroshot_<task>.json);
//   5. one JSON line: zeroshot_top1/top5, train_seconds (and the CPU seconds of training),
//      seconds_to_85/90, the recipe, the CPU kind, run_dir, report.
#include <algorithm>
#include <deque>
#include <memory>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <sys/resource.h>
#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/command.h"
#include "cli/demo_recipe.h"
#include "core/check.h"
#include "core/fs.h"
#include "core/log.h"
#include "core/machine.h"
#include "core/flags.h"
#include "core/parallel.h"
#include "core/rng.h"
#include "core/timer.h"
#include "data/fashion_mnist.h"
#include "eval/evaluate.h"
#include "model/config.h"
#include "optim/adamw.h"
#include "step/contrastive_step.h"
#include "train/trainer.h"

namespace oc::cli {
namespace {

// The recipe (README "The main job") is one named file under configs/recipes/
// (cli/demo_recipe.h), chosen by the experiments recorded in docs/BENCHMARKS.md. By default the
// run trains exactly its samples with its seed, so every run gives the same model; --minutes
// sizes the run to a time budget instead.
using Recipe = DemoRecipe;

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

// --minutes: the run's length in optimizer steps from the measured speed, re-planned while it
// trains (TrainArgs::replan, asked after every step). The rate over the last stretch of
// training (a tenth of the budget, at least kMinSteps steps) is compared with the plan's:
// when it moved by more than 10%, the remaining steps are re-planned to end at the budget;
// when the plan is done early with time left for more steps, it is extended; and the run
// never starts a step it has no time left for.
class BudgetPlan {
 public:
  BudgetPlan(double budget_s, double steps_per_s, int64_t cap_steps)
      : budget_s_(budget_s), rate_(steps_per_s), cap_(cap_steps),
        total_(std::clamp<int64_t>(int64_t(steps_per_s * budget_s), 1, cap_steps)) {}
  int64_t total() const { return total_; }
  int64_t operator()(int64_t done, double secs) {
    window_.emplace_back(done, secs);
    while (window_.size() > 2 && secs - window_[1].second >= 0.1 * budget_s_ && done - window_[1].first >= kMinSteps)
      window_.pop_front();
    const auto [d0, s0] = window_.front();
    const double left = budget_s_ - secs;
    if (done - d0 >= kMinSteps && secs > s0) {
      const double rate = double(done - d0) / (secs - s0);
      if (std::abs(rate - rate_) > 0.1 * rate_) {
        rate_ = rate;
        replan(done, left, "training runs at {:.2f} steps/s now");
      }
    }
    if (done >= total_ && total_ < cap_ && left > 2.5 / rate_)
      replan(done, left, "the plan is done with time left ({:.2f} steps/s)");
    if (left < 1.5 / rate_) total_ = done;  // no time for another step (with a half-step margin)
    return total_;
  }

 private:
  void replan(int64_t done, double left, const char* why) {
    total_ = std::clamp<int64_t>(done + int64_t(rate_ * std::max(0.0, left)), done, cap_);
    log::info("Demo: {}: re-planned to {} steps ({} left) for the {:.0f} s budget{}", fmt::format(fmt::runtime(why), rate_),
              total_, total_ - done, budget_s_, total_ == cap_ ? " (the --max-passes cap)" : "");
  }
  static constexpr int64_t kMinSteps = 3;
  double budget_s_, rate_;
  int64_t cap_, total_;
  std::deque<std::pair<int64_t, double>> window_;  // (steps done, training seconds)
};

// The process CPU seconds of training (user + system, all threads), a figure that holds on a
// shared machine where wall seconds do not: asked after every optimizer step (through
// TrainArgs::replan, whose answer 0 keeps the plan), it sums the CPU time between steps,
// leaving out the stretches that hold more than steps: up to the first step (start-up) and
// the first step of each epoch (the evaluation and checkpoint before it), which it counts at
// the mean rate of the others.
class TrainCpuMeter {
 public:
  explicit TrainCpuMeter(int64_t steps_per_epoch) : steps_per_epoch_(steps_per_epoch) {}
  void operator()(int64_t done) {
    const double now = process_cpu_seconds();
    if (prev_step_ >= 1 && done == prev_step_ + 1 && prev_step_ % steps_per_epoch_ != 0)
      sum_ += now - prev_cpu_, ++counted_;
    prev_step_ = done, prev_cpu_ = now;
  }
  // Estimated CPU seconds of all `steps` (0 when fewer than two steps were seen).
  double seconds(int64_t steps) const { return counted_ > 0 ? sum_ / double(counted_) * double(steps) : 0.0; }

 private:
  static double process_cpu_seconds() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    auto sec = [](const timeval& t) { return double(t.tv_sec) + 1e-6 * double(t.tv_usec); };
    return sec(u.ru_utime) + sec(u.ru_stime);
  }
  int64_t steps_per_epoch_, prev_step_ = 0, counted_ = 0;
  double prev_cpu_ = 0, sum_ = 0;
};

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

// The CPU kind the figures depend on (core/machine.h) and the threads this run uses.
std::string demo_cpu_kind() {
  const MachineInfo m = machine_info();
  return oc::cpu_kind(m) + ", " + std::to_string(m.usable_threads) + " threads";
}

// The recipe file (--recipe, default the built-in one) with the flags given on the command
// line laid over it.
Recipe recipe_from(const DemoArgs& a) {
  Recipe rc = load_demo_recipe(a.recipe);
  rc.model = a.model.value_or(rc.model);
  rc.batch_size = a.batch_size.value_or(rc.batch_size);
  rc.lr = a.lr.value_or(rc.lr);
  rc.wd = a.wd.value_or(rc.wd);
  rc.warmup = a.warmup.value_or(rc.warmup);
  rc.epochs = a.epochs.value_or(rc.epochs);
  rc.max_passes = a.max_passes.value_or(rc.max_passes);
  rc.precision = a.precision.value_or(rc.precision);
  rc.seed = a.seed.value_or(rc.seed);
  (void)parse_precision(rc.precision);  // a bad value in the file fails here, before the import and timing
  (void)demo_model_config(rc.model, a.model ? std::string("--model") : rc.source + ": \"model\"");
  if (rc.batch_size <= 0 || rc.epochs <= 0) OC_USER_ERROR("--batch-size and --epochs must be positive");
  return rc;
}

// The imported shards (idempotent: a complete import is reused).
struct DemoData {
  std::string train, test, task_json;
  int64_t train_images = 60000;
};
DemoData import_data(const DemoArgs& a) {
  data::FashionMnistOptions fo;
  const int64_t limit = a.limit;
  fo.out = fs::join(a.out, limit > 0 ? fmt::format("fmnist-limit{}", limit) : "fmnist");
  fo.limit = limit > 0 ? limit : -1;
  fo.source = a.source;
  DemoData d;
  for (auto& s : data::import_fashion_mnist(fo)) {
    log::info("Fashion-MNIST {}: {} samples in {} shards at {}{}", s.name, s.samples, s.shards, s.dir,
              s.reused ? " (already imported)" : "");
    OC_CHECK(s.shards > 0, "{}: the import reports no shards", s.dir);
    (s.name == "train" ? d.train : d.test) = fs::join(s.dir, fmt::format("{{00000..{:05d}}}.tar", s.shards - 1));
  }
  d.task_json = fs::join(fo.out, "fashion_mnist_zeroshot.json");
  if (limit > 0) d.train_images = std::min<int64_t>(limit, 60000);
  return d;
}

// How long the run is: a fixed number of samples (the recipe's, or --samples), or a time
// budget (--minutes) with its plan. Epochs are of a fixed size (the first plan's tenth).
struct RunLength {
  int64_t per_epoch = 0, steps_per_epoch = 0, epochs = 0;
  std::unique_ptr<BudgetPlan> plan;
  int64_t steps() const { return plan ? std::min(plan->total(), epochs * steps_per_epoch) : epochs * steps_per_epoch; }
  int64_t last_epoch() const { return (steps() + steps_per_epoch - 1) / steps_per_epoch; }
};
RunLength size_run(const DemoArgs& a, const Recipe& rc, int64_t train_images) {
  RunLength r;
  int64_t samples = a.samples;
  const int64_t cap = int64_t(rc.max_passes * double(train_images));
  const bool budget_mode = a.minutes.has_value();
  if (samples <= 0 && !budget_mode) {
    samples = std::min(rc.samples, cap);
    log::info("Demo recipe: {} = {} at batch {}, lr {} (warm-up {}, {}), wd {}, {}, aug {}, seed {}: {} samples "
              "({:.2f} passes) in {} epochs; ~{:.0f} s of training on {} (docs/BENCHMARKS.md)",
              rc.name, rc.model, rc.batch_size, rc.lr, rc.warmup, rc.lr_scheduler, rc.wd, rc.precision,
              rc.aug_cfg.empty() ? "default" : rc.aug_cfg, rc.seed, samples, double(samples) / 60000.0, rc.epochs,
              double(samples) * rc.seconds_per_sample(), rc.measured_cpu);
  } else if (samples <= 0) {
    const double minutes = *a.minutes;
    const double sps = measure_samples_per_second(rc);
    // 0.93: the loader, logging and checkpoint writes cost a few percent over the bare step.
    samples = std::min(cap, int64_t(0.93 * sps * minutes * 60.0));
    r.plan = std::make_unique<BudgetPlan>(minutes * 60.0, 0.93 * sps / rc.batch_size,
                                          std::max<int64_t>(1, cap / rc.batch_size));
    const bool capped = samples == cap && cap < int64_t(0.93 * sps * minutes * 60.0);
    log::info("Demo: {} at batch {} trains {:.0f} samples/s here: {} samples {} {} minutes ({:.2f} passes); the "
              "speed is re-measured while training",
              rc.model, rc.batch_size, sps, samples, capped ? "(the --max-passes cap) in less than" : "fit in", minutes,
              double(samples) / 60000.0);
  }
  r.per_epoch = std::max<int64_t>(1, samples / rc.epochs / rc.batch_size) * rc.batch_size;
  // An epoch is at most one pass (the shards are read once per epoch): in budget mode the
  // plan may be long for a small --limit.
  if (r.plan) r.per_epoch = std::min(r.per_epoch, std::max<int64_t>(1, train_images / rc.batch_size) * rc.batch_size);
  r.steps_per_epoch = r.per_epoch / rc.batch_size;
  // Budget mode: as many epochs as the cap allows; the plan ends the run.
  r.epochs = r.plan ? std::max<int64_t>(rc.epochs, (cap / rc.batch_size + r.steps_per_epoch - 1) / r.steps_per_epoch)
                    : rc.epochs;
  return r;
}

std::string run_name(const DemoArgs& a, const Recipe& rc) {
  if (!a.name.empty()) return a.name;
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  char date[64];
  std::strftime(date, sizeof date, "%Y_%m_%d-%H_%M_%S", &tm);
  return fmt::format("{}-{}", rc.name, date);
}

TrainArgs demo_train_args(const DemoArgs& a, const Recipe& rc, const DemoData& d, const RunLength& len,
                          const std::string& name, TrainCpuMeter* cpu) {
  TrainArgs t = train_defaults(rc.model);
  t.train_data = d.train;
  t.dataset_type = data::DatasetType::WebDataset;
  t.train_num_samples = len.per_epoch;
  t.batch_size = rc.batch_size;
  t.epochs = int(len.epochs);
  t.replan = [p = len.plan.get(), cpu](int64_t done, double secs) {
    (*cpu)(done);
    return p ? (*p)(done, secs) : int64_t(0);  // 0: the fixed run keeps its plan
  };
  t.lr = rc.lr;
  t.wd = rc.wd;
  t.warmup = rc.warmup;
  t.workers = a.workers;
  t.precision = parse_precision(rc.precision);  // the recipe's spelling, checked by recipe_from
  t.precision_spelled = rc.precision;
  t.seed = rc.seed;
  t.lr_scheduler = rc.lr_scheduler;
  t.aug_cfg = rc.aug_cfg;
  // In params.txt (and so in the report): which recipe and which CPU the run's figures are from.
  t.flags["demo-recipe"] = rc.name;
  t.flags["demo-cpu"] = demo_cpu_kind();
  t.logs = fs::join(a.out, "logs");
  t.name = name;
  t.report_to = "tensorboard";
  t.log_every_n_steps = 10;
  t.save_frequency = 0;
  t.zeroshot_data = d.test;
  t.zeroshot_classnames = d.task_json;
  t.zeroshot_frequency = 1;
  return t;
}

// The HTML report; a failing report must not lose the trained run: warn and go on.
std::string write_report(const std::string& run_dir) {
  std::string report;
  try {
    for (const Command& c : registry())
      if (c.name == "report" && c.run({run_dir}) == 0) report = fs::join(run_dir, "report.html");
  } catch (const std::exception& e) {
    log::warn("demo: the report failed: {}", e.what());
  }
  if (report.empty()) log::warn("demo: no report written; retry with `openclip report {}`", run_dir);
  return report;
}

int run(const std::vector<std::string>& args) {
  DemoArgs a;
  if (!parse_flags("demo", args, &a)) return 0;
  if (a.threads > 0) set_num_threads(a.threads);
  const Recipe rc = recipe_from(a);
  if (a.minutes && !(*a.minutes > 0)) OC_USER_ERROR("--minutes must be positive (got {})", *a.minutes);
  const DemoData d = import_data(a);                     // 1. data
  const RunLength len = size_run(a, rc, d.train_images);  // 2. how long
  const std::string name = run_name(a, rc);               // 3. train
  TrainCpuMeter cpu(len.steps_per_epoch);
  const TrainArgs t = demo_train_args(a, rc, d, len, name, &cpu);
  const int rc_train = train(t);
  const std::string run_dir = fs::join(t.logs, name);
  if (rc_train != 0) OC_USER_ERROR("demo: training failed (exit status {}); see {}", rc_train, run_dir);
  // 4. The last epoch's zero-shot evaluation left the per-sample predictions in the run
  // folder (zeroshot_<task>.json); the report draws from it and the event files.
  const std::string task_name = load_zeroshot_task(d.task_json).name;
  auto epochs = read_results(run_dir, task_name + "-zeroshot");
  if (epochs.empty() || epochs.back().epoch != len.last_epoch())
    OC_USER_ERROR("demo: {} has no zero-shot result for the last epoch", fs::join(run_dir, "checkpoints/results.jsonl"));
  const EpochResult& last = epochs.back();
  const std::string report = a.no_report ? "" : write_report(run_dir);
  // The training seconds of the first evaluation at or above `top1` (null: none reached it).
  auto seconds_to = [&](double top1) {
    for (auto& e : epochs)
      if (e.top1 >= top1) return nlohmann::json(std::round(e.train_seconds * 10) / 10);
    return nlohmann::json(nullptr);
  };
  nlohmann::json j = {{"zeroshot_top1", last.top1},
                      {"zeroshot_top5", last.top5},
                      {"train_seconds", std::round(last.train_seconds * 10) / 10},
                      {"seconds_to_85", seconds_to(0.85)},
                      {"seconds_to_90", seconds_to(0.90)},
                      {"train_cpu_seconds", std::round(cpu.seconds(len.steps()) * 10) / 10},
                      {"samples", len.steps() * rc.batch_size},
                      {"recipe", rc.name},
                      {"model", rc.model},
                      {"cpu", demo_cpu_kind()},
                      {"run_dir", run_dir},
                      {"report", report}};
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

OC_REGISTER_COMMAND("demo", "the main job: Fashion-MNIST import, training, zero-shot evaluation, report", run);

}  // namespace
}  // namespace oc::cli
