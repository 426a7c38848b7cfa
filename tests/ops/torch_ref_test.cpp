// The ops against PyTorch itself (tests/reference/ops_ref.py, run once for the suite with
// /usr/bin/python3): LayerNorm, GELU/QuickGELU, nn.MultiheadAttention (in_proj, attention,
// out_proj; causal and not; and as cross attention with 1 and 3 queries over 7 tokens), F.normalize + ClipLoss, and torch.optim.AdamW. Everything but
// AdamW runs in float64 on both sides, so any disagreement beyond rounding is a semantic
// difference (layout, scale, mask, mean vs sum). The convolution tower's chain (conv ->
// BatchNorm2d in train mode -> ReLU -> AvgPool2d) is checked the same way, channels-last. Skipped only when python3 or
// torch is missing (ops_ref.py exits with 77 when it cannot import torch).
#include <fmt/format.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>

#include "core/check.h"
#include "ops/cpu/activation.h"
#include "ops/cpu/adamw.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/batchnorm.h"
#include "ops/cpu/conv.h"
#include "ops/cpu/cross_attention.h"
#include "ops/cpu/dwconv.h"
#include "ops/cpu/layernorm.h"
#include "ops/cpu/linear.h"
#include "ops/cpu/loss.h"
#include "ops/cpu/pool.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

constexpr int64_t kLnN = 6, kLnC = 40;
constexpr int64_t kActN = 301;
constexpr int64_t kB = 2, kT = 7, kC = 16, kH = 4;
constexpr int64_t kXattnTq[2] = {1, 3};  // cross attention: queries over kT tokens
constexpr int64_t kClipN = 8, kClipE = 12;
constexpr double kLogitScale = 2.659260036932778;  // ln(1/0.07)
constexpr int64_t kSigM = 6;  // the neighbour's text block (another batch size)
constexpr double kSigScale = 2.302585092994046, kSigBias = -10.0;  // SigLIP init: ln(10), -10
constexpr int64_t kCnN = 2, kCnH = 6, kCnW = 6, kCnC = 3, kCnOC = 4, kCnK = 3;  // the conv chain
constexpr int64_t kDwN = 2, kDwH = 9, kDwW = 8, kDwC = 5, kDwK = 7;             // ConvNeXt's depthwise conv (pad 3)
constexpr int64_t kAdamN = 1000, kAdamSteps = 4;
constexpr float kLr = 1e-3f, kBeta1 = 0.9f, kBeta2 = 0.98f, kEps = 1e-6f, kWd = 0.2f;

uint64_t fnv1a(const std::string& bytes, uint64_t h = 0xcbf29ce484222325ull) {
  for (unsigned char c : bytes) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

template <typename T = double>
std::vector<T> read_bin(const std::string& path, size_t n) {
  std::vector<T> v(n);
  std::ifstream f(path, std::ios::binary);
  f.read(reinterpret_cast<char*>(v.data()), std::streamsize(n * sizeof(T)));
  OC_CHECK(f.good() && f.gcount() == std::streamsize(n * sizeof(T)), "cannot read {} values from {}", n, path);
  return v;
}

// Inputs are a pure function of the case name, so SetUpTestSuite and the tests agree.
std::vector<double> input(const std::string& name, int64_t n, double scale = 1.0) {
  Rng rng(std::hash<std::string>{}(name));
  return randn(rng, n, scale);
}

class TorchRef : public ::testing::Test {
 protected:
  // The inputs, metadata and script text are hashed into the folder name: ctest runs each
  // test in its own process, and all but the first reuse the goldens instead of starting
  // PyTorch again (a process-private folder is renamed into place when complete).
  static void SetUpTestSuite() {
    if (access("/usr/bin/python3", X_OK) != 0) {
      skip_ = "/usr/bin/python3 not available";
      return;
    }
    std::vector<std::pair<std::string, std::string>> files;  // name, bytes
    auto put_raw = [&](const std::string& name, const auto& v) {
      files.emplace_back(name, std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(v[0])));
    };
    auto put = [&](const std::string& file, int64_t n, double scale = 1.0) {
      put_raw(file + ".bin", input(file, n, scale));
    };
    put("layernorm.x", kLnN * kLnC, 2.0), put("layernorm.w", kLnC), put("layernorm.b", kLnC);
    put("layernorm.dy", kLnN * kLnC);
    put("act.x", kActN, 3.0), put("act.dy", kActN);
    for (const char* c : {"mha0", "mha1"}) {
      const std::string p = c;
      put(p + ".x", kB * kT * kC), put(p + ".in_w", 3 * kC * kC, 0.3), put(p + ".in_b", 3 * kC, 0.1);
      put(p + ".out_w", kC * kC, 0.3), put(p + ".out_b", kC, 0.1), put(p + ".dy", kB * kT * kC);
    }
    for (int64_t tq : kXattnTq) {
      const std::string p = fmt::format("xattn{}", tq);
      put(p + ".xq", kB * tq * kC), put(p + ".xkv", kB * kT * kC), put(p + ".in_w", 3 * kC * kC, 0.3);
      put(p + ".in_b", 3 * kC, 0.1), put(p + ".out_w", kC * kC, 0.3), put(p + ".out_b", kC, 0.1);
      put(p + ".dy", kB * tq * kC);
    }
    put("clip.img", kClipN * kClipE), put("clip.txt", kClipN * kClipE);
    put("siglip.img", kClipN * kClipE), put("siglip.txt", kClipN * kClipE), put("siglip.txt2", kSigM * kClipE);
    put("convnet.x", kCnN * kCnH * kCnW * kCnC), put("convnet.w", kCnOC * kCnC * kCnK * kCnK, 0.3);
    put("convnet.bn_w", kCnOC), put("convnet.bn_b", kCnOC), put("convnet.dy", kCnN * kCnH * kCnW * kCnOC / 4);
    put("dwconv.x", kDwN * kDwH * kDwW * kDwC), put("dwconv.w", kDwC * kDwK * kDwK, 0.3), put("dwconv.b", kDwC);
    put("dwconv.dy", kDwN * kDwH * kDwW * kDwC);
    put_raw("adamw.p.bin", to<float>(input("adamw.p", kAdamN)));
    put_raw("adamw.g.bin", to<float>(input("adamw.g", kAdamSteps * kAdamN, 0.01)));
    // Hyper-parameters as the exact doubles of the floats our adamw_step receives.
    files.emplace_back(
        "meta.json",
        fmt::format(
            R"({{"cases": ["layernorm", "act", "mha", "xattn", "clip", "siglip", "adamw", "convnet", "dwconv"], "layernorm": {{"N": {}, "C": {}}},
"act": {{"n": {}}}, "mha": {{"B": {}, "T": {}, "C": {}, "H": {}}},
"xattn": {{"B": {}, "Tq": [{}, {}], "Tk": {}, "C": {}, "H": {}}},
"clip": {{"N": {}, "E": {}, "logit_scale": {:.17g}}},
"siglip": {{"N": {}, "M": {}, "E": {}, "logit_scale": {:.17g}, "logit_bias": {:.17g}}},
"adamw": {{"n": {}, "steps": {}, "lr": {:.17g}, "beta1": {:.17g}, "beta2": {:.17g}, "eps": {:.17g}, "wd": {:.17g}}},
"convnet": {{"N": {}, "H": {}, "W": {}, "C": {}, "OC": {}, "K": {}}},
"dwconv": {{"N": {}, "H": {}, "W": {}, "C": {}, "K": {}}}}})",
            kLnN, kLnC, kActN, kB, kT, kC, kH, kB, kXattnTq[0], kXattnTq[1], kT, kC, kH, kClipN, kClipE, kLogitScale,
            kClipN, kSigM, kClipE, kSigScale, kSigBias, kAdamN, kAdamSteps, double(kLr), double(kBeta1), double(kBeta2),
            double(kEps), double(kWd), kCnN, kCnH, kCnW, kCnC, kCnOC, kCnK, kDwN, kDwH, kDwW, kDwC, kDwK));

    const std::string script = std::string(OPENCLIP_TEST_DIR) + "/reference/ops_ref.py";
    std::ifstream sf(script);
    uint64_t h = fnv1a(std::string(std::istreambuf_iterator<char>(sf), {}));
    for (const auto& [name, bytes] : files) h = fnv1a(bytes, fnv1a(name, h));
    final_dir_ = ::testing::TempDir() + fmt::format("ops_torch_ref_{:016x}", h);
    if (std::filesystem::exists(final_dir_ + "/done")) {
      dir_ = final_dir_;
      ran_ = true;
      return;
    }
    dir_ = final_dir_ + fmt::format(".tmp{}", getpid());
    std::filesystem::create_directories(dir_);
    for (const auto& [name, bytes] : files) std::ofstream(dir_ + "/" + name, std::ios::binary) << bytes;
    const int rc = std::system(fmt::format("/usr/bin/python3 {} {} > {}/log.txt 2>&1", script, dir_, dir_).c_str());
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 77) {
      skip_ = "torch is not importable by /usr/bin/python3";
      return;
    }
    ran_ = rc == 0;
    if (!ran_) {
      std::ifstream log(dir_ + "/log.txt");
      log_.assign(std::istreambuf_iterator<char>(log), {});
      return;
    }
    std::ofstream(dir_ + "/done") << "ok\n";
    std::error_code ec;
    std::filesystem::rename(dir_, final_dir_, ec);  // fails if another process got there first
    if (!ec) dir_ = final_dir_;
  }
  static void TearDownTestSuite() {
    std::error_code ec;
    if (!dir_.empty() && dir_ != final_dir_) std::filesystem::remove_all(dir_, ec);
  }
  void SetUp() override {
    if (!skip_.empty()) GTEST_SKIP() << skip_;
    ASSERT_TRUE(ran_) << "ops_ref.py failed:\n" << log_;
  }
  static std::vector<double> golden(const std::string& file, size_t n) {
    return read_bin(dir_ + "/" + file + ".out.bin", n);
  }
  static inline std::string dir_, final_dir_, skip_, log_;
  static inline bool ran_ = false;
};

// float64 on both sides: rounding differences are ~1e-15 relative; 1e-10 leaves room for
// cancellation in sums and still flags any semantic difference (which is O(1e-2) or more).
constexpr double kTol = 1e-10;

TEST_F(TorchRef, LayerNorm) {
  const int64_t N = kLnN, C = kLnC;
  auto x = input("layernorm.x", N * C, 2.0), w = input("layernorm.w", C), b = input("layernorm.b", C),
       dy = input("layernorm.dy", N * C);
  std::vector<double> y(N * C), mean(N), rstd(N), dx(N * C, 0.0), dw(C, 0.0), db(C, 0.0);
  layernorm_forward<double>(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), N, C, 1e-5);
  layernorm_backward<double>(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(), mean.data(),
                             rstd.data(), N, C);
  EXPECT_LE(max_scaled_err(y, golden("layernorm.y", N * C), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dx, golden("layernorm.dx", N * C), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dw, golden("layernorm.dw", C), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(db, golden("layernorm.db", C), kTol, kTol), 1.0);
}

TEST_F(TorchRef, GeluQuickGeluAndGeluTanh) {
  auto x = input("act.x", kActN, 3.0), dy = input("act.dy", kActN);
  for (auto [act, name] :
       {std::pair{Act::Gelu, "gelu"}, std::pair{Act::QuickGelu, "quick"}, std::pair{Act::GeluTanh, "tanh"}}) {
    std::vector<double> y(kActN), dx(kActN);
    act_forward<double>(y.data(), x.data(), kActN, act);
    act_backward<double>(dx.data(), dy.data(), x.data(), kActN, act);
    // torch's 0.5 x (1 + erf(x / sqrt 2)) cancels in the far negative tail (values < 1e-14).
    EXPECT_LE(max_scaled_err(y, golden(std::string("act.") + name, kActN), 1e-14, kTol), 1.0) << name;
    EXPECT_LE(max_scaled_err(dx, golden(std::string("act.") + name + "_dx", kActN), 1e-14, kTol), 1.0) << name;
  }
}

void check_mha(bool causal, const std::function<std::vector<double>(const std::string&, size_t)>& golden) {
  const std::string c = causal ? "mha1" : "mha0";
  const int64_t M = kB * kT, C = kC;
  auto x = input(c + ".x", M * C), in_w = input(c + ".in_w", 3 * C * C, 0.3), in_b = input(c + ".in_b", 3 * C, 0.1),
       out_w = input(c + ".out_w", C * C, 0.3), out_b = input(c + ".out_b", C, 0.1), dy = input(c + ".dy", M * C);
  std::vector<double> qkv(M * 3 * C), a(M * C), att(kB * kH * kT * kT), y(M * C);
  linear_forward<double>(qkv.data(), x.data(), in_w.data(), in_b.data(), M, C, 3 * C);
  attention_forward<double>(a.data(), att.data(), qkv.data(), kB, kT, C, kH, causal);
  linear_forward<double>(y.data(), a.data(), out_w.data(), out_b.data(), M, C, C);
  std::vector<double> da(M * C), d_out_w(C * C, 0.0), d_out_b(C, 0.0), dqkv(M * 3 * C), scratch(att.size()),
      dx(M * C), d_in_w(3 * C * C, 0.0), d_in_b(3 * C, 0.0);
  linear_backward<double>(da.data(), d_out_w.data(), d_out_b.data(), dy.data(), a.data(), out_w.data(), M, C, C);
  attention_backward<double>(dqkv.data(), scratch.data(), da.data(), qkv.data(), att.data(), kB, kT, C, kH, causal);
  linear_backward<double>(dx.data(), d_in_w.data(), d_in_b.data(), dqkv.data(), x.data(), in_w.data(), M, C, 3 * C);
  EXPECT_LE(max_scaled_err(y, golden(c + ".y", M * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(dx, golden(c + ".dx", M * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_in_w, golden(c + ".in_w", 3 * C * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_in_b, golden(c + ".in_b", 3 * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_out_w, golden(c + ".out_w", C * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_out_b, golden(c + ".out_b", C), kTol, kTol), 1.0) << c;
}

TEST_F(TorchRef, MultiheadAttention) { check_mha(false, golden); }
TEST_F(TorchRef, MultiheadAttentionCausal) { check_mha(true, golden); }

// Cross attention inside nn.MultiheadAttention(query, key = value): q from in_proj's rows 0:C,
// k and v from rows C:3C as one fused kv linear (k and v interleaved per row, as timm's kv).
void check_xattn(int64_t Tq, const std::function<std::vector<double>(const std::string&, size_t)>& golden) {
  const std::string c = fmt::format("xattn{}", Tq);
  const int64_t C = kC, Mq = kB * Tq, Mk = kB * kT;
  auto xq = input(c + ".xq", Mq * C), xkv = input(c + ".xkv", Mk * C), in_w = input(c + ".in_w", 3 * C * C, 0.3),
       in_b = input(c + ".in_b", 3 * C, 0.1), out_w = input(c + ".out_w", C * C, 0.3),
       out_b = input(c + ".out_b", C, 0.1), dy = input(c + ".dy", Mq * C);
  const double *wq = in_w.data(), *wkv = wq + C * C, *bq = in_b.data(), *bkv = bq + C;
  std::vector<double> q(Mq * C), kv(Mk * 2 * C), a(Mq * C), att(kB * kH * Tq * kT), y(Mq * C);
  linear_forward<double>(q.data(), xq.data(), wq, bq, Mq, C, C);
  linear_forward<double>(kv.data(), xkv.data(), wkv, bkv, Mk, C, 2 * C);
  cross_attention_forward<double>(a.data(), att.data(), q.data(), kv.data(), kv.data() + C, C, 2 * C, 2 * C, kB, Tq,
                                  kT, C, kH);
  linear_forward<double>(y.data(), a.data(), out_w.data(), out_b.data(), Mq, C, C);
  std::vector<double> da(Mq * C), d_out_w(C * C, 0.0), d_out_b(C, 0.0), dq(Mq * C), dkv(Mk * 2 * C),
      scratch(att.size()), dxq(Mq * C), dxkv(Mk * C), d_in_w(3 * C * C, 0.0), d_in_b(3 * C, 0.0);
  linear_backward<double>(da.data(), d_out_w.data(), d_out_b.data(), dy.data(), a.data(), out_w.data(), Mq, C, C);
  cross_attention_backward<double>(dq.data(), dkv.data(), dkv.data() + C, scratch.data(), da.data(), q.data(),
                                   kv.data(), kv.data() + C, att.data(), C, 2 * C, 2 * C, kB, Tq, kT, C, kH);
  linear_backward<double>(dxq.data(), d_in_w.data(), d_in_b.data(), dq.data(), xq.data(), wq, Mq, C, C);
  linear_backward<double>(dxkv.data(), d_in_w.data() + C * C, d_in_b.data() + C, dkv.data(), xkv.data(), wkv, Mk, C,
                          2 * C);
  EXPECT_LE(max_scaled_err(y, golden(c + ".y", Mq * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(dxq, golden(c + ".dxq", Mq * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(dxkv, golden(c + ".dxkv", Mk * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_in_w, golden(c + ".in_w", 3 * C * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_in_b, golden(c + ".in_b", 3 * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_out_w, golden(c + ".out_w", C * C), kTol, kTol), 1.0) << c;
  EXPECT_LE(max_scaled_err(d_out_b, golden(c + ".out_b", C), kTol, kTol), 1.0) << c;
}

TEST_F(TorchRef, CrossAttentionOneQuery) { check_xattn(kXattnTq[0], golden); }
TEST_F(TorchRef, CrossAttentionThreeQueries) { check_xattn(kXattnTq[1], golden); }

TEST_F(TorchRef, NormalizeAndClipLoss) {
  const int64_t N = kClipN, E = kClipE;
  auto img = input("clip.img", N * E), txt = input("clip.txt", N * E);
  std::vector<double> fi(N * E), ft(N * E), ni(N), nt(N), dfi(N * E), dft(N * E), dfi_all(N * E), dft_all(N * E),
      scratch(2 * N * N), ds = {0.0}, dimg(N * E), dtxt(N * E);
  l2norm_forward<double>(fi.data(), ni.data(), img.data(), N, E);
  l2norm_forward<double>(ft.data(), nt.data(), txt.data(), N, E);
  const double loss = clip_loss_forward_backward<double>(dfi.data(), dft.data(), dfi_all.data(), dft_all.data(),
                                                         ds.data(), scratch.data(), fi.data(), ft.data(), fi.data(),
                                                         ft.data(), std::exp(kLogitScale), N, N, E, 0);
  for (int64_t i = 0; i < N * E; ++i) dfi[i] += dfi_all[i], dft[i] += dft_all[i];
  l2norm_backward<double>(dimg.data(), dfi.data(), fi.data(), ni.data(), N, E);
  l2norm_backward<double>(dtxt.data(), dft.data(), ft.data(), nt.data(), N, E);
  EXPECT_NEAR(loss, golden("clip.loss", 1)[0], kTol * std::abs(loss));
  EXPECT_NEAR(ds[0], golden("clip.dscale", 1)[0], kTol);
  EXPECT_LE(max_scaled_err(dimg, golden("clip.dimg", N * E), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dtxt, golden("clip.dtxt", N * E), kTol, kTol), 1.0);
}

// OpenCLIP's SigLipLoss as rank 0 of two computes it: its own texts with positives plus the
// neighbour's texts negative-only (the term neighbour_exchange adds), over normalized
// features; gradients for the images, both text blocks, logit_scale and logit_bias.
TEST_F(TorchRef, NormalizeAndSigLipLoss) {
  const int64_t N = kClipN, M = kSigM, E = kClipE;
  auto img = input("siglip.img", N * E), txt = input("siglip.txt", N * E), txt2 = input("siglip.txt2", M * E);
  std::vector<double> fi(N * E), ft(N * E), ft2(M * E), ni(N), nt(N), nt2(M), dfi(N * E, 0.0), dft(N * E), dft2(M * E),
      dimg(N * E), dtxt(N * E), dtxt2(M * E), ds = {0.0}, db = {0.0};
  l2norm_forward<double>(fi.data(), ni.data(), img.data(), N, E);
  l2norm_forward<double>(ft.data(), nt.data(), txt.data(), N, E);
  l2norm_forward<double>(ft2.data(), nt2.data(), txt2.data(), M, E);
  double loss = siglip_loss_forward_backward<double>(dfi.data(), dft.data(), ds.data(), db.data(), fi.data(), ft.data(),
                                                     std::exp(kSigScale), kSigBias, N, N, E, true);
  loss += siglip_loss_forward_backward<double>(dfi.data(), dft2.data(), ds.data(), db.data(), fi.data(), ft2.data(),
                                               std::exp(kSigScale), kSigBias, N, M, E, false);
  l2norm_backward<double>(dimg.data(), dfi.data(), fi.data(), ni.data(), N, E);
  l2norm_backward<double>(dtxt.data(), dft.data(), ft.data(), nt.data(), N, E);
  l2norm_backward<double>(dtxt2.data(), dft2.data(), ft2.data(), nt2.data(), M, E);
  EXPECT_NEAR(loss, golden("siglip.loss", 1)[0], kTol * std::abs(loss));
  EXPECT_NEAR(ds[0], golden("siglip.dscale", 1)[0], kTol * (1 + std::abs(ds[0])));
  EXPECT_NEAR(db[0], golden("siglip.dbias", 1)[0], kTol * (1 + std::abs(db[0])));
  EXPECT_LE(max_scaled_err(dimg, golden("siglip.dimg", N * E), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dtxt, golden("siglip.dtxt", N * E), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dtxt2, golden("siglip.dtxt2", M * E), kTol, kTol), 1.0);
}

TEST_F(TorchRef, AdamW) {
  auto p = to<float>(input("adamw.p", kAdamN)), g = to<float>(input("adamw.g", kAdamSteps * kAdamN, 0.01));
  std::vector<float> m(kAdamN, 0.0f), v(kAdamN, 0.0f);
  for (int64_t s = 0; s < kAdamSteps; ++s)
    adamw_step(p.data(), g.data() + s * kAdamN, m.data(), v.data(), kAdamN, kLr, kBeta1, kBeta2, kEps, kWd, s + 1);
  auto tp = read_bin<float>(dir_ + "/adamw.p.out.bin", kAdamN), tm = read_bin<float>(dir_ + "/adamw.m.out.bin", kAdamN),
       tv = read_bin<float>(dir_ + "/adamw.v.out.bin", kAdamN);
  // float32 on both sides with the same operations; where FMAs contract differs, so a few
  // ulp (measured: 1-2). Relative 5e-7 is 4 ulp; m and v are sums that can cancel, so each
  // also gets ~10 ulp of its terms' size absolute (terms ~1e-3 for m, ~1e-5 for v).
  EXPECT_LE(max_scaled_err(p, tp, 1e-9, 5e-7), 1.0);
  EXPECT_LE(max_scaled_err(m, tm, 1e-9, 5e-7), 1.0);
  EXPECT_LE(max_scaled_err(v, tv, 1e-11, 5e-7), 1.0);
}

TEST_F(TorchRef, ConvBatchNormReluAvgPool) {
  const ConvShape s{kCnN, kCnH, kCnW, kCnC, kCnOC, kCnK, 1, kCnK / 2};
  const int64_t R = kCnN * kCnH * kCnW, OC = kCnOC, out = R * OC / 4;
  auto x = input("convnet.x", R * kCnC), w = input("convnet.w", OC * kCnC * kCnK * kCnK, 0.3),
       bw = input("convnet.bn_w", OC), bb = input("convnet.bn_b", OC), dy = input("convnet.dy", out);
  std::vector<double> a(R * OC), b(R * OC), mean(OC), rstd(OC), rm(OC, 0.0), rv(OC, 1.0),
      y(out);  // PyTorch's initial stats
  conv2d_forward<double>(a.data(), x.data(), w.data(), s);
  batchnorm_forward<double>(b.data(), mean.data(), rstd.data(), rm.data(), rv.data(), a.data(), bw.data(), bb.data(), R,
                            OC, 1e-5, 0.1, true);
  relu_forward<double>(b.data(), b.data(), R * OC);
  avg_pool_forward<double>(y.data(), b.data(), kCnN, kCnH, kCnW, OC, 2);
  std::vector<double> db(R * OC), da(R * OC), dx(R * kCnC), dw(w.size(), 0.0), dbw(OC, 0.0), dbb(OC, 0.0);
  avg_pool_backward<double>(db.data(), dy.data(), kCnN, kCnH, kCnW, OC, 2);
  relu_backward<double>(db.data(), db.data(), b.data(), R * OC);
  batchnorm_backward<double>(da.data(), dbw.data(), dbb.data(), db.data(), a.data(), bw.data(), mean.data(),
                             rstd.data(), R, OC, true);
  conv2d_backward_data<double>(dx.data(), da.data(), w.data(), s);
  conv2d_backward_weights<double>(dw.data(), da.data(), x.data(), s);
  EXPECT_LE(max_scaled_err(y, golden("convnet.y", out), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dx, golden("convnet.dx", dx.size()), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dw, golden("convnet.dw", dw.size()), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dbw, golden("convnet.dbn_w", OC), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dbb, golden("convnet.dbn_b", OC), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(rm, golden("convnet.running_mean", OC), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(rv, golden("convnet.running_var", OC), kTol, kTol), 1.0);
}

// F.conv2d(x, w, b, padding=3, groups=C): ConvNeXt's conv_dw, forward and gradients.
TEST_F(TorchRef, DepthwiseConv) {
  const DwConvShape s{kDwN, kDwH, kDwW, kDwC, kDwK, kDwK / 2};
  auto x = input("dwconv.x", s.in_size()), w = input("dwconv.w", s.weight_size(), 0.3), b = input("dwconv.b", kDwC),
       dy = input("dwconv.dy", s.out_size());
  std::vector<double> y(size_t(s.out_size())), dx(x.size()), dw(w.size(), 0.0), db(b.size(), 0.0);
  dwconv2d_forward<double>(y.data(), x.data(), w.data(), b.data(), s);
  dwconv2d_backward_data<double>(dx.data(), dy.data(), w.data(), s);
  dwconv2d_backward_weights<double>(dw.data(), db.data(), dy.data(), x.data(), s);
  EXPECT_LE(max_scaled_err(y, golden("dwconv.y", y.size()), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dx, golden("dwconv.dx", dx.size()), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(dw, golden("dwconv.dw", dw.size()), kTol, kTol), 1.0);
  EXPECT_LE(max_scaled_err(db, golden("dwconv.db", db.size()), kTol, kTol), 1.0);
}

}  // namespace
}  // namespace oc::ops::test
