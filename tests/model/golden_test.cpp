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
#include "ops/loss.h"
#include "optim/adamw.h"
#include "optim/schedule.h"
#include "optim/step.h"

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
bool make_golden(const std::string& precision, Golden* g) {
  if (std::system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) return false;
  const std::string dir = ::testing::TempDir() + "/golden_" + precision;
  const std::string cmd = "/usr/bin/python3 " OPENCLIP_TEST_DIR "/reference/golden.py --config test-tiny --out " + dir +
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

void check_against_golden(const std::string& precision, const Tolerances& tol) {
  Golden g;
  if (!make_golden(precision, &g)) GTEST_SKIP() << "needs /usr/bin/python3 with torch";
  ModelCfg cfg = load_model_config("test-tiny");
  const int64_t B = g.at("input.images").shape[0], E = cfg.embed_dim;
  Clip m(cfg);
  load_state_dict(m, with_prefix(g, "param."), "golden params");
  m.set_precision(parse_precision(precision));
  m.plan_training(B);
  const std::vector<float> images = g.f("input.images");
  std::vector<int32_t> tokens(size_t(g.at("input.tokens").numel()));
  std::memcpy(tokens.data(), g.at("input.tokens").bytes.data(), tokens.size() * 4);

  ContrastiveStep step(m, B);
  const double loss = step.forward_backward(images.data(), tokens.data(), B);
  // Features from an inference pass at the same parameters.
  std::vector<float> img(size_t(B * E)), txt(size_t(B * E));
  m.encode_image(images.data(), B, img.data());
  m.encode_text(tokens.data(), B, txt.data());
  EXPECT_LE(rel_err(img.data(), g.f("out.image_features")), tol.features);
  EXPECT_LE(rel_err(txt.data(), g.f("out.text_features")), tol.features);
  const double ref_loss = g.f("out.loss")[0];
  EXPECT_NEAR(loss, ref_loss, tol.loss * ref_loss);
  double worst = 0;
  std::string worst_name;
  for (auto& p : m.table().params) {
    double e = rel_err(m.grads() + p.offset, g.f("grad." + p.name), 1e-6);
    if (e > worst) worst = e, worst_name = p.name;
    EXPECT_LE(e, tol.grad) << "gradient of " << p.name;
  }
  std::printf("[%s] loss %.6f vs %.6f; worst gradient error %.2e (%s)\n", precision.c_str(), loss, ref_loss, worst,
              worst_name.c_str());

  // 10 AdamW steps on the same batch: lr 1e-3, wd 0.1, cosine with warmup 2 over 10 steps.
  load_state_dict(m, with_prefix(g, "param."), "golden params");
  AdamWCfg ac = default_adamw("ViT");  // betas (0.9, 0.98), eps 1e-6 as the golden's metadata
  ac.lr = 1e-3, ac.wd = 0.1;
  AdamW opt(m.table(), ac);
  ScheduleCfg sc;
  sc.base_lr = 1e-3, sc.warmup = 2, sc.total_steps = 10;
  const std::vector<float> ref_traj = g.f("traj.loss"), ref_lr = g.f("traj.lr");
  float* logit_scale = m.params() + m.table().find("logit_scale")->offset;
  for (int s = 0; s < 10; ++s) {
    const double l = step.forward_backward(images.data(), tokens.data(), B);
    EXPECT_NEAR(lr_at(sc, s), ref_lr[size_t(s)], 1e-9);
    EXPECT_NEAR(l, ref_traj[size_t(s)], tol.traj_loss * ref_traj[size_t(s)]) << "step " << s;
    opt.step(m.params(), m.grads(), lr_at(sc, s));
    clamp_logit_scale(logit_scale);
  }
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
    EXPECT_LE(rel_err(ours.data(), ref, 1e-2), tol.final_params) << p.name;
  }
}

TEST(Golden, Fp32MatchesPyTorch) {
  // fp32 on both sides: only summation order differs (oneDNN vs MKL/OpenBLAS GEMMs, our
  // softmax/LayerNorm loops): ~1e-6 relative per op, growing through 4 blocks and the
  // backward pass. AdamW turns tiny gradient differences into sign-like updates only where
  // |g| ~ eps, so final parameters get a looser bound than the first gradients.
  check_against_golden("fp32", {2e-5, 1e-5, 2e-4, 1e-4, 1e-3});
}

TEST(Golden, AmpBf16IsAsCloseToFp32AsPyTorchAutocast) {
  // bf16 keeps 8 significand bits, and torch's autocast also rounds every matmul OUTPUT to
  // bf16 (ours keeps fp32 outputs, as the issue specifies), so our amp_bf16 and torch's do
  // not agree to a fixed tolerance: both sit at bf16 rounding distance from the exact fp32
  // result. The meaningful bound: our bf16 results must be no further from the fp32
  // reference than torch's bf16 results are (x1.5 + a floor of 2^-8 relative, one bf16 ulp),
  // for features, loss, every gradient and the 10-step loss trajectory.
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
  const double floor = 1.0 / 256;
  auto check = [&](const std::string& what, const float* ours, const std::vector<float>& torch_bf16,
                   const std::vector<float>& exact) {
    const double e_ours = rel_err(ours, exact, 1e-6), e_torch = rel_err(torch_bf16.data(), exact, 1e-6);
    EXPECT_LE(e_ours, 1.5 * e_torch + floor) << what << ": ours " << e_ours << " vs torch bf16 " << e_torch;
  };
  check("image features", img.data(), g16.f("out.image_features"), g32.f("out.image_features"));
  const float lf = float(loss);
  check("loss", &lf, g16.f("out.loss"), g32.f("out.loss"));
  for (auto& p : m.table().params)
    check("gradient of " + p.name, m.grads() + p.offset, g16.f("grad." + p.name), g32.f("grad." + p.name));
  std::printf("[amp_bf16] loss %.6f, torch bf16 %.6f, fp32 %.6f\n", loss, g16.f("out.loss")[0], g32.f("out.loss")[0]);

  load_state_dict(m, with_prefix(g32, "param."), "golden params");
  AdamWCfg ac = default_adamw("ViT");
  ac.lr = 1e-3, ac.wd = 0.1;
  AdamW opt(m.table(), ac);
  ScheduleCfg sc;
  sc.base_lr = 1e-3, sc.warmup = 2, sc.total_steps = 10;
  std::vector<float> traj;
  float* logit_scale = m.params() + m.table().find("logit_scale")->offset;
  for (int s = 0; s < 10; ++s) {
    traj.push_back(float(step.forward_backward(images.data(), tokens.data(), B)));
    opt.step(m.params(), m.grads(), lr_at(sc, s));
    clamp_logit_scale(logit_scale);
  }
  // The trajectory amplifies differences (early AdamW steps are sign-like), so compare the
  // whole curve's distance from fp32 the same way, with a 5% floor.
  const double e_ours = rel_err(traj.data(), g32.f("traj.loss")), e_torch = rel_err(g16.f("traj.loss").data(), g32.f("traj.loss"));
  EXPECT_LE(e_ours, 1.5 * e_torch + 0.05) << "trajectory: ours " << e_ours << " vs torch bf16 " << e_torch;
}

}  // namespace
}  // namespace oc
