// The C++ CLIP against an independent PyTorch implementation (tests/reference/clip_ref.py,
// via golden.py): same initial parameters and batch; features, logits, loss, every
// parameter's gradient, and a 10-step AdamW trajectory with OpenCLIP's schedule and clamp.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <map>
#include <string>

#include "core/fs.h"
#include "io/safetensors.h"
#include "model/clip.h"
#include "model/weights.h"
#include "ops/cpu/loss.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "step/contrastive_step.h"

namespace oc {
namespace {

struct Golden {
  std::map<std::string, HostTensor> t;
  std::map<std::string, std::string> meta;
  const HostTensor& at(const std::string& k) const {
    auto it = t.find(k);
    if (it == t.end()) throw std::runtime_error("golden file has no " + k);
    return it->second;
  }
  std::vector<float> f(const std::string& k) const { return at(k).to_f32(); }
};

// Runs golden.py; returns false (test skipped) when Debian's python3-torch is missing.
// `config`: a built-in name or a JSON path (both sides read the same file).
bool make_golden(const std::string& precision, Golden* g, const std::string& config = "test-tiny") {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) return false;
  const std::string dir = ::testing::TempDir() + "/golden_" + precision + "_" + fs::basename(config);
  const std::string cmd = "/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/golden.py --config " + config + " --out " + dir +
                          " --precision " + precision + " --steps 10 --batch 4 --seed 0 >/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << cmd;
  auto st = io::read_safetensors(dir + "/golden.safetensors");
  EXPECT_TRUE(st.ok()) << st.error();
  if (!st) return false;
  for (auto& [k, v] : st->tensors) g->t.emplace(k, std::move(v));
  g->meta = st->metadata;
  return true;
}

NamedTensors with_prefix(const Golden& g, const std::string& prefix) {
  NamedTensors out;
  for (auto& [k, v] : g.t)
    if (k.rfind(prefix, 0) == 0) out.emplace_back(k.substr(prefix.size()), v);
  return out;
}

// max |a-b| / max(|b|, floor) over a tensor: errors are judged against the tensor's scale.
double rel_err(const float* a, const std::vector<float>& b, double floor = 1e-8) {
  double d = 0, m = floor;
  for (size_t i = 0; i < b.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i]))), m = std::max(m, double(std::fabs(b[i])));
  return d / m;
}

struct Tolerances {
  double features, loss, grad, traj_loss, final_params;
};

// `golden_precision` names golden.py's mode; the model runs at `precision`.
void check_against_golden(const std::string& golden_precision, Precision precision, const Tolerances& tol,
                          const std::string& config = "test-tiny") {
  Golden g;
  if (!make_golden(golden_precision, &g, config)) GTEST_SKIP() << "needs /usr/bin/python3 with torch";
  const std::string tag = golden_precision + " " + fs::basename(config);
  ModelCfg cfg = load_model_config(config);
  const int64_t B = g.at("input.images").shape[0], E = cfg.embed_dim;
  Clip m(cfg);
  load_state_dict(m, with_prefix(g, "param."), "golden params");
  m.set_precision(precision);
  m.plan_training(B);
  const std::vector<float> images = g.f("input.images");
  std::vector<int32_t> tokens(size_t(g.at("input.tokens").numel()));
  std::memcpy(tokens.data(), g.at("input.tokens").bytes.data(), tokens.size() * 4);

  // Patch dropout: replay the reference's recorded draws (ours come from another generator):
  // forward number n uses step max(0, n - 2)'s, since the features and the first gradients
  // below are two forwards of step 0.
  const bool drop = cfg.vision.patch_dropout > 0;
  std::vector<int32_t> keep;
  int64_t forwards = 0;
  if (drop) {
    const HostTensor& k = g.at("input.patch_keep");
    keep.resize(size_t(k.numel()));
    std::memcpy(keep.data(), k.bytes.data(), keep.size() * 4);
    m.vision_tower().set_patch_keep([&](int64_t Bk, int64_t Np, int64_t K, int32_t* idx) {
      EXPECT_EQ(Bk * K * k.shape[0], int64_t(keep.size())) << "kept patches per step, Np " << Np;
      const int64_t s = std::max<int64_t>(0, forwards++ - 2);
      std::memcpy(idx, keep.data() + s * Bk * K, sizeof(int32_t) * size_t(Bk * K));
    });
  }
  std::vector<float> img(size_t(B * E)), txt(size_t(B * E));
  if (drop) {  // the reference's features are the training forward's: with the kept patches
    Clip::Features f = m.forward(images.data(), tokens.data(), B);
    std::memcpy(img.data(), f.image, sizeof(float) * img.size());
    std::memcpy(txt.data(), f.text, sizeof(float) * txt.size());
  } else {
    ++forwards;
  }
  ContrastiveStep step(m, B);
  const double loss = step.forward_backward(images.data(), tokens.data(), B);
  if (!drop) {  // features from an inference pass at the same parameters
    m.encode_image(images.data(), B, img.data());
    m.encode_text(tokens.data(), B, txt.data());
  }
  const double e_img = rel_err(img.data(), g.f("out.image_features")), e_txt = rel_err(txt.data(), g.f("out.text_features"));
  EXPECT_LE(e_img, tol.features) << "image features";
  EXPECT_LE(e_txt, tol.features) << "text features";
  const double ref_loss = g.f("out.loss")[0];
  EXPECT_NEAR(loss, ref_loss, tol.loss * ref_loss);
  double worst = 0;
  std::string worst_name;
  for (auto& p : m.table().params) {
    double e = rel_err(m.grads() + p.offset, g.f("grad." + p.name), 1e-6);
    if (e > worst) worst = e, worst_name = p.name;
    EXPECT_LE(e, tol.grad) << "gradient of " << p.name;
  }
  std::printf("[%s] features %.2e / %.2e; loss %.6f vs %.6f; worst gradient error %.2e (%s)\n", tag.c_str(), e_img,
              e_txt, loss, ref_loss, worst, worst_name.c_str());

  // 10 AdamW steps on the same batch: lr 1e-3, wd 0.1, cosine with warmup 2 over 10 steps.
  load_state_dict(m, with_prefix(g, "param."), "golden params");
  AdamWCfg ac = default_adamw("ViT");  // betas (0.9, 0.98), eps 1e-6 as the golden's metadata
  ac.lr = 1e-3, ac.wd = 0.1;
  AdamW opt(m.table(), ac);
  ScheduleCfg sc;
  sc.base_lr = 1e-3, sc.warmup = 2, sc.total_steps = 10;
  const std::vector<float> ref_traj = g.f("traj.loss"), ref_lr = g.f("traj.lr");
  float* logit_scale = m.params() + m.table().find("logit_scale")->offset;
  double worst_traj = 0;
  for (int s = 0; s < 10; ++s) {
    const double l = step.forward_backward(images.data(), tokens.data(), B);
    EXPECT_NEAR(lr_at(sc, s), ref_lr[size_t(s)], 1e-9);
    EXPECT_NEAR(l, ref_traj[size_t(s)], tol.traj_loss * ref_traj[size_t(s)]) << "step " << s;
    worst_traj = std::max(worst_traj, std::fabs(l - ref_traj[size_t(s)]) / ref_traj[size_t(s)]);
    opt.step(m.params(), m.grads(), lr_at(sc, s));
    clamp_logit_scale(m.backend(), logit_scale);
  }
  double worst_final = 0;
  for (auto& p : m.table().params) {
    std::vector<float> ref = g.f("final." + p.name);
    std::vector<float> ours(m.params() + p.offset, m.params() + p.offset + p.numel);
    if (p.name.find("in_proj_bias") != std::string::npos) {
      // The key third of in_proj_bias has a true gradient of zero (softmax ignores a
      // per-query constant): both sides update it from rounding noise, so compare q and v.
      const size_t W = p.numel / 3;
      std::fill(ref.begin() + W, ref.begin() + 2 * W, 0.0f);
      std::fill(ours.begin() + W, ours.begin() + 2 * W, 0.0f);
    }
    const double e = rel_err(ours.data(), ref, 1e-2);
    worst_final = std::max(worst_final, e);
    EXPECT_LE(e, tol.final_params) << p.name;
  }
  std::printf("[%s] 10 steps: worst loss error %.2e, worst final parameter error %.2e\n", tag.c_str(), worst_traj,
              worst_final);
}

TEST(Golden, Fp32MatchesPyTorch) {
  // fp32 on both sides: only summation order differs (oneDNN vs MKL/OpenBLAS GEMMs, our
  // softmax/LayerNorm loops): ~1e-6 relative per op, growing through 4 blocks and the
  // backward pass. AdamW turns tiny gradient differences into sign-like updates only where
  // |g| ~ eps, so final parameters get a looser bound than the first gradients.
  check_against_golden("fp32", Precision::Fp32, {2e-5, 1e-5, 2e-4, 1e-4, 1e-3});
}

// The OpenCLIP tower options on tiny configs (tests/model/configs), same bounds as test-tiny's
// fp32 test and for the same reason (fp32 both sides, only summation order differs):
//   tiny-clipa: no_ln_pre, pool_type avg + final_ln_after_pool; text pool "last", no causal mask
//   tiny-ls:    LayerScale in both towers, avg pool with ln_post on every token; text pool
//               "first", proj_bias (nn.Linear projection), pad_id / final_ln_after_pool (no effect)
//   tiny-pdrop: patch dropout 0.5 (8 of 16 patches), the reference's draws replayed
TEST(Golden, ClipaOptionsMatchPyTorch) {
  check_against_golden("fp32", Precision::Fp32, {2e-5, 1e-5, 2e-4, 1e-4, 1e-3},
                       OPENCLIP_TEST_DIR "/model/configs/tiny-clipa.json");
}
TEST(Golden, LayerScaleAvgPoolProjBiasMatchPyTorch) {
  check_against_golden("fp32", Precision::Fp32, {2e-5, 1e-5, 2e-4, 1e-4, 1e-3},
                       OPENCLIP_TEST_DIR "/model/configs/tiny-ls.json");
}
TEST(Golden, PatchDropoutMatchesPyTorch) {
  check_against_golden("fp32", Precision::Fp32, {2e-5, 1e-5, 2e-4, 1e-4, 1e-3},
                       OPENCLIP_TEST_DIR "/model/configs/tiny-pdrop.json");
}

TEST(Golden, AmpBf16MatchesDefinedBf16Reference) {
  // The oracle is tests/reference/bf16_ref.py: every matmul input, forward and backward,
  // rounded to bf16, everything else exact. That arithmetic does not depend on the CPU, so
  // this test means the same on AVX2 (rounded values through sgemm) and on AMX/AVX512-BF16
  // (oneDNN's native bf16 matmul). What remains between ours and the oracle is fp32
  // accumulation (~1e-7 relative per product) plus the rare input whose fp32 value sits on
  // a bf16 rounding boundary and rounds the other way (one ulp, 2^-8, on one element).
  // Measured on test-tiny (2026-12-01, Xeon AMX): features 1.2e-7, loss equal to 7 digits,
  // worst first gradient 1.4e-4 relative to its tensor's scale; 10 steps: loss 1.2e-2,
  // final parameters 1.7e-2.
  // Bounds and why they still catch a wrong arithmetic: leaving ONE product of the 2 x 4
  // blocks unrounded (or rounding only in forward) moves the worst gradient by 1.9-4.4e-2
  // and the features by far more than 1e-5 (measured with bf16_ref.py), so features 1e-5,
  // loss 1e-5 and gradients 2e-3 (half a bf16 ulp; 10x above what we measure, 10x below any
  // single missing or extra rounding). The trajectory is chaotic in bf16: AdamW's first
  // steps are sign-like (update ~ lr * g / |g|), so gradient elements at the 1e-4 noise
  // level flip sign between two correct implementations and the curves drift apart by ~1%
  // (loss falls from 1.66 to 0.05); 5e-2 on the loss curve and on the final parameters
  // guards the optimizer path, the first-gradient bound guards the arithmetic.
  check_against_golden("amp_bf16_defined", Precision::AmpBf16, {1e-5, 1e-5, 2e-3, 5e-2, 5e-2});
}

TEST(Golden, AmpBf16DistanceFromFp32BesideTorchAutocast) {
  // Information, not the bound: torch's CPU autocast rounds matmul OUTPUTS to bf16 as well,
  // and its bf16 kernels differ by CPU (more exact on AMX than on AVX2), so "as close to fp32
  // as torch autocast" passed or failed by machine (0.060 vs a bound of 0.055 on an AMX
  // Xeon). The defined-arithmetic test above is the bound; this one prints both distances
  // from fp32 and fails only when ours is far outside bf16's scale, as a broken bf16 path
  // (wrong layout or scale: O(1) errors) would be. Measured on an AMX Xeon: ours 3.2e-3 /
  // 2.2e-3 / 6.0e-2 for features / loss / worst gradient, torch 6.1e-3 / 3.5e-3 / 6.4e-2;
  // bounds 2^-5, 2^-5 and 2^-2.
  Golden g32, g16;
  if (!make_golden("fp32", &g32) || !make_golden("amp_bf16", &g16)) GTEST_SKIP() << "needs /usr/bin/python3 with torch";
  ModelCfg cfg = load_model_config("test-tiny");
  const int64_t B = g32.at("input.images").shape[0], E = cfg.embed_dim;
  ASSERT_EQ(g32.at("input.images").bytes, g16.at("input.images").bytes) << "goldens must share inputs";
  Clip m(cfg);
  load_state_dict(m, with_prefix(g32, "param."), "golden params");
  m.set_precision(Precision::AmpBf16);
  m.plan_training(B);
  const std::vector<float> images = g32.f("input.images");
  std::vector<int32_t> tokens(size_t(g32.at("input.tokens").numel()));
  std::memcpy(tokens.data(), g32.at("input.tokens").bytes.data(), tokens.size() * 4);
  ContrastiveStep step(m, B);
  const double loss = step.forward_backward(images.data(), tokens.data(), B);
  std::vector<float> img(size_t(B * E));
  m.encode_image(images.data(), B, img.data());
  auto distances = [&](const float* ours, const std::string& key) {
    const std::vector<float> exact = g32.f(key);
    return std::pair{rel_err(ours, exact, 1e-6), rel_err(g16.f(key).data(), exact, 1e-6)};
  };
  const auto [f_ours, f_torch] = distances(img.data(), "out.image_features");
  const float lf = float(loss);
  const auto [l_ours, l_torch] = distances(&lf, "out.loss");
  double g_ours = 0, g_torch = 0;
  for (auto& p : m.table().params) {
    const auto [o, t] = distances(m.grads() + p.offset, "grad." + p.name);
    g_ours = std::max(g_ours, o), g_torch = std::max(g_torch, t);
  }
  std::printf("[amp_bf16 vs fp32] ours / torch autocast: features %.2e / %.2e, loss %.2e / %.2e, worst gradient %.2e / %.2e\n",
              f_ours, f_torch, l_ours, l_torch, g_ours, g_torch);
  EXPECT_LE(f_ours, 1.0 / 32);
  EXPECT_LE(l_ours, 1.0 / 32);
  EXPECT_LE(g_ours, 1.0 / 4);
}

}  // namespace
}  // namespace oc
