// libFuzzer target: a model config through parameter planning (issue 22, item 1). Any JSON
// a user may pass as --model either is refused with an oc::Error or gives a parameter table
// whose sizes are exact: every entry's numel is the product of its shape, slices are
// 16-float aligned, ascending and inside the arena, and the count agrees with count_params.
// No allocation is made from the config (the table is metadata), so a wrapped size shows
// up here as a failed invariant rather than as a heap overflow later.
#include <cstdint>

#include "fuzz_util.h"
#include "model/config.h"
#include "model/params.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::guarded([&] {
    const ModelCfg cfg = parse_model_config(text, "fuzz");
    const ParamTable t = make_param_table(cfg);
    size_t end = 0;
    __int128 sum = 0;
    for (const ParamInfo& p : t.params) {
      __int128 n = 1;
      for (int64_t d : p.shape) {
        fuzz::check(d > 0);
        n *= d;
      }
      fuzz::check(n == __int128(p.numel) && p.offset % 16 == 0 && p.offset >= end);
      end = p.offset + p.numel;
      sum += n;
    }
    fuzz::check(end <= t.total && sum == __int128(t.count()) && t.count() == count_params(cfg));
    fuzz::check(cfg.vision.mlp_width() >= 1 && cfg.text.mlp_width() >= 1);
  });
  return 0;
}
