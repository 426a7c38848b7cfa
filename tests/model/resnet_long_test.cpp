// RN50 and RN50x4 at their full size against OpenCLIP 2.24.0 (resnet_parity.h: eval-mode
// embeddings, the contrastive loss and every gradient in train mode, batch 4). Minutes on a
// small machine: label long.
#include "resnet_parity.h"

namespace oc::test {
namespace {

const std::string kConfigs = OPENCLIP_SOURCE_DIR "/configs/models/";

TEST(ResNetLong, Rn50Forward) { expect_resnet_forward(kConfigs + "RN50.json"); }
TEST(ResNetLong, Rn50Gradients) { expect_resnet_gradients(kConfigs + "RN50.json"); }
TEST(ResNetLong, Rn50GradientsEvalBatchNorm) { expect_resnet_gradients(kConfigs + "RN50.json", false); }
TEST(ResNetLong, Rn50TenAdamWSteps) { expect_resnet_training(kConfigs + "RN50.json", 10); }
TEST(ResNetLong, Rn50x4Forward) { expect_resnet_forward(kConfigs + "RN50x4.json"); }
TEST(ResNetLong, Rn50x4Gradients) { expect_resnet_gradients(kConfigs + "RN50x4.json"); }
TEST(ResNetLong, Rn50x4GradientsEvalBatchNorm) { expect_resnet_gradients(kConfigs + "RN50x4.json", false); }

}  // namespace
}  // namespace oc::test
