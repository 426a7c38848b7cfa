// Tokenizer throughput on COCO-like captions (deterministic templates, ~10 words each), one
// thread, warm per-thread word cache: the steady state of a training data loader. The
// Python reference (tests/reference/tokenizer_ref.py: OpenCLIP's SimpleTokenizer code with
// ftfy minus its mojibake detector) is timed on the same captions in the same run.
//   openclip_bench_kernels --benchmark_filter=Tokenizer
#include <benchmark/benchmark.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "core/parallel.h"
#include "text/tokenizer.h"

namespace {

constexpr size_t kCaptions = 20000;

std::vector<std::string> coco_like(size_t n, bool unicode) {
  static const char* subj[] = {"a man", "a woman", "two people", "a young boy", "a little girl", "a dog", "a cat",
                               "a group of people", "a herd of elephants", "a giraffe", "a zebra", "an old man",
                               "a person", "a couple of kids", "three sheep", "a large bird", "a brown horse",
                               "a black and white cat", "a plate of food", "a red double decker bus", "a train",
                               "a motorcycle", "a small kitchen", "a white bathroom", "a living room", "a surfer"};
  static const char* verb[] = {"is sitting on", "standing next to", "riding", "holding", "eating", "looking at",
                               "walking down", "laying on", "flying", "parked in front of", "playing with",
                               "sitting in", "with", "is cutting", "crossing", "filled with", "on top of"};
  static const char* obj[] = {"a bench", "a skateboard", "a surfboard", "a wave", "the street", "a wooden table",
                              "a pizza", "a frisbee", "a kite", "the beach", "a field of grass", "a tennis racket",
                              "an umbrella", "a laptop", "a cell phone", "the snow", "a sandwich", "a bowl of fruit",
                              "a sink", "a toilet", "a mirror", "a large window", "the city", "a stop sign"};
  static const char* tail[] = {"", ".", " .", " in the park.", " on a sunny day", " near the water.", " at night",
                               " with a smile", " next to a building.", " while another person watches"};
  static const char* uni[] = {" café", " naïve", " 東京", " 🐶", " Zürich", " ΣΟΦΙΑ", " don’t", " ﬁne", " &amp;"};
  uint64_t s = 42;
  auto rnd = [&](size_t m) {
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    return size_t((s >> 33) % m);
  };
  std::vector<std::string> out;
  out.reserve(n);
  for (size_t i = 0; i < n; i++) {
    std::string c = std::string(subj[rnd(std::size(subj))]) + " " + verb[rnd(std::size(verb))] + " " +
                     obj[rnd(std::size(obj))] + tail[rnd(std::size(tail))];
    if (rnd(10) < 7) c[0] = char(c[0] - 32);
    if (unicode) c += uni[rnd(std::size(uni))];
    out.push_back(std::move(c));
  }
  return out;
}

const oc::Tokenizer& tok() {
  static const oc::Tokenizer t = oc::Tokenizer::load_default();
  return t;
}

void run_one_thread(benchmark::State& state, const std::vector<std::string>& caps) {
  std::vector<int32_t> ids(oc::kDefaultContextLength);
  for (const auto& c : caps) (void)tok().tokenize(c, ids);  // warm this thread's cache
  size_t bytes = 0;
  for (const auto& c : caps) bytes += c.size();
  for (auto _ : state) {
    for (const auto& c : caps) {
      oc::Status st = tok().tokenize(c, ids);
      benchmark::DoNotOptimize(st);
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetItemsProcessed(int64_t(state.iterations() * caps.size()));  // items = captions
  state.SetBytesProcessed(int64_t(state.iterations() * bytes));
}

void BM_TokenizerCocoOneThread(benchmark::State& state) {
  static const auto caps = coco_like(kCaptions, false);
  run_one_thread(state, caps);
}
BENCHMARK(BM_TokenizerCocoOneThread)->Unit(benchmark::kMillisecond);

// Same captions plus one non-ASCII word each: every caption takes the general cleaning path.
void BM_TokenizerUnicodeOneThread(benchmark::State& state) {
  static const auto caps = coco_like(kCaptions, true);
  run_one_thread(state, caps);
}
BENCHMARK(BM_TokenizerUnicodeOneThread)->Unit(benchmark::kMillisecond);

void BM_TokenizerCocoBatchAllThreads(benchmark::State& state) {
  static const auto caps = coco_like(kCaptions, false);
  (void)tok().tokenize_batch(caps, oc::kDefaultContextLength);
  for (auto _ : state) benchmark::DoNotOptimize(tok().tokenize_batch(caps, oc::kDefaultContextLength));
  state.SetItemsProcessed(int64_t(state.iterations() * caps.size()));
  state.counters["threads"] = oc::num_threads();
}
BENCHMARK(BM_TokenizerCocoBatchAllThreads)->Unit(benchmark::kMillisecond)->UseRealTime();

// The Python reference on the same captions (its own timers, best of 3 passes, warm cache).
void BM_TokenizerPythonReference(benchmark::State& state) {
  static const auto caps = coco_like(kCaptions, false);
  const std::string file = "/tmp/oc_tokenizer_bench_captions.txt";
  {
    std::ofstream f(file);
    for (const auto& c : caps) f << c << "\n";
  }
  std::string cmd = std::string("/usr/bin/python3 ") + OPENCLIP_SOURCE_DIR +
                    "/tests/reference/tokenizer_ref.py bench --repeat 3 --vocab '" + oc::Tokenizer::find_vocab() +
                    "' --input " + file;
  double rate = 0, cpu_rate = 0;
  for (auto _ : state) {
    FILE* p = popen(cmd.c_str(), "r");
    if (!p) return state.SkipWithError("cannot run /usr/bin/python3");
    char buf[512] = {0};
    size_t n = fread(buf, 1, sizeof buf - 1, p);
    buf[n] = 0;
    if (pclose(p) != 0) return state.SkipWithError("python reference failed (needs /usr/bin/python3 + regex)");
    for (auto [key, out] : {std::pair{"\"captions_per_s\": ", &rate}, std::pair{"\"cpu_captions_per_s\": ", &cpu_rate}})
      if (const char* k = std::strstr(buf, key)) *out = std::atof(k + std::strlen(key));
  }
  state.counters["py_captions_per_s"] = rate;          // wall clock
  state.counters["py_cpu_captions_per_s"] = cpu_rate;  // process CPU time, as the C++ figures
}
BENCHMARK(BM_TokenizerPythonReference)->Iterations(1)->Unit(benchmark::kSecond);

}  // namespace
