// The model prepares its fp32 GEMM weights for inference (Clip::prepare_f32) and releases them
// before anything writes the parameters (ops/cpu/linear_packed.cpp keeps the copies).
#include <gtest/gtest.h>

#include <vector>

#include "core/rng.h"
#include "model/clip.h"
#include "model/config.h"
#include "normal_floats.h"
#include "ops/cpu/linear_packed.h"
#include "ops/registry.h"

namespace oc {
namespace {

TEST(LinearPrepared, ModelPreparesForFp32InferenceAndReleasesBeforeWrites) {
  ModelCfg cfg = load_model_config("test-tiny");
  const int64_t before = ops::prepared_weight_f32_count();
  {
    Clip model(cfg, ops::backend("cpu"));
    model.init(0);
    model.plan_inference(2);
    const int S = cfg.vision.image_size;
    const auto img = test::normal_floats(size_t(2 * 3 * S * S), 4);
    std::vector<float> e1(size_t(2 * cfg.embed_dim)), e2(e1.size());
    model.encode_image(img.data(), 2, e1.data());
    const int64_t blocks = int64_t(cfg.vision.layers);
    EXPECT_EQ(ops::prepared_weight_f32_count(), before + 4 * blocks) << "in_proj, out_proj, c_fc, c_proj per block";
    // A write through params() releases the copies; the next encode prepares them again from
    // the new values (a stale copy would give the old embedding).
    float* p = model.params();
    EXPECT_EQ(ops::prepared_weight_f32_count(), before);
    for (size_t i = 0; i < model.table().total; ++i) p[i] *= 0.5f;
    model.encode_image(img.data(), 2, e2.data());
    EXPECT_NE(e1, e2);
    model.plan_training(2);
    EXPECT_EQ(ops::prepared_weight_f32_count(), before) << "training never keeps prepared fp32 weights";
    model.plan_inference(2);
    model.encode_image(img.data(), 2, e1.data());
  }
  EXPECT_EQ(ops::prepared_weight_f32_count(), before) << "the model releases its copies";
}

}  // namespace
}  // namespace oc
