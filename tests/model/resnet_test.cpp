// ModifiedResNet CLIP (the RN configs) against OpenCLIP 2.24.0 at random init with random
// BatchNorm statistics (tests/reference/resnet_ref.py), the same weights loaded into both:
// eval-mode embeddings, the contrastive loss and every parameter's gradient in train mode
// (BatchNorm on batch statistics, running statistics updated), and a checkpoint written here
// loaded by open_clip.create_model_and_transforms(pretrained=...). A reduced config (64 px,
// layers [1,2,1,1], width 16: every kind of Bottleneck) keeps this in the default suite;
// resnet_long_test.cpp runs RN50 and RN50x4.
#include "model/resnet/config_resnet.h"
#include "resnet_parity.h"

namespace oc::test {
namespace {

const std::string kTiny = OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json";

TEST(ResNet, ConfigAndStateDictNames) {
  const ModelCfg c = load_model_config("RN50");
  ASSERT_TRUE(c.vision.resnet());
  EXPECT_EQ(c.vision.resnet_layers, (std::vector<int>{3, 4, 6, 3}));
  EXPECT_EQ(attnpool_heads(c.vision), 32);  // 64 * 32 / 64
  const ParamTable t = make_param_table(c);
  EXPECT_EQ(t.count(), 102007137);  // OpenCLIP 2.24.0: sum(p.numel() for p in RN50.parameters())
  for (const char* n : {"visual.conv1.weight", "visual.bn1.running_mean", "visual.bn3.num_batches_tracked",
                        "visual.layer1.0.downsample.0.weight", "visual.layer4.2.bn3.running_var",
                        "visual.attnpool.positional_embedding", "visual.attnpool.c_proj.bias"})
    EXPECT_TRUE(t.find(n)) << n;
  EXPECT_EQ(t.find("visual.attnpool.positional_embedding")->shape, (Shape{50, 2048}));
  EXPECT_TRUE(t.find("visual.bn1.running_var")->buffer);
  EXPECT_FALSE(t.find("visual.bn1.weight")->decay);
  EXPECT_TRUE(t.find("visual.layer2.0.conv2.weight")->decay);
  EXPECT_EQ(attnpool_heads(load_model_config("RN50x4").vision), 40);
  // The JSON written next to exported weights reads back as the same tower.
  const ModelCfg back = parse_model_config(model_config_json(c), "RN50");
  EXPECT_EQ(back.vision.resnet_layers, c.vision.resnet_layers);
  EXPECT_EQ(make_param_table(back).count(), t.count());
}

TEST(ResNet, ForwardMatchesOpenClip) { expect_resnet_forward(kTiny); }
TEST(ResNet, GradientsMatchOpenClip) { expect_resnet_gradients(kTiny); }
TEST(ResNet, GradientsMatchOpenClipEvalBatchNorm) { expect_resnet_gradients(kTiny, /*train_bn=*/false); }
TEST(ResNet, TenAdamWStepsMatchOpenClip) { expect_resnet_training(kTiny, 10); }
TEST(ResNet, CheckpointLoadsInOpenClip) { expect_resnet_checkpoint_roundtrip(kTiny); }

// The training forward updates the running statistics and counts batches; frozen
// (--lock-image-freeze-bn-stats) it runs BatchNorm in eval mode: the statistics stay, and the
// features are encode_image's.
TEST(ResNet, FrozenBatchNormStatistics) {
  const ModelCfg cfg = load_model_config(kTiny);
  const int64_t B = 2, S = cfg.vision.image_size, E = cfg.embed_dim;
  std::vector<float> images(size_t(B * 3 * S * S));
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(std::sin(0.37 * double(i)));
  std::vector<int32_t> tokens(size_t(B * cfg.text.context_length), 0);
  tokens[0] = tokens[size_t(cfg.text.context_length)] = 49406, tokens[1] = tokens[size_t(cfg.text.context_length) + 1] = 49407;
  for (bool frozen : {true, false}) {
    Clip m(cfg);
    m.init(3);
    const ParamInfo& rm = *m.table().find("visual.layer2.0.bn2.running_mean");
    const ParamInfo& count = *m.table().find("visual.layer2.0.bn2.num_batches_tracked");
    const std::vector<float> before = param_to_host(m.backend(), m.params(), rm).to_f32();
    std::vector<float> eval(size_t(B * E)), train(eval.size());
    m.plan_training(B);
    m.encode_image(images.data(), B, eval.data());
    m.set_freeze_bn_stats(frozen);
    const Clip::Features f = m.forward(images.data(), tokens.data(), B);
    m.backend().copy_to_host(train.data(), f.image, train.size() * sizeof(float));
    const std::vector<float> after = param_to_host(m.backend(), m.params(), rm).to_f32();
    EXPECT_EQ(after == before, frozen);
    EXPECT_EQ(param_to_host(m.backend(), m.params(), count).to_f32()[0], frozen ? 0.0f : 1.0f);
    EXPECT_EQ(eval == train, frozen);  // the same kernels on the same inputs: bitwise when frozen
  }
}

// The trainer's batches come channels-last in backend memory (ImagesIn::Backend, the loader's
// BatchMemory::channels_last): the features and every gradient are bitwise those of the same
// images NCHW from the host (the tower's own transpose), as the transpose is exact; the
// running statistics too.
TEST(ResNet, ChannelsLastBackendImagesGiveTheHostPathsBits) {
  const ModelCfg cfg = load_model_config(kTiny);
  const int64_t B = 2, S = cfg.vision.image_size, E = cfg.embed_dim, ctx = cfg.text.context_length;
  std::vector<float> nchw(size_t(B * 3 * S * S)), nhwc(nchw.size());
  for (size_t i = 0; i < nchw.size(); ++i) nchw[i] = float(std::sin(0.23 * double(i)));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < S * S; ++i) nhwc[size_t((b * S * S + i) * 3 + c)] = nchw[size_t((b * 3 + c) * S * S + i)];
  std::vector<int32_t> tokens(size_t(B * ctx), 0);
  tokens[0] = tokens[size_t(ctx)] = 49406, tokens[1] = tokens[size_t(ctx) + 1] = 49407;
  std::vector<float> d(size_t(B * E));
  for (size_t i = 0; i < d.size(); ++i) d[i] = float(std::cos(0.7 * double(i)));
  std::vector<float> feat[2], grads[2], params[2];
  for (int k = 0; k < 2; ++k) {
    Clip m(cfg);  // the cpu backend: its memory is the host's
    ASSERT_TRUE(m.takes_backend_images());
    ASSERT_EQ(m.backend_image_layout(), ImageInput::Layout::NHWC);
    m.init(7);
    m.plan_training(B);
    m.zero_grads();
    const Clip::Features f = k == 0 ? m.forward(nchw.data(), tokens.data(), B)
                                    : m.forward(nhwc.data(), tokens.data(), B, ImagesIn::Backend);
    feat[k].assign(f.image, f.image + B * E);
    m.backward(d.data(), d.data());
    grads[k].assign(m.grads(), m.grads() + m.table().total);
    params[k].assign(m.params(), m.params() + m.table().total);  // the running statistics too
  }
  EXPECT_EQ(feat[0], feat[1]);
  EXPECT_EQ(grads[0], grads[1]);
  EXPECT_EQ(params[0], params[1]);
}

// amp_bf16: convolutions and projections on bf16-rounded operands with fp32 accumulation
// (Prec::BF16), BatchNorm and the rest in fp32. bf16 keeps 8 bits: each rounded operand is off
// by up to 2^-9 relative, ~20 layers deep; the embeddings stay within cosine 0.999 of fp32 (a
// wrong op or layout would give ~0), and training steps run.
TEST(ResNet, AmpBf16StaysCloseToFp32) {
  const ModelCfg cfg = load_model_config(kTiny);
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
}

TEST(ResNet, MissingBatchNormStatisticsAreNamed) {
  const ModelCfg cfg = load_model_config(kTiny);
  Clip m(cfg);
  m.init(1);
  NamedTensors sd = state_dict_copy(m);
  std::erase_if(sd, [](const auto& kv) { return kv.first.find("running_") != std::string::npos; });
  try {
    load_state_dict(m, sd, "partial.pt");
    FAIL() << "loaded without BatchNorm statistics";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("partial.pt"), std::string::npos) << msg;
    EXPECT_NE(msg.find("visual.bn1.running_mean, visual.bn1.running_var"), std::string::npos) << msg;
    EXPECT_NE(msg.find("visual.layer4.0.downsample.1.running_var"), std::string::npos) << msg;
  }
}

}  // namespace
}  // namespace oc::test
