// libFuzzer target: OpenCLIP model config JSON (parse, validation, the derived sizes the
// CLI prints, and the JSON written back, which must parse to the same config).
#include "fuzz_util.h"
#include "model/config.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::guarded([&] {
    ModelCfg cfg = parse_model_config(text, "fuzz");
    (void)count_params(cfg);
    (void)forward_gflops_image(cfg);
    (void)forward_gflops_text(cfg, cfg.text.context_length);
    ModelCfg back = parse_model_config(model_config_json(cfg), "fuzz");
    fuzz::check(back.embed_dim == cfg.embed_dim && back.vision.width == cfg.vision.width &&
                back.text.layers == cfg.text.layers);
  });
  return 0;
}
