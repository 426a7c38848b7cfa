// libFuzzer target: one input through every JSON config reader (issue 42 #3): the model
// config, the tokenizer spec it gives, a hub folder's open_clip_config.json (model_cfg and
// preprocess_cfg). All go through core/json_read.h's depth cap; deep
// nesting, huge or non-finite numbers and wrong types must be errors, never a crash. (The demo
// recipe and zero-shot task readers, in layers the fuzz targets do not link, use the same
// parse_json.)
#include "core/fs.h"
#include "core/json_read.h"
#include "fuzz_util.h"
#include "model/config.h"
#include "model/model_source.h"
#include "text/text_tokenizer.h"

using namespace oc;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    std::string d = fuzz::write_input(nullptr, 0) + "_hub";  // a folder per process
    fs::make_dirs(d);
    return d;
  }();
  std::string text(reinterpret_cast<const char*>(data), size);
  fuzz::guarded([&] { (void)parse_json(text, "fuzz.json"); });
  fuzz::guarded([&] { (void)parse_model_config(text, "fuzz"); });
  fuzz::guarded([&] { (void)text_tokenizer_spec_from_config(text, "fuzz"); });
  fuzz::guarded([&] {
    fs::write_atomic(dir + "/open_clip_config.json", text);
    (void)resolve_model_source(dir, "");
  });
  return 0;
}
