// The checks of resnet_test.cpp and resnet_long_test.cpp: one ModifiedResNet config against
// OpenCLIP 2.24.0 (tests/reference/resnet_ref.py writes the weights, batch and results).
#pragma once
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <string>
#include <type_traits>
#include <vector>

#include "core/check.h"
#include "core/fs.h"
#include "model/clip.h"
#include "model/config.h"
#include "model/weights.h"
#include "ops/cpu/cpu_backend.h"
#include "ops/host_backend.h"
#include "ops/loss.h"
#include "ops/ref/ref_ops.h"
#include "optim/adamw.h"
#include "step/contrastive_step.h"
#include "test_util.h"

namespace oc::test {

constexpr int64_t kResNetBatch = 4;  // resnet_ref.py's B

template <typename T>
std::vector<T> read_raw_file(const std::string& path) {
  const std::string bytes = fs::read_text(path).value();
  std::vector<T> v(bytes.size() / sizeof(T));
  std::memcpy(v.data(), bytes.data(), v.size() * sizeof(T));
  return v;
}

// The cpu backend with ref's forward convolution (sums in double, each output rounded once):
// the forward activations as close to exact as fp32 storage allows, every backward kernel cpu's.
struct ExactConvForwardKernels {
  template <class A>
  static ops::op_result_t<A> run(const A& a) {
    if constexpr (std::is_same_v<A, ops::Conv2dForwardArgs>)
      return ops::ref::run(a);
    else
      return ops::cpu::run(a);
  }
};
class ExactConvForwardBackend final : public ops::KernelBackend<ExactConvForwardKernels> {
 public:
  std::string_view name() const override { return "cpu, ref conv forward"; }
};

inline std::string resnet_ref(const std::string& args) {
  const std::string dir = fresh_dir("resnet_ref");
  auto r = run(pyref_python() + " " OPENCLIP_TEST_DIR "/reference/resnet_ref.py " + args + " " + dir);
  EXPECT_EQ(r.status, 0) << r.out;
  return dir;
}

// Smallest cosine between matching rows of a and b [n, E], and max |a - b| / max |b|.
inline std::pair<double, double> compare_rows(const std::vector<float>& a, const std::vector<float>& b, int64_t E) {
  double worst_cos = 1, d = 0, m = 0;
  for (size_t r = 0; r * size_t(E) < b.size(); ++r) {
    double ab = 0, aa = 0, bb = 0;
    for (int64_t e = 0; e < E; ++e) {
      const double x = a[r * E + e], y = b[r * E + e];
      ab += x * y, aa += x * x, bb += y * y, d = std::max(d, std::fabs(x - y)), m = std::max(m, std::fabs(y));
    }
    worst_cos = std::min(worst_cos, ab / std::sqrt(aa * bb));
  }
  return {worst_cos, d / m};
}

// Our eval-mode embeddings of the batch in `dir` against image<suffix>.f32 / text<suffix>.f32.
// fp32 against PyTorch's fp32 with other summation orders: cosine >= 0.99999 (the bar)
// and max |diff| 1e-4 of the largest entry, which a wrong layer (O(1)) cannot meet.
inline void expect_embeddings(Clip& m, const std::string& dir, const std::string& suffix) {
  const auto images = read_raw_file<float>(dir + "/images.f32");
  const auto tokens = read_raw_file<int32_t>(dir + "/tokens.i32");
  const int64_t B = kResNetBatch, E = m.cfg().embed_dim;
  ASSERT_EQ(images.size(), size_t(B * 3 * m.cfg().vision.image_size * m.cfg().vision.image_size));
  std::vector<float> img(size_t(B * E)), txt(img.size());
  m.plan_inference(B);
  m.encode_image(images.data(), B, img.data(), /*normalize=*/false);
  m.encode_text(tokens.data(), B, txt.data(), /*normalize=*/false);
  for (auto [ours, file] : {std::pair{&img, "image"}, std::pair{&txt, "text"}}) {
    const auto [cos, rel] = compare_rows(*ours, read_raw_file<float>(dir + "/" + file + suffix + ".f32"), E);
    EXPECT_GE(cos, 0.99999) << file << suffix;
    EXPECT_LT(rel, 1e-4) << file << suffix;
    std::printf("[ %s ] %s%s: min cosine %.9f, max |diff| / max |OpenCLIP| %.3g\n", m.cfg().name.c_str(), file,
                suffix.c_str(), cos, rel);
  }
}

inline void expect_resnet_forward(const std::string& config) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = resnet_ref("forward " + config);
  Clip m(load_model_config(config));
  load_weights(m, dir + "/w.pt");
  expect_embeddings(m, dir, "");
}

// One training forward + contrastive loss + backward of the batch (BatchNorm in train mode).
inline double resnet_loss_and_grads(Clip& m, const std::string& dir) {
  const auto images = read_raw_file<float>(dir + "/images.f32");
  const auto tokens = read_raw_file<int32_t>(dir + "/tokens.i32");
  const int64_t B = kResNetBatch, E = m.cfg().embed_dim;
  ops::Backend& be = m.backend();
  m.plan_training(B);
  m.zero_grads();
  const Clip::Features f = m.forward(images.data(), tokens.data(), B);
  ops::Buffer d = be.alloc_floats(size_t(4 * B * E + 2 * B * B), "resnet test loss");
  float* di = d.f32();
  float *dt = di + B * E, *dia = dt + B * E, *dta = dia + B * E, *scratch = dta + B * E;
  float d_scale = 0;
  const double loss = be.run(ops::ClipLossArgs{.dimg = di,
                                               .dtxt = dt,
                                               .dimg_all = dia,
                                               .dtxt_all = dta,
                                               .dscale_log = {&d_scale},
                                               .scratch = scratch,
                                               .img = f.image,
                                               .txt = f.text,
                                               .img_all = f.image,
                                               .txt_all = f.text,
                                               .scale = std::exp(m.logit_scale()),
                                               .Nl = B,
                                               .Na = B,
                                               .E = E,
                                               .label_offset = 0});
  be.run(ops::AddInplaceArgs{.y = di, .x = dia, .n = B * E});
  be.run(ops::AddInplaceArgs{.y = dt, .x = dta, .n = B * E});
  ops::add_scalar(be, m.g().logit_scale, d_scale);
  m.backward(di, dt);
  return loss;
}

// max |a - b| / max |b|.
inline double rel_err(const std::vector<float>& a, const std::vector<float>& b) {
  double d = 0, m = 0;
  for (size_t i = 0; i < b.size(); ++i) d = std::max(d, double(std::fabs(a[i] - b[i]))), m = std::max(m, double(std::fabs(b[i])));
  return m > 0 ? d / m : d;
}

inline const HostTensor* find_tensor(const NamedTensors& sd, const std::string& name) {
  for (auto& [n, t] : sd)
    if (n == name) return &t;
  return nullptr;
}

// Every gradient against PyTorch's float64 gradient of the same batch and weights, BatchNorm in
// train mode (train_bn) or eval mode (--lock-image-freeze-bn-stats). A ReLU input within fp32
// rounding of 0 may land on the other side, switching that element's gradient between dy and 0
// (in train mode BatchNorm's backward spreads it over the channel), and the attention pool's
// mean token sends nearly the same gradient to every position. Measured on RN50 at batch 4
// (2026-12-02), PyTorch fp32 against fp64: up to 32% off (visual.layer4.1.conv3.weight) in train
// mode, 0.28% in eval mode (resnet_long_test.cpp has the analysis); on the reduced config every
// gradient agrees to 1e-5. So: each parameter PyTorch fp32 gets to 1e-5 of fp64 is within 1e-4
// here, and our worst error is at most twice PyTorch fp32's worst. The loss within 1e-5
// relative (or twice PyTorch fp32's error); in train mode the running statistics after the
// forward within 1e-5 of PyTorch's. exact_conv_forward: the forward convolutions on ref
// (ExactConvForwardBackend), so the ReLU decisions do not depend on the CPU's conv kernels.
// prepare: run on the model before the step; ref_args: more arguments of resnet_ref.py's grad
// (a ConvNeXt's stochastic depth scales).
inline void expect_resnet_gradients(const std::string& config, bool train_bn = true, bool exact_conv_forward = false,
                                    const std::function<void(Clip&)>& prepare = {},
                                    const std::string& ref_args = "") {
  OC_NEED_OPEN_CLIP();
  const std::string dir =
      resnet_ref((train_bn ? "grad " : "grad-evalbn ") + config + (ref_args.empty() ? "" : " " + ref_args));
  static ExactConvForwardBackend exact;
  Clip m(load_model_config(config), exact_conv_forward ? static_cast<ops::Backend&>(exact) : ops::default_backend());
  load_weights(m, dir + "/w.pt");
  if (prepare) prepare(m);
  m.set_freeze_bn_stats(!train_bn);
  const double loss = resnet_loss_and_grads(m, dir);
  const double want32 = std::stod(fs::read_text(dir + "/loss.txt").value());
  const double want = std::stod(fs::read_text(dir + "/loss64.txt").value());
  EXPECT_NEAR(loss, want, std::max(1e-5 * std::fabs(want), 2 * std::fabs(want32 - want)));
  const NamedTensors g32 = read_state_dict(dir + "/grads.pt");
  const NamedTensors g64 = read_state_dict(dir + "/grads64.pt"), after = read_state_dict(dir + "/after.pt");
  double worst = 0, worst_torch = 0;
  std::string worst_name;
  for (const ParamInfo& p : m.table().params) {
    const HostTensor* ref = find_tensor(p.buffer ? after : g64, p.name);
    ASSERT_TRUE(ref) << p.name;
    const std::vector<float> a = param_to_host(m.backend(), p.buffer ? m.params() : m.grads(), p).to_f32();
    const std::vector<float> b = ref->to_f32();
    if (p.buffer) {
      EXPECT_LT(rel_err(a, b), 1e-5) << p.name << " after the forward";
      continue;
    }
    if (p.name == "visual.attnpool.k_proj.bias") {
      // Exactly 0 in exact arithmetic (a key bias adds q.b to every score of a query: softmax
      // cancels it); both sides hold rounding noise, so only its size is checked.
      double ma = 0;
      for (float x : a) ma = std::max(ma, double(std::fabs(x)));
      EXPECT_LT(ma, 1e-6) << p.name;
      continue;
    }
    const double torch_err = rel_err(find_tensor(g32, p.name)->to_f32(), b), err = rel_err(a, b);
    if (torch_err <= 1e-5) {
      EXPECT_LT(err, 1e-4) << p.name << " gradient";
    }
    worst_torch = std::max(worst_torch, torch_err);
    if (err > worst) worst = err, worst_name = p.name;
  }
  EXPECT_LE(worst, std::max(1e-4, 2 * worst_torch)) << worst_name;
  std::printf("[ %s ] %s BatchNorm%s: loss %.9g (OpenCLIP %.9g, fp32 %.9g); worst gradient %s: %.3g of its max "
              "(PyTorch fp32's worst: %.3g)\n",
              m.cfg().name.c_str(), train_bn ? "train" : "eval", exact_conv_forward ? " (ref conv forward)" : "", loss,
              want, want32, worst_name.c_str(), worst, worst_torch);
}

// One loss a line.
inline std::vector<double> read_losses(const std::string& path) {
  std::vector<double> v;
  const std::string text = fs::read_text(path).value();
  for (size_t pos = 0, end; (end = text.find('\n', pos)) != std::string::npos; pos = end + 1)
    v.push_back(std::stod(text.substr(pos, end - pos)));
  return v;
}

// Our losses of `steps` AdamW steps on the batch and weights in `dir` (the optimizer as below).
inline std::vector<double> resnet_train_losses(const std::string& config, const std::string& dir, int steps) {
  Clip m(load_model_config(config));
  load_weights(m, dir + "/w.pt");
  const auto images = read_raw_file<float>(dir + "/images.f32");
  const auto tokens = read_raw_file<int32_t>(dir + "/tokens.i32");
  m.plan_training(kResNetBatch);
  ContrastiveStep step(m, kResNetBatch);
  AdamW opt(m.table(), AdamWCfg{.lr = 1e-4, .beta1 = 0.9, .beta2 = 0.98, .eps = 1e-6, .wd = 0.2}, m.backend());
  std::vector<double> losses;
  for (int s = 0; s < steps; ++s) {
    losses.push_back(step.forward_backward(images.data(), tokens.data(), kResNetBatch));
    opt.step(m.params(), m.grads(), 1e-4);
    clamp_logit_scale(m.backend(), m.params() + m.table().find("logit_scale")->offset);
  }
  return losses;
}

// `steps` AdamW steps on the batch (BatchNorm in train mode: the running statistics move with
// every forward) against OpenCLIP's losses, each within 1e-5 of the first step's loss: on one
// repeated batch of 4 the loss falls toward 0 (2e-3 after 10 steps on the reduced config), where
// a bar relative to the loss itself would judge fp32 rounding noise. OpenCLIP's optimizer
// groups: no decay for ndim < 2, bn, ln, bias, logit_scale (ParamInfo::decay); lr 1e-4,
// betas 0.9 / 0.98, eps 1e-6, wd 0.2; logit_scale clamped to [0, ln 100] after each step.
inline void expect_resnet_training(const std::string& config, int steps) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = resnet_ref(fmt::format("train {} {}", config, steps));
  const std::vector<double> ours = resnet_train_losses(config, dir, steps), want = read_losses(dir + "/losses.txt");
  ASSERT_EQ(want.size(), size_t(steps));
  for (int s = 0; s < steps; ++s) {
    EXPECT_NEAR(ours[s], want[s], 1e-5 * std::fabs(want[0])) << "step " << s;
    std::printf("[ %s ] step %d loss %.9g (OpenCLIP %.9g)\n", load_model_config(config).name.c_str(), s, ours[s],
                want[s]);
  }
}

// The same steps against OpenCLIP in float64 (train-fp64), for the full-size towers, where
// fp32 rounding alone moves the trajectory more than 1e-5 (resnet_long_test.cpp): each of our
// losses within 1e-5 of the first float64 loss, or within twice PyTorch fp32's largest distance
// from the float64 losses over the steps (the bar of the gradients, on the trajectory).
inline void expect_resnet_training_fp64(const std::string& config, int steps) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = resnet_ref(fmt::format("train-fp64 {} {}", config, steps));
  const std::vector<double> ours = resnet_train_losses(config, dir, steps), want32 = read_losses(dir + "/losses.txt");
  const std::vector<double> want = read_losses(dir + "/losses64.txt");
  ASSERT_EQ(want.size(), size_t(steps));
  ASSERT_EQ(want32.size(), size_t(steps));
  const double first = std::fabs(want[0]);
  double worst = 0, worst_torch = 0;
  for (int s = 0; s < steps; ++s) worst_torch = std::max(worst_torch, std::fabs(want32[s] - want[s]) / first);
  const std::string name = load_model_config(config).name;
  for (int s = 0; s < steps; ++s) {
    const double err = std::fabs(ours[s] - want[s]) / first;
    EXPECT_LE(err, std::max(1e-5, 2 * worst_torch)) << "step " << s;
    worst = std::max(worst, err);
    std::printf("[ %s ] step %d loss %.9g (OpenCLIP fp64 %.9g, fp32 %.9g)\n", name.c_str(), s, ours[s], want[s],
                want32[s]);
  }
  std::printf("[ %s ] %d steps: worst |loss - fp64| %.3g of the first loss (PyTorch fp32's: %.3g)\n", name.c_str(),
              steps, worst, worst_torch);
}

// A checkpoint written here (torch format) loads into OpenCLIP and gives our embeddings.
inline void expect_resnet_checkpoint_roundtrip(const std::string& config) {
  OC_NEED_OPEN_CLIP();
  const std::string dir = resnet_ref("forward " + config);
  Clip m(load_model_config(config));
  load_weights(m, dir + "/w.pt");
  const std::string ckpt = dir + "/ours.pt";
  save_weights(m, ckpt);
  auto r =
      run(pyref_python() + " " OPENCLIP_TEST_DIR "/reference/resnet_ref.py load " + config + " " + ckpt + " " + dir);
  ASSERT_EQ(r.status, 0) << r.out;
  expect_embeddings(m, dir, "_loaded");
}

}  // namespace oc::test
