// bench data: samples/s out of the DataLoader in training mode (RandomResizedCrop, BPE),
// after a few warm-up batches (thread start, the shuffle buffer's initial fill).
#include "cli/bench_data.h"

#include "cli/args.h"

#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/check.h"
#include "core/machine.h"
#include "core/flags.h"
#include "core/timer.h"
#include "data/loader.h"
#include "data/urls.h"

namespace oc::cli {

int run_bench_data(const std::vector<std::string>& args) {
  BenchDataArgs a;
  if (!parse_flags("bench data", args, &a)) return 0;
  data::DataConfig& cfg = a;  // type, workers, batch size, image size, decoding and seed: from the flags
  if (a.positional.size() > 1) OC_USER_ERROR("bench data: one data pattern at most");
  cfg.data = a.positional.empty() ? "" : a.positional[0];
  if (cfg.data.empty() && cfg.type != data::DatasetType::Synthetic && cfg.type != data::DatasetType::SyntheticLearnable)
    OC_USER_ERROR("bench data: give a shard pattern or CSV, or --dataset-type synthetic");
  const int64_t batches = a.batches, warm = a.warmup;
  if (batches < 1 || warm < 0) OC_USER_ERROR("bench data: --batches >= 1 and --warmup >= 0");
  cfg.num_samples = (batches + warm) * cfg.batch_size;
  auto resolved = data::resolve_dataset_type(cfg.type, cfg.data);
  if (resolved && *resolved == data::DatasetType::WebDataset) {
    auto list = data::expand_shards(cfg.data);
    if (list && int64_t(list->urls.size()) < std::max(1, cfg.workers)) cfg.resampled = true;  // a few shards, many workers
  }
  data::DataLoader dl(cfg);  // CLIP's BPE at the configured context length
  dl.start_epoch(0);
  Timer startup;
  // The consumer hands each batch back, as a training loop does once the batch is on the device.
  for (int64_t i = 0; i < warm; ++i) {
    auto b = dl.next();
    if (!b) OC_USER_ERROR("bench data: the data ran out during warm-up");
    dl.recycle(std::move(*b));
  }
  const double warm_s = startup.seconds();
  Timer t;
  int64_t n = 0, got = 0;
  for (; got < batches; ++got) {
    auto b = dl.next();
    if (!b) break;
    n += b->size;
    dl.recycle(std::move(*b));
  }
  const double s = t.seconds();
  const double rate = n / std::max(1e-9, s);
  nlohmann::json j = {{"data", cfg.data},
                      {"dataset_type", data::dataset_type_name(dl.config().type)},
                      {"workers", cfg.workers},
                      {"batch_size", cfg.batch_size},
                      {"image_size", cfg.preprocess.size},
                      {"batches", got},
                      {"samples", n},
                      {"seconds", s},
                      {"samples_per_second", rate},
                      {"warmup_seconds", warm_s},
                      {"skipped", dl.stats().counts()},
                      {"cpu", machine_info().cpu_model},
                      {"logical_cpus", machine_info().logical_cpus}};
  if (a.json) {
    std::printf("%s\n", j.dump().c_str());
  } else {
    std::printf("bench data %s  workers %d  batch %d  image %d\n  %.1f samples/s (%lld batches, %.2f s; warm-up %lld "
                "batches %.2f s)  skipped: %s\n",
                cfg.data.c_str(), cfg.workers, cfg.batch_size, cfg.preprocess.size, rate, (long long)got, s,
                (long long)warm, warm_s, dl.stats().summary().c_str());
  }
  return 0;
}

}  // namespace oc::cli
