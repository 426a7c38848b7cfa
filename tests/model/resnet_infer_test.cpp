// ModifiedResNet's inference path (model/resnet/modified_resnet.cpp: BatchNorm folded into each
// conv's weight and bias, ReLU and the Bottleneck's identity in the conv's epilogue, the folded
// weights prepared once on the backend) against the unfolded eval forward that a training
// plan runs (conv -> BatchNorm in eval mode -> ReLU, the residual add apart), on BatchNorm
// statistics and affine parameters far from the identity so that folding matters; and the
// folded copies rebuilt after the parameters are written; the attention pool's prepared
// projections likewise.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "model/clip.h"
#include "model/config.h"
#include "ops/registry.h"

namespace oc {
namespace {

const std::string kTiny = OPENCLIP_TEST_DIR "/model/configs/tiny-rn.json";

// Every BatchNorm's weight, bias, running mean and running variance drawn from [a, b) ranges
// by a fixed sequence (variance positive), `salt` varying them.
void set_batchnorm(Clip& m, double salt) {
  float* p = m.params();
  int k = 0;
  for (const ParamInfo& pi : m.table().params) {
    if (pi.name.find(".bn") == std::string::npos && pi.name.find("downsample.1") == std::string::npos) continue;
    const bool var = pi.name.ends_with("running_var"), mean = pi.name.ends_with("running_mean");
    const bool w = pi.name.ends_with("weight"), b = pi.name.ends_with("bias");
    if (!var && !mean && !w && !b) continue;  // num_batches_tracked
    for (size_t i = 0; i < pi.numel; ++i, ++k) {
      const double u = 0.5 + 0.5 * std::sin(salt + 0.731 * k);  // [0, 1]
      p[pi.offset + i] = float(var ? 0.2 + 2.0 * u : mean ? u - 0.5 : w ? 0.5 + u : 0.4 * (u - 0.5));
    }
  }
}

std::vector<float> encode(Clip& m, const std::vector<float>& images, int64_t B, bool folded) {
  if (folded) m.plan_inference(B);
  else m.plan_training(B);  // encode_image on a training plan: the unfolded eval forward
  std::vector<float> out(size_t(B * m.cfg().embed_dim));
  m.encode_image(images.data(), B, out.data());
  return out;
}

double max_abs_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::abs(double(a[i]) - double(b[i])));
  return d;
}

TEST(ResNetInference, FoldedBatchNormMatchesTheUnfoldedForward) {
  const ModelCfg cfg = load_model_config(kTiny);
  const int64_t B = 3, S = cfg.vision.image_size;
  std::vector<float> images(size_t(B * 3 * S * S));
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(std::sin(0.23 * double(i)));
  Clip m(cfg, ops::backend("cpu"));
  m.init(7);
  set_batchnorm(m, 0.0);
  // fp32: folding rounds each weight once more (2^-24 relative) and the sums run in another
  // order; through ~20 convs that stays ~1e-6 of the unit-norm features. 2e-5 fails on any
  // wrong scale, bias, residual or ReLU (those move features by 1e-2 or more).
  const std::vector<float> unfolded = encode(m, images, B, false), folded = encode(m, images, B, true);
  EXPECT_LT(max_abs_diff(folded, unfolded), 2e-5);
  // A second batch size: the backend's kept copies per layout.
  const std::vector<float> one = encode(m, images, 1, true);
  EXPECT_LT(max_abs_diff(one, std::vector<float>(unfolded.begin(), unfolded.begin() + cfg.embed_dim)), 2e-5);

  // Written parameters: the next inference folds the new statistics (a stale fold would give
  // the old features, ~1e-1 away).
  set_batchnorm(m, 1.3);
  const std::vector<float> unfolded2 = encode(m, images, B, false), folded2 = encode(m, images, B, true);
  EXPECT_GT(max_abs_diff(unfolded2, unfolded), 1e-2);
  EXPECT_LT(max_abs_diff(folded2, unfolded2), 2e-5);

  // amp_bf16: the folded weight is rounded to bf16 where the unfolded path rounds the raw one
  // (each up to 2^-9 relative); the features stay within cosine 0.999 (as amp_bf16 vs fp32).
  m.set_precision(Precision::AmpBf16);
  const std::vector<float> b16 = encode(m, images, B, true);
  const int64_t E = cfg.embed_dim;
  for (int64_t b = 0; b < B; ++b) {
    double dot = 0;
    for (int64_t e = 0; e < E; ++e) dot += double(b16[size_t(b * E + e)]) * double(unfolded2[size_t(b * E + e)]);
    EXPECT_GT(dot, 0.999) << "image " << b;  // both unit-norm
  }
  EXPECT_NE(b16, folded2);
}

// The attention pool's projections prepared for inference (fp32: oneDNN's blocked copies;
// amp_bf16: bf16 copies) follow a write of the parameters on the same plan: negating the output
// projection's weight and bias negates the features exactly (rounding is symmetric), where a
// stale copy would give the old ones.
TEST(ResNetInference, PreparedPoolWeightsFollowParameterWrites) {
  const ModelCfg cfg = load_model_config(kTiny);
  const int64_t B = 2, S = cfg.vision.image_size, E = cfg.embed_dim;
  std::vector<float> images(size_t(B * 3 * S * S));
  for (size_t i = 0; i < images.size(); ++i) images[i] = float(std::cos(0.17 * double(i)));
  Clip m(cfg, ops::backend("cpu"));
  m.init(3);
  const ParamInfo *w = nullptr, *b = nullptr;
  for (const ParamInfo& pi : m.table().params) {
    if (pi.name == "visual.attnpool.c_proj.weight") w = &pi;
    if (pi.name == "visual.attnpool.c_proj.bias") b = &pi;
  }
  ASSERT_TRUE(w && b);
  for (Precision prec : {Precision::Fp32, Precision::AmpBf16}) {
    m.set_precision(prec);
    m.plan_inference(B);
    std::vector<float> before(size_t(B * E)), after(size_t(B * E));
    m.encode_image(images.data(), B, before.data());
    float* p = m.params();
    for (const ParamInfo* pi : {w, b})
      for (size_t i = 0; i < pi->numel; ++i) p[pi->offset + i] = -p[pi->offset + i];
    m.encode_image(images.data(), B, after.data());
    for (size_t i = 0; i < after.size(); ++i) ASSERT_EQ(after[i], -before[i]) << "precision " << int(prec) << " at " << i;
  }
}

}  // namespace
}  // namespace oc
