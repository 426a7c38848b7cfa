// RN50 and RN50x4 against OpenCLIP 2.24.0 (resnet_parity.h; batch 4): eval-mode embeddings at
// full size; the loss and every gradient against PyTorch's float64 (RN50 full size, RN50x4's
// widths at reduced depth); 10 AdamW steps against OpenCLIP in float64. Minutes on a small
// machine: label long.
//
// Why float64, and why the gradient tests run ref's forward convolution (measured on RN50,
// batch 4, this Zen 5, 2026-12-02; the issue asks 1e-4 of OpenCLIP for every gradient): ReLU.
// An input within fp32 rounding of 0 lands on either side, and that element's gradient switches
// between dy and 0; in train mode the switch also enters its channel's batch mean and variance,
// so BatchNorm's backward spreads it over the whole channel (196 values per channel in layer4).
// `resnet_ref.py relu-flips` shows it for PyTorch:
// - Train mode: PyTorch fp32 takes 98 of the ~44M ReLU decisions differently from its fp64 (13
//   in layer4.1's last ReLU), and is up to 32% off fp64 (visual.layer4.1.conv3.weight; 18-22%
//   on layer4.0/4.1 convs). float64 run with fp32's 98 decisions forced reproduces those errors
//   (32.1%), every gradient within 1.8e-4 of PyTorch fp32's. Neither implementation can meet
//   1e-4 of the other: the gap is which elements land within rounding of 0, not summation.
// - Eval mode: our cpu run was 0.77% from fp64 (visual.layer3.3.bn1.bias) where PyTorch fp32's
//   worst is 0.28%. Our fp32 forward and one with every convolution exactly rounded (ref, sums
//   in double) take 3 of the ~44M decisions differently (1 in layer3.0's first ReLU, 2 in
//   layer3.3's first), and those are our worst gradients: layer3.3.bn1.bias 0.77%, .conv1.weight
//   0.53% (PyTorch fp32 2e-6 there: its rounding kept them on fp64's side), layer3.0.bn1.bias
//   0.29% (PyTorch fp32 flips the same element: 0.28%). The exact forward with our 3 decisions
//   forced onto it reproduces 0.77%; without them our worst is 2.3e-4 (visual.attnpool.q_proj,
//   the mean token's cancellation; PyTorch fp32 2.5e-4). No kernel of ours is the cause.
// - Which elements flip depends on the convolution kernels' summation order, i.e. on the CPU
//   (RN50x4's widths at reduced depth on the cpu run: 1.4-1.6% off on layer3.0.bn1 / conv1,
//   where PyTorch fp32 is within 1e-5; with ref's forward convolution: 3.4e-6).
// So the gradient tests run the forward convolutions on ref (ExactConvForwardBackend: BatchNorm
// (double sums), the residual adds and ReLU are the project's own kernels, so the ReLU decisions
// no longer depend on which oneDNN kernels a CPU picks; every backward kernel is cpu's; the cpu
// forward is what the embeddings tests check) and hold the reduced config's bars: each
// parameter PyTorch fp32 gets within 1e-5 of fp64 within 1e-4, the worst within twice PyTorch
// fp32's worst. Measured: RN50 train mode 17.9%
// (visual.layer4.0.downsample.0.weight; PyTorch fp32 32%), eval mode 2.3e-4 (PyTorch 0.28%),
// RN50x4's widths 3.4e-6 (PyTorch 3.5%).
// - 10 AdamW steps (train-mode BatchNorm): AdamW's first update is lr * g / (|g| + eps), a full
//   step of lr for every element whatever its size, so the gradient errors above move elements
//   whose exact gradient is ~0 by a full step in either direction, and the trajectories
//   separate from step 1 on. RN50: PyTorch fp32 ends up to 0.76% of the first loss from its
//   own fp64 trajectory (step 2: 0.2637 vs 0.2530), ours up to 0.63% (step 1: 1.0256 vs
//   1.0345); the 0.5% between ours and OpenCLIP fp32 is this. RN50x4's widths at reduced
//   depth: ours 1.3e-5, PyTorch fp32 3.7e-5. So each loss within twice PyTorch fp32's largest
//   distance from fp64 (or 1e-5 of the first loss).
#include "resnet_parity.h"

namespace oc::test {
namespace {

const std::string kConfigs = OPENCLIP_SOURCE_DIR "/configs/models/";
// RN50x4's widths (80: 40 to 2560 channels, 40 heads, embed 640, text 640 / 10 heads) with one
// Bottleneck per stage, 128 px and 2 text blocks.
const std::string kRn50x4Shallow = OPENCLIP_TEST_DIR "/model/configs/rn50x4-shallow.json";

TEST(ResNetLong, Rn50Forward) { expect_resnet_forward(kConfigs + "RN50.json"); }
TEST(ResNetLong, Rn50Gradients) {
  expect_resnet_gradients(kConfigs + "RN50.json", /*train_bn=*/true, /*exact_conv_forward=*/true);
}
TEST(ResNetLong, Rn50GradientsEvalBatchNorm) {
  expect_resnet_gradients(kConfigs + "RN50.json", /*train_bn=*/false, /*exact_conv_forward=*/true);
}
TEST(ResNetLong, Rn50TenAdamWSteps) { expect_resnet_training_fp64(kConfigs + "RN50.json", 10); }
TEST(ResNetLong, Rn50x4Forward) { expect_resnet_forward(kConfigs + "RN50x4.json"); }
TEST(ResNetLong, Rn50x4ShallowGradients) {
  expect_resnet_gradients(kRn50x4Shallow, /*train_bn=*/true, /*exact_conv_forward=*/true);
}
TEST(ResNetLong, Rn50x4ShallowTenAdamWSteps) { expect_resnet_training_fp64(kRn50x4Shallow, 10); }

}  // namespace
}  // namespace oc::test
