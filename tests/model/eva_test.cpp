// EVA02 (model/eva/) against OpenCLIP 2.24.0 + timm 0.9.16 (tests/reference/eva_ref.py): the
// configs and their refusals, the state_dict names, timm's rotary table, and EVA02-B-16 at 2
// blocks per tower with the real widths, from OpenCLIP's random init on one batch of 4
// (resnet_parity.h's checks, which take any CLIP):
//  - image and text embeddings: cosine >= 0.99999 and max |diff| 1e-4 of the largest entry;
//  - our checkpoint loads with open_clip.create_model_and_transforms and gives our embeddings;
//  - amp_bf16 against its defined arithmetic.
// Gradients, 10 AdamW steps and the full-depth forward: eva_long_test.cpp (minutes).
#include <gtest/gtest.h>

#include "core/check.h"
#include "error_of.h"
#include "eva_parity.h"
#include "model/eva/rope_table.h"
#include "model/image_tower.h"

namespace oc {
namespace {

using namespace oc::test;

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
    // A named reference: clang 14 cannot capture a structured binding in a lambda (C++20 allows it).
    const std::string& v = vision;
    const std::string msg = error_of([&] { parse_model_config(cfg(v), "eva"); });
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

// amp_bf16 against its defined arithmetic (eva_ref.py amp, bf16_ref.py's contract: OpenCLIP's
// model in float64 with both inputs of every matrix product rounded to bf16). Ours sums in fp32,
// so an activation within fp32 rounding of a bf16 rounding boundary may round to the
// neighbouring bf16 value (2^-8 relative); PyTorch summing the same rounded products in fp32
// (image_amp32) is as far from the float64 contract as we are. Measured (2026-12-05, depth 2):
// 1 - cosine 9.1e-6 ours, 1.1e-5 PyTorch fp32 with the rounding, 4.4e-5 fp32 without it. Bar:
// within twice PyTorch's distance and under half of unrounded fp32's (a product whose operands
// are not rounded, or rounded where the contract says not, lands at the latter).
TEST(Eva, AmpBf16MatchesItsDefinedArithmetic) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = eva_ref(fmt::format("amp EVA02-B-16 {}", kLayers));
  Clip m(eva_at_depth(kLayers));
  load_weights(m, dir + "/w.pt");
  const auto images = read_raw_file<float>(dir + "/images.f32");
  const int64_t B = kResNetBatch, E = m.cfg().embed_dim;
  m.set_precision(Precision::AmpBf16);
  m.plan_inference(B);
  std::vector<float> ours(size_t(B * E));
  m.encode_image(images.data(), B, ours.data(), /*normalize=*/false);
  const auto want = read_raw_file<float>(dir + "/image_amp.f32");
  const double d_ours = 1 - compare_rows(ours, want, E).first;
  const double d_torch = 1 - compare_rows(read_raw_file<float>(dir + "/image_amp32.f32"), want, E).first;
  const double d_fp32 = 1 - compare_rows(read_raw_file<float>(dir + "/image.f32"), want, E).first;
  EXPECT_LE(d_ours, std::max(1e-7, 2 * d_torch));
  EXPECT_LT(d_ours, 0.5 * d_fp32);
  std::printf(
      "[ EVA02-B-16 x%d ] amp_bf16 image, 1 - cosine to the defined arithmetic: ours %.3g, PyTorch fp32 sums "
      "%.3g, fp32 unrounded %.3g\n",
      kLayers, d_ours, d_torch, d_fp32);
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

// --grad-checkpointing recomputes each block's activations from its kept input with the same
// kernels in the same order: the loss and every gradient are bitwise those of the plain plan,
// and the activation memory is smaller.
TEST(Eva, GradCheckpointingGivesTheSameGradients) {
  const ModelCfg cfg = eva_at_depth(3);
  const int64_t B = 2, S = cfg.vision.image_size, L = cfg.text.context_length;
  std::vector<float> images(size_t(B * 3 * S * S));
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(std::sin(0.37 * double(i)));
  std::vector<int32_t> tokens(size_t(B * L), 0);
  for (int64_t b = 0; b < B; ++b) tokens[size_t(b * L)] = 49406, tokens[size_t(b * L + 2 + b)] = 49407;
  std::vector<float> grads[2];
  double loss[2], mib[2];
  for (int ck = 0; ck < 2; ++ck) {
    Clip m(cfg);
    m.init(9);
    m.plan_training(B, /*checkpoint=*/ck == 1);
    mib[ck] = m.vision_tower().mib();
    ContrastiveStep step(m, B);
    loss[ck] = step.forward_backward(images.data(), tokens.data(), B);
    grads[ck].resize(m.table().total);
    m.backend().copy_to_host(grads[ck].data(), m.grads(), sizeof(float) * m.table().total);
  }
  EXPECT_EQ(loss[0], loss[1]);
  EXPECT_TRUE(grads[0] == grads[1]);
  EXPECT_LT(mib[1], mib[0]);
}

}  // namespace
}  // namespace oc
