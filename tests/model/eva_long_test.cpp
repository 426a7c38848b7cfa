// EVA02-B-16 at full size (12 blocks per tower) against OpenCLIP 2.24.0 + timm 0.9.16
// (tests/reference/eva_ref.py forward): OpenCLIP's random init, a batch of 4, eval-mode image
// and text embeddings with cosine >= 0.99999 and max |diff| 1e-4 of the largest entry
// (resnet_parity.h expect_embeddings). At 2 blocks per tower with the real widths:
//  - the ClipLoss gradient of every parameter against PyTorch's float64 gradient: within 1e-4
//    of its max wherever PyTorch fp32 is within 1e-5, and never more than twice PyTorch fp32's
//    worst; the loss within 1e-5;
//  - 10 AdamW steps (lr 1e-4, wd 0.2): each loss within 1e-5 of the first step's.
#include <gtest/gtest.h>

#include "eva_parity.h"

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

TEST(EvaLong, GradientsMatchOpenClip) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = eva_ref(fmt::format("grad EVA02-B-16 {}", kLayers));
  Clip m(eva_at_depth(kLayers));
  load_weights(m, dir + "/w.pt");
  const double loss = resnet_loss_and_grads(m, dir);
  const double want32 = std::stod(fs::read_text(dir + "/loss.txt").value());
  const double want = std::stod(fs::read_text(dir + "/loss64.txt").value());
  EXPECT_NEAR(loss, want, std::max(1e-5 * std::fabs(want), 2 * std::fabs(want32 - want)));
  const NamedTensors g32 = read_state_dict(dir + "/grads.pt"), g64 = read_state_dict(dir + "/grads64.pt");
  double worst = 0, worst_torch = 0;
  std::string worst_name;
  for (const ParamInfo& p : m.table().params) {
    const HostTensor* ref = find_tensor(g64, p.name);
    ASSERT_TRUE(ref) << p.name;
    const std::vector<float> a = param_to_host(m.backend(), m.grads(), p).to_f32(), b = ref->to_f32();
    const double torch_err = rel_err(find_tensor(g32, p.name)->to_f32(), b), err = rel_err(a, b);
    if (torch_err <= 1e-5) EXPECT_LT(err, 1e-4) << p.name << " gradient";
    worst_torch = std::max(worst_torch, torch_err);
    if (err > worst) worst = err, worst_name = p.name;
  }
  EXPECT_LE(worst, std::max(1e-4, 2 * worst_torch)) << worst_name;
  std::printf(
      "[ EVA02-B-16 x%d ] loss %.9g (OpenCLIP fp64 %.9g, fp32 %.9g); worst gradient %s: %.3g (PyTorch fp32: "
      "%.3g)\n",
      kLayers, loss, want, want32, worst_name.c_str(), worst, worst_torch);
}

TEST(EvaLong, TenAdamWStepsMatchOpenClip) {
  OC_NEED_OPEN_CLIP();
  const int steps = 10;
  const std::string dir = eva_ref(fmt::format("train EVA02-B-16 {} {}", kLayers, steps));
  Clip m(eva_at_depth(kLayers));
  load_weights(m, dir + "/w.pt");
  const auto images = read_raw_file<float>(dir + "/images.f32");
  const auto tokens = read_raw_file<int32_t>(dir + "/tokens.i32");
  m.plan_training(kResNetBatch);
  ContrastiveStep step(m, kResNetBatch);
  AdamW opt(m.table(), AdamWCfg{.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-6, .wd = 0.2}, m.backend());
  const std::vector<double> want = read_losses(dir + "/losses.txt");
  ASSERT_EQ(want.size(), size_t(steps));
  for (int s = 0; s < steps; ++s) {
    const double loss = step.forward_backward(images.data(), tokens.data(), kResNetBatch);
    opt.step(m.params(), m.grads(), 1e-4);
    clamp_logit_scale(m.backend(), m.params() + m.table().find("logit_scale")->offset);
    EXPECT_NEAR(loss, want[s], 1e-5 * std::fabs(want[0])) << "step " << s;
    std::printf("[ EVA02-B-16 x%d ] step %d loss %.9g (OpenCLIP %.9g)\n", kLayers, s, loss, want[s]);
  }
}

}  // namespace
}  // namespace oc
