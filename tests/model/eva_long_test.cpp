// EVA02-B-16 at full size (12 blocks per tower) against OpenCLIP 2.24.0 + timm 0.9.16
// (tests/reference/eva_ref.py forward): OpenCLIP's random init, a batch of 4, eval-mode image
// and text embeddings with cosine >= 0.99999 and max |diff| 1e-4 of the largest entry
// (resnet_parity.h expect_embeddings). Gradients, training and checkpoints at reduced depth:
// eva_test.cpp.
#include <gtest/gtest.h>

#include "resnet_parity.h"

namespace oc {
namespace {

using namespace oc::test;

TEST(EvaLong, B16ForwardMatchesOpenClip) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = fresh_dir("eva_ref_full");
  auto r = run(pyref_python() + " " OPENCLIP_TEST_DIR "/reference/eva_ref.py forward EVA02-B-16 0 " + dir);
  ASSERT_EQ(r.status, 0) << r.out;
  Clip m(load_model_config("EVA02-B-16"));
  load_weights(m, dir + "/w.pt");
  expect_embeddings(m, dir, "");
}

}  // namespace
}  // namespace oc
