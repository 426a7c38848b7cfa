// The EVA02 parity tests' shared pieces (eva_test.cpp, eva_long_test.cpp): EVA02-B-16 at a
// reduced depth and eva_ref.py runs; the checks are resnet_parity.h's, which take any CLIP.
#pragma once
#include <fmt/format.h>

#include <string>

#include "resnet_parity.h"

namespace oc::test {

constexpr int kLayers = 2;

inline ModelCfg eva_at_depth(int layers) {
  ModelCfg cfg = load_model_config("EVA02-B-16");
  if (layers > 0) cfg.vision.layers = cfg.text.layers = layers;
  return cfg;
}

inline std::string eva_ref(const std::string& args) {
  const std::string dir = fresh_dir("eva_ref");
  auto r = run(pyref_python() + " " OPENCLIP_TEST_DIR "/reference/eva_ref.py " + args + " " + dir);
  EXPECT_EQ(r.status, 0) << r.out;
  return dir;
}

}  // namespace oc::test
