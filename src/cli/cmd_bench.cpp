// openclip bench train|infer|data: figures, not tests. Training and inference run the real
// model on synthetic inputs and report samples/s, the step split, the top ops, achieved
// TFLOP/s and the share of this machine's peak.
#include <sys/resource.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/args.h"
#include "cli/bench_data.h"
#include "cli/command.h"
#include "core/check.h"
#include "core/flags.h"
#include "core/machine.h"
#include "core/parallel.h"
#include "core/profile.h"
#include "core/rng.h"
#include "core/timer.h"
#include "eval/zeroshot.h"
#include "model/clip.h"
#include "model/inference.h"
#include "ops/dnnl_info.h"
#include "ops/registry.h"
#include "optim/adamw.h"
#include "step/contrastive_step.h"
#ifdef OPENCLIP_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#endif

namespace oc::cli {
namespace {

// Peak fp32 FLOP/s of this CPU from its vector width, FMA pipes (2 on Zen 3 and recent
// Xeons) and clock; bf16 peak with AMX is ~16x the AVX-512 fp32 figure per core.
double fp32_peak_gflops(const MachineInfo& m, int threads) {
  double mhz = 0;
  std::ifstream f("/proc/cpuinfo");
  for (std::string line; std::getline(f, line);)
    if (line.rfind("cpu MHz", 0) == 0) {
      mhz = std::stod(line.substr(line.find(':') + 1));
      break;
    }
  const int lanes = m.avx512f ? 16 : (m.avx2 ? 8 : 4);
  return threads * 2.0 /*FMA pipes*/ * lanes * 2.0 /*mul+add*/ * mhz / 1000.0;
}

// The GPU's name and dense bf16 peak in FLOP/s when `be` is cuda (MFU's denominator:
// ops/cuda/cuda_backend.h's table by card name); 0 elsewhere or for an unknown card.
std::pair<std::string, double> gpu_bf16_peak(const ops::Backend& be) {
#ifdef OPENCLIP_HAVE_CUDA
  if (be.name() == "cuda") {
    const ops::CudaRuntimeInfo r = ops::cuda_runtime_info();
    const size_t d = size_t(ops::cuda_device_index());
    if (d < r.devices.size()) return {r.devices[d].name, ops::cuda_bf16_peak_flops(r.devices[d])};
  }
#endif
  return {"", 0.0};
}

// Caption-like token rows: [sot, ids..., eot, 0...] with lengths drawn in [lo, hi].
std::vector<int32_t> synthetic_tokens(int64_t B, int ctx, int vocab, int lo, int hi, Rng& rng) {
  std::vector<int32_t> t(size_t(B * ctx), 0);
  const int32_t eot = vocab - 1, sot = vocab - 2;
  for (int64_t b = 0; b < B; ++b) {
    int len = std::min(ctx - 2, lo + int(rng.below(uint64_t(hi - lo + 1))));
    int32_t* row = &t[size_t(b * ctx)];
    row[0] = sot;
    for (int i = 1; i <= len; ++i) row[i] = int32_t(rng.below(uint64_t(std::max(1, vocab - 2))));
    row[len + 1] = eot;
  }
  return t;
}

// Peak resident set of this process so far (getrusage: KiB on Linux), in MiB.
std::string load_average() {
  std::ifstream f("/proc/loadavg");
  std::string a, b, c;
  f >> a >> b >> c;
  return a + " " + b + " " + c;
}

double peak_rss_mib() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_maxrss) / 1024.0;
}

// CPU seconds (user + system) this process has used: with the wall time, shows how much of
// the machine a run had on a shared host.
double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

// The model of `bench infer|zeroshot`: --model, --precision and --device, randomly initialized
// from `seed` (the speed does not depend on the weights) unless --pretrained (or a whole model as
// --model) gives weights, encoding in chunks of B.
// tokenizer: false where only token ids are used (a SigLIP model's SentencePiece file need not exist).
InferenceModel bench_model(const BenchArgs& a, int64_t B, uint64_t seed, bool tokenizer = true) {
  InferenceOptions io;
  io.tokenizer = tokenizer;
  io.model = a.model;
  io.weights = a.pretrained;  // empty: random weights from `seed` (a whole model brings its own)
  io.precision = a.precision;
  io.int8_scales = a.int8_scales;
  io.device = a.device;
  io.max_batch = int(B);
  io.seed = seed;
  return InferenceModel(io);
}

void text_lengths(const BenchArgs& a, int ctx, int* lo, int* hi) {
  const std::string& t = a.text_len;
  if (t == "caption") {
    *lo = 8, *hi = 24;
  } else {
    *lo = *hi = std::max(0, std::min(ctx - 2, std::stoi(t) - 2));
  }
}

// OPENCLIP_PROFILE_SYNC=1: after the timed loop, `runs` more runs with every profile scope
// waiting for the device (core/profile.h); their table replaces the asynchronous one, whose
// times on a device backend are only the host's launches. The timed figures stay unsynced.
bool synced_profile(ops::Backend& be, int64_t runs, const std::function<void()>& one) {
  const char* e = std::getenv("OPENCLIP_PROFILE_SYNC");
  if (!e || std::string(e) != "1") return false;
  profile::reset();
  profile::set_sync([&be] { be.synchronize(); });
  profile::set_enabled(true);
  for (int64_t i = 0; i < runs; ++i) one();
  profile::set_enabled(false);
  profile::set_sync(nullptr);
  return true;
}

// The result of `bench train`: JSON (--json) or a readable summary with the profile.
int report_train(const BenchArgs& a, Clip& model, const AdamW& opt, int64_t B, int64_t steps, double secs,
                 double cpu_secs, double loss) {
  const ModelCfg& cfg = model.cfg();
  const Precision prec = a.precision;
  const int ctx = cfg.text.context_length;
  const MachineInfo m = machine_info();
  const int64_t T_text = model.text_tower().tokens_used();
  const double gflop_sample = 3.0 * (forward_gflops_image(cfg) + forward_gflops_text(cfg, int(T_text)));
  const double sps = double(B * steps) / secs;
  const double tflops = sps * gflop_sample / 1000.0;
  const double peak = fp32_peak_gflops(m, num_threads()) / 1000.0;
  auto mem = model.memory();
  nlohmann::json j = {{"model", cfg.name},
                      {"batch_size", B},
                      {"precision", precision_name(prec)},
                      {"steps", steps},
                      {"threads", num_threads()},
                      {"text_tokens_computed", T_text},
                      {"samples_per_second", sps},
                      {"step_seconds", secs / double(steps)},
                      {"step_cpu_seconds", cpu_secs / double(steps)},
                      {"loadavg", load_average()},
                      {"loss", loss},
                      {"loss_kind", a.siglip ? "siglip" : "clip"},
                      {"gflop_per_sample", gflop_sample},
                      {"achieved_tflops", tflops},
                      {"fp32_fma_peak_tflops", peak},
                      {"share_of_fp32_peak", tflops / peak},
                      {"native_bf16", ops::native_bf16()},
                      {"memory_mib", {{"params", mem.params}, {"grads", mem.grads}, {"adamw", opt.mib()},
                                      {"activations", mem.activations}}},
                      {"peak_rss_mib", peak_rss_mib()},
                      {"cpu", m.cpu_model},
                      {"onednn_isa", ops::dnnl_isa()}};
  nlohmann::json ops_j = nlohmann::json::array();
  for (auto& e : profile::report())
    ops_j.push_back({{"name", e.name}, {"seconds_per_step", e.seconds / double(steps)}, {"calls_per_step", e.calls / steps}});
  j["profile"] = ops_j;
  const auto [gpu, gpu_peak] = gpu_bf16_peak(model.backend());
  if (!gpu.empty()) j["gpu"] = gpu;
  if (gpu_peak > 0) j["gpu_bf16_peak_tflops"] = gpu_peak / 1e12, j["mfu"] = tflops * 1e12 / gpu_peak;
  if (a.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("bench train %s  batch %lld  %s  threads %d  (%s, oneDNN %s)\n", cfg.name.c_str(), (long long)B,
              precision_name(prec), num_threads(), m.cpu_model.c_str(), ops::dnnl_isa().c_str());
  std::printf("  %.2f samples/s   %.3f s/step   loss %.4f   text tokens computed %lld of %d\n", sps,
              secs / double(steps), loss, (long long)T_text, ctx);
  std::printf("  %.1f GFLOP/sample  %.3f TFLOP/s achieved  = %.0f%% of the %.3f TFLOP/s fp32 FMA peak\n", gflop_sample,
              tflops, 100 * tflops / peak, peak);
  if (gpu_peak > 0)
    std::printf("  MFU %.1f%% of the %s's %.0f TFLOP/s dense bf16 peak\n", 100 * tflops * 1e12 / gpu_peak, gpu.c_str(),
                gpu_peak / 1e12);
  std::printf("  memory MiB: params %.0f  grads %.0f  adamw %.0f  activations %.0f  (peak RSS %.0f)\n", mem.params,
              mem.grads, opt.mib(), mem.activations, peak_rss_mib());
  std::printf("  time per step by scope (steps: forward / loss+backward / optimizer; ops nested inside):\n");
  for (auto& e : profile::report())
    std::printf("    %-22s %8.1f ms  %6ld calls\n", e.name.c_str(), 1000 * e.seconds / double(steps), e.calls / steps);
  return 0;
}

int run_train(const std::vector<std::string>& args) {
  BenchArgs a;
  if (!parse_flags("bench train", args, &a)) return 0;
  if (a.threads > 0) set_num_threads(a.threads);
  ops::backend(ops::resolve_device(a.device)).set_allow_tf32(a.allow_tf32);
  ModelCfg cfg = load_model_config(a.model);
  if (a.siglip) use_siglip_init(cfg);
  const int64_t B = a.batch_size, steps = a.steps, warm = a.warmup_steps;
  OC_CHECK(B > 0 && steps > 0, "batch size and steps must be positive");
  const Precision prec = a.precision;
  Clip model(cfg, ops::backend(ops::resolve_device(a.device)));
  model.init(uint64_t(a.seed));
  model.set_precision(prec);
  model.plan_training(B);
  AdamW opt(model.table(), default_adamw(cfg.name), model.backend());
  ContrastiveStep step(model, B, a.siglip ? ContrastiveLoss::SigLip : ContrastiveLoss::Clip);
  Rng rng(uint64_t(a.seed) + 1);
  const int S = cfg.vision.image_size, ctx = cfg.text.context_length;
  std::vector<float> images(size_t(B * 3 * S * S));
  for (auto& v : images) v = float(rng.normal());
  int lo, hi;
  text_lengths(a, ctx, &lo, &hi);
  std::vector<int32_t> tokens = synthetic_tokens(B, ctx, cfg.text.vocab_size, lo, hi, rng);

  auto one = [&]() {
    double loss = step.forward_backward(images.data(), tokens.data(), B);
    {
      OC_PROFILE("step.optimizer");
      opt.step(model.params(), model.grads(), 1e-5);
      clamp_logit_scale(model.backend(), model.params() + model.table().find("logit_scale")->offset);
    }
    return loss;
  };
  for (int64_t i = 0; i < warm; ++i) one();
  profile::reset();
  profile::set_enabled(true);
  Timer t;
  const double cpu0 = cpu_seconds();
  double loss = 0;
  for (int64_t i = 0; i < steps; ++i) loss = one();
  model.backend().synchronize();  // a device backend may still run the last update
  const double secs = t.seconds(), cpu_secs = cpu_seconds() - cpu0;
  profile::set_enabled(false);
  synced_profile(model.backend(), steps, [&] { one(); });
  return report_train(a, model, opt, B, steps, secs, cpu_secs, loss);
}

// One timed loop of `steps` calls: wall seconds and process CPU seconds.
struct Timed {
  double secs, cpu_secs;
};
Timed timed(int64_t steps, const std::function<void()>& one) {
  Timer t;
  const double cpu0 = cpu_seconds();
  for (int64_t i = 0; i < steps; ++i) one();
  return {t.seconds(), cpu_seconds() - cpu0};
}

// --tower: which encoders `bench infer` times.
void check_tower(const std::string& t) {
  if (t != "both" && t != "image" && t != "text")
    OC_USER_ERROR("bench infer --tower {}: choose image, text or both", t);
}

void print_infer(const BenchArgs& a, Clip& model, const nlohmann::json& j, int64_t steps) {
  if (a.json) return (void)std::printf("%s\n", j.dump().c_str());
  std::printf("bench infer %s  batch %lld  %s  threads %d\n", j["model"].get<std::string>().c_str(),
              (long long)a.batch_size, model.precision_label().c_str(), num_threads());
  if (j.contains("encode_image_per_second"))
    std::printf("  encode_image %.2f images/s\n", j["encode_image_per_second"].get<double>());
  if (j.contains("encode_text_per_second"))
    std::printf("  encode_text %.1f texts/s (%lld tokens computed)\n", j["encode_text_per_second"].get<double>(),
                (long long)model.text_tower().tokens_used());
  if (a.tower == "text") return;
  std::printf("  encode_image time per batch by scope:\n");
  for (auto& e : profile::report())
    std::printf("    %-22s %8.1f ms  %6ld calls\n", e.name.c_str(), 1000 * e.seconds / double(steps), e.calls / steps);
}

// Times encode_image (with its profile) on random images and encode_text on synthetic
// captions, each after its warm-up steps; --tower image|text times one of them.
int run_infer(const std::vector<std::string>& args) {
  BenchArgs a;
  if (!parse_flags("bench infer", args, &a)) return 0;
  check_tower(a.tower);
  if (a.threads > 0) set_num_threads(a.threads);
  ops::backend(ops::resolve_device(a.device)).set_allow_tf32(a.allow_tf32);
  const int64_t B = a.batch_size, steps = a.steps, warm = a.warmup_steps;
  InferenceModel inf(bench_model(a, B, uint64_t(a.seed), /*tokenizer=*/false));  // synthetic token ids
  Clip& model = inf.clip();
  const ModelCfg& cfg = inf.cfg();
  Rng rng(uint64_t(a.seed) + 1);
  const int S = cfg.vision.image_size, ctx = cfg.text.context_length;
  std::vector<float> images(size_t(B * 3 * S * S)), out(size_t(B * cfg.embed_dim));
  for (auto& v : images) v = float(rng.normal());
  int lo, hi;
  text_lengths(a, ctx, &lo, &hi);
  std::vector<int32_t> tokens = synthetic_tokens(B, ctx, cfg.text.vocab_size, lo, hi, rng);
  // The precision that ran (int8 on a CPU without VNNI falls back: Clip::set_precision).
  nlohmann::json j = {{"model", cfg.name},
                      {"batch_size", B},
                      {"precision", precision_name(model.precision())},
                      {"precision_detail", model.precision_label()},  // int8 static (FILE) / int8 dynamic
                      {"threads", num_threads()},
                      {"loadavg", load_average()}};
  if (a.tower != "text") {
    const auto image = [&] { model.encode_image(images.data(), B, out.data()); };
    for (int64_t i = 0; i < warm; ++i) image();
    profile::reset();
    profile::set_enabled(true);  // encode_image's scopes (per batch), as bench train's per step
    const Timed t = timed(steps, image);
    profile::set_enabled(false);
    const bool synced = synced_profile(model.backend(), steps, image);
    j["encode_image_per_second"] = double(B * steps) / t.secs;
    j["encode_image_cpu_seconds_per_batch"] = t.cpu_secs / double(steps);
    nlohmann::json ops_j = nlohmann::json::array();
    for (auto& e : profile::report())
      ops_j.push_back(
          {{"name", e.name}, {"seconds_per_batch", e.seconds / double(steps)}, {"calls_per_batch", e.calls / steps}});
    j["encode_image_profile"] = ops_j;
    j["profile_synced"] = synced;
  }
  if (a.tower != "image") {
    const auto text = [&] { model.encode_text(tokens.data(), B, out.data()); };
    for (int64_t i = 0; i < warm; ++i) text();
    const Timed t = timed(steps, text);
    j["encode_text_per_second"] = double(B * steps) / t.secs;
    j["encode_text_cpu_seconds_per_batch"] = t.cpu_secs / double(steps);
    j["text_tokens_computed"] = model.text_tower().tokens_used();
  }
  print_infer(a, model, j, steps);
  return 0;
}

// Zero-shot evaluation cost: the classifier (C classes x T templates through the text
// tower, OpenCLIP's build_zero_shot_classifier) and images/s through the image tower + logits.
int run_zeroshot(const std::vector<std::string>& args) {
  BenchArgs a;
  if (!parse_flags("bench zeroshot", args, &a)) return 0;
  if (a.threads > 0) set_num_threads(a.threads);
  const int64_t B = a.batch_size, N = a.images;
  InferenceModel inf(bench_model(a, B, 0));
  Clip& model = inf.clip();
  const ModelCfg& cfg = inf.cfg();
  ZeroShotTask task = imagenet_task();
  task.classnames.resize(std::min<size_t>(task.classnames.size(), size_t(a.classes)));
  task.templates.resize(std::min<size_t>(task.templates.size(), size_t(a.templates)));
  const TextTokenizer& tok = *inf.tokenizer();
  Timer t;
  std::vector<float> W = zeroshot_classifier(model, tok, task, B);
  const double cls_s = t.seconds();
  const int S = cfg.vision.image_size;
  const int64_t E = cfg.embed_dim, C = int64_t(task.classnames.size());
  Rng rng(1);
  std::vector<float> images(size_t(B * 3 * S * S)), feats(size_t(B * E)), logits(size_t(B * C));
  for (auto& v : images) v = float(rng.normal());
  ZeroShotLogits classify(model.backend(), W, C, E);  // as eval's: the logits on --device
  t.reset();
  for (int64_t done = 0; done < N; done += B) {
    const int64_t n = std::min(B, N - done);
    model.encode_image(images.data(), n, feats.data());
    classify(feats, n, logits);
  }
  const double ips = double(N) / t.seconds();
  nlohmann::json j = {{"model", cfg.name}, {"precision", a.precision_spelled}, {"classes", C},
                      {"templates", task.templates.size()}, {"classifier_seconds", cls_s},
                      {"prompts_per_second", double(C) * double(task.templates.size()) / cls_s},
                      {"images_per_second", ips}, {"threads", num_threads()}};
  if (a.json) std::printf("%s\n", j.dump().c_str());
  else
    std::printf("bench zeroshot %s %s: classifier %lld classes x %zu templates in %.1f s (%.1f prompts/s); "
                "%.2f images/s\n",
                cfg.name.c_str(), a.precision_spelled.c_str(), (long long)C, task.templates.size(), cls_s,
                double(C) * double(task.templates.size()) / cls_s, ips);
  return 0;
}

int run(const std::vector<std::string>& args) {
  const char* usage = "usage: openclip bench train|infer|zeroshot|data [options]   (openclip bench <what> --help)\n";
  if (args.empty()) return std::fprintf(stderr, "%s", usage), 2;
  std::vector<std::string> rest(args.begin() + 1, args.end());
  if (args[0] == "train") return run_train(rest);
  if (args[0] == "infer") return run_infer(rest);
  if (args[0] == "zeroshot") return run_zeroshot(rest);
  if (args[0] == "data") return run_bench_data(rest);
  if (args[0] == "--help" || args[0] == "-h") return std::printf("%s", usage), 0;
  OC_USER_ERROR("bench: unknown benchmark '{}'; choose train, infer or data", args[0]);
}

OC_REGISTER_COMMAND("bench", "throughput figures: bench train | infer | data", run);

}  // namespace
}  // namespace oc::cli
