// timm's ConvNeXt against OpenCLIP 2.24.0 + timm 0.9.16 (resnet_parity.h, resnet_ref.py; batch
// 4): convnext_base's eval-mode embeddings at full size (224 px, the linear head), and 10 AdamW
// steps of the reduced convnext_tiny config (convnext_test.cpp) against OpenCLIP's losses.
// Minutes on a small machine: label long.
#include "resnet_parity.h"

namespace oc::test {
namespace {

TEST(ConvNextLong, BaseForward) { expect_resnet_forward(OPENCLIP_SOURCE_DIR "/configs/models/convnext_base.json"); }
TEST(ConvNextLong, TinyTenAdamWSteps) {
  expect_resnet_training(OPENCLIP_TEST_DIR "/model/configs/tiny-convnext.json", 10);
}

}  // namespace
}  // namespace oc::test
