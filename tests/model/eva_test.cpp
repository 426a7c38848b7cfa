// EVA02 (model/eva/) against OpenCLIP 2.24.0 + timm 0.9.16 (tests/reference/eva_ref.py): the
// configs and their refusals, the state_dict names, timm's rotary table, and EVA02-B-16 at 2
// blocks per tower with the real widths (full depth: eva_long_test.cpp), from OpenCLIP's random
// init on one batch of 4 (resnet_parity.h's checks, which take any CLIP):
//  - image and text embeddings: cosine >= 0.99999 and max |diff| 1e-4 of the largest entry;
//  - the ClipLoss gradient of every parameter against PyTorch's float64 gradient: within 1e-4
//    of its max wherever PyTorch fp32 is within 1e-5, and never more than twice PyTorch fp32's
//    worst; the loss within 1e-5;
//  - 10 AdamW steps (lr 1e-4, wd 0.2): each loss within 1e-5 of the first step's;
//  - our checkpoint loads with open_clip.create_model_and_transforms and gives our embeddings.
#include <gtest/gtest.h>

#include "core/check.h"
#include "error_of.h"
#include "model/eva/rope_table.h"
#include "model/image_tower.h"
#include "resnet_parity.h"

namespace oc {
namespace {

using namespace oc::test;

constexpr int kLayers = 2;

ModelCfg eva_at_depth(int layers) {
  ModelCfg cfg = load_model_config("EVA02-B-16");
  if (layers > 0) cfg.vision.layers = cfg.text.layers = layers;
  return cfg;
}

std::string eva_ref(const std::string& args) {
  const std::string dir = fresh_dir("eva_ref");
  auto r = run(pyref_python() + " " OPENCLIP_TEST_DIR "/reference/eva_ref.py " + args + " " + dir);
  EXPECT_EQ(r.status, 0) << r.out;
  return dir;
}

TEST(Eva, ConfigsAndFamily) {
  for (const char* name : {"EVA02-B-16", "EVA02-L-14", "EVA02-L-14-336"}) {
    EXPECT_STREQ(make_image_tower(load_model_config(name))->family(), "EVA02") << name;
  }
  const ModelCfg l = load_model_config("EVA02-L-14");
  EXPECT_EQ(l.vision.width, 1024);
  EXPECT_EQ(l.vision.mlp_width(), 2730);  // timm: int(1024 * 4 * 2 / 3)
  EXPECT_EQ(load_model_config("EVA02-L-14-336").vision.grid(), 24);
}

// The refusals name the key (issue 36, "Bad input").
TEST(Eva, HostileConfigsAreRefusedNamingTheKey) {
  auto cfg = [](const std::string& vision) {
    return R"({"embed_dim": 512, "custom_text": true, "text_cfg": {"width": 512, "heads": 8, "layers": 2},
               "vision_cfg": )" +
           vision + "}";
  };
  const std::string ok = R"("timm_model_name": "eva02_base_patch16_clip_224", "timm_pool": "token", "timm_proj": null)";
  EXPECT_NO_THROW(parse_model_config(cfg("{" + ok + "}"), "eva"));
  const std::pair<std::string, std::string> bad[] = {
      {R"({"timm_model_name": "eva02_enormous_patch14_clip_224", "timm_pool": "token", "timm_proj": null})",
       "timm_model_name"},
      {R"({"timm_model_name": "eva_giant_patch14_224", "timm_pool": "token", "timm_proj": null})", "EVA01"},
      {R"({"timm_model_name": "eva02_base_patch16_clip_224", "timm_pool": "avg", "timm_proj": null})", "timm_pool"},
      {R"({"timm_model_name": "eva02_base_patch16_clip_224", "timm_pool": "token"})", "timm_proj"},
      {"{" + ok + R"(, "layers": 100000})", "layers"},
      {"{" + ok + R"(, "image_size": 448})", "image_size"},
      {"{" + ok + R"(, "patch_dropout": 0.5})", "patch_dropout"},
      {"{" + ok + R"(, "ls_init_value": 0.1})", "ls_init_value"},
  };
  for (const auto& [vision, key] : bad) {
    const std::string msg = error_of([&] { parse_model_config(cfg(vision), "eva"); });
    EXPECT_NE(msg.find(key), std::string::npos) << vision << ": " << msg;
  }
}

// Our table against RotaryEmbeddingCat's buffer for EVA02-B-16 (grid 14, ref 16) and -L-14-336
// (grid 24): float32 on both sides, sin/cos of the same float angles; 1e-6 allows libm's
// and torch's sin/cos to differ in the last bit.
TEST(Eva, RopeTableMatchesTimm) {
  OC_NEED_OPEN_CLIP();
  for (int grid : {14, 24}) {
    const std::string dir = eva_ref(fmt::format("table {} 16", grid));
    const auto want = read_raw_file<float>(dir + "/table.f32");
    const auto ours = eva_rope_table(grid, 64, 16);
    ASSERT_EQ(ours.size(), want.size());
    double worst = 0;
    for (size_t i = 0; i < ours.size(); ++i) worst = std::max(worst, double(std::fabs(ours[i] - want[i])));
    EXPECT_LT(worst, 1e-6) << "grid " << grid;
  }
}

// Same names, shapes and order as OpenCLIP's state_dict (no rope buffer: timm's is not
// persistent).
TEST(Eva, StateDictNamesAndForwardMatchOpenClip) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = eva_ref(fmt::format("forward EVA02-B-16 {}", kLayers));
  const NamedTensors sd = read_state_dict(dir + "/w.pt");
  Clip m(eva_at_depth(kLayers));
  ASSERT_EQ(m.table().params.size(), sd.size());
  for (size_t i = 0; i < sd.size(); ++i) {
    EXPECT_EQ(m.table().params[i].name, sd[i].first) << i;
    EXPECT_EQ(m.table().params[i].shape, sd[i].second.shape) << sd[i].first;
  }
  load_weights(m, dir + "/w.pt");
  expect_embeddings(m, dir, "");
}

TEST(Eva, GradientsMatchOpenClip) {
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

TEST(Eva, TenAdamWStepsMatchOpenClip) {
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

TEST(Eva, CheckpointLoadsBothWays) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = eva_ref(fmt::format("forward EVA02-B-16 {}", kLayers));
  Clip m(eva_at_depth(kLayers));
  load_weights(m, dir + "/w.pt");  // OpenCLIP's -> ours
  const std::string ckpt = dir + "/ours.pt";
  save_weights(m, ckpt);  // ours -> OpenCLIP's
  auto r = run(pyref_python() + " " OPENCLIP_TEST_DIR "/reference/eva_ref.py load EVA02-B-16 " +
               std::to_string(kLayers) + " " + ckpt + " " + dir);
  ASSERT_EQ(r.status, 0) << r.out;
  expect_embeddings(m, dir, "_loaded");
}

// amp_bf16: fp32 activations, GEMMs and attention on bf16-rounded operands (Prec::BF16). bf16
// keeps 8 bits (each rounded operand off by up to 2^-9 relative) over ~20 GEMMs: the embeddings
// stay within cosine 0.999 of fp32 (a wrong op or layout would give ~0), and a training step
// gives a finite loss near fp32's.
TEST(Eva, AmpBf16StaysCloseToFp32) {
  const ModelCfg cfg = eva_at_depth(kLayers);
  const int64_t B = 2, S = cfg.vision.image_size, E = cfg.embed_dim;
  std::vector<float> images(size_t(B * 3 * S * S));
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(std::cos(0.11 * double(i)));
  Clip m(cfg);
  m.init(5);
  m.plan_inference(B);
  std::vector<float> f32(size_t(B * E)), b16(f32.size());
  m.encode_image(images.data(), B, f32.data());
  m.set_precision(Precision::AmpBf16);
  m.encode_image(images.data(), B, b16.data());
  const auto [cos, rel] = compare_rows(b16, f32, E);
  EXPECT_GT(cos, 0.999);
  EXPECT_NE(b16, f32);  // the bf16 path ran
  std::vector<int32_t> tokens(size_t(B * cfg.text.context_length), 0);
  for (int64_t b = 0; b < B; ++b)
    tokens[size_t(b * cfg.text.context_length)] = 49406, tokens[size_t(b * cfg.text.context_length + 1 + b)] = 49407;
  m.plan_training(B);
  ContrastiveStep step(m, B);
  const double loss16 = step.forward_backward(images.data(), tokens.data(), B);
  m.set_precision(Precision::Fp32);
  const double loss32 = step.forward_backward(images.data(), tokens.data(), B);
  EXPECT_NEAR(loss16, loss32, 1e-2 * std::fabs(loss32));
}

}  // namespace
}  // namespace oc
