// L2 normalization and the contrastive loss: finite-difference gradients (double), the loss
// value against a direct transcription of OpenCLIP's ClipLoss, and the distributed form.
#include "core/check.h"
#include "ops/cpu/loss.h"
#include "ops/cpu/loss.h"
#include "ops_test_util.h"

namespace oc::ops::test {
namespace {

TEST(GradCheck, L2Norm) {
  Rng rng(21);
  const int64_t N = 4, C = 6;
  auto inp = randn(rng, N * C), R = randn(rng, N * C);
  std::vector<double> out(N * C), norm(N);
  auto loss = [&] {
    l2norm_forward<double>(out.data(), norm.data(), inp.data(), N, C);
    return dot(out, R);
  };
  loss();
  std::vector<double> dinp(N * C);
  l2norm_backward<double>(dinp.data(), R.data(), out.data(), norm.data(), N, C);
  expect_grad("l2norm dinp", inp, dinp, loss);
  for (int64_t i = 0; i < N; ++i) {
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += out[i * C + c] * out[i * C + c];
    EXPECT_NEAR(s, 1.0, 1e-14);
  }
  // A zero row stays zero (the 1e-12 clamp), without NaN.
  std::vector<double> z(C, 0.0), zo(C), zn(1);
  l2norm_forward<double>(zo.data(), zn.data(), z.data(), 1, C);
  for (double v : zo) EXPECT_EQ(v, 0.0);
}

// OpenCLIP ClipLoss, single process, written out directly: (CE(s I T^T) + CE(s T I^T)) / 2.
double naive_clip_loss(const std::vector<double>& img, const std::vector<double>& txt, double s, int64_t N,
                       int64_t E) {
  double total = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const auto& a = pass == 0 ? img : txt;
    const auto& b = pass == 0 ? txt : img;
    for (int64_t r = 0; r < N; ++r) {
      std::vector<double> z(N);
      for (int64_t c = 0; c < N; ++c) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += a[r * E + e] * b[c * E + e];
        z[c] = s * d;
      }
      double m = *std::max_element(z.begin(), z.end()), sum = 0;
      for (double v : z) sum += std::exp(v - m);
      total += m + std::log(sum) - z[r];
    }
  }
  return total / (2.0 * N);
}

TEST(GradCheck, ClipLossSingleProcess) {
  Rng rng(22);
  const int64_t N = 5, E = 4;
  auto img = randn(rng, N * E, 0.5), txt = randn(rng, N * E, 0.5);
  std::vector<double> logit_scale = {std::log(1 / 0.07)};
  std::vector<double> dimg(N * E), dtxt(N * E), dimg_all(N * E), dtxt_all(N * E), scratch(2 * N * N);
  auto loss = [&] {
    std::vector<double> a(N * E), b(N * E), c(N * E), d(N * E), sc(2 * N * N);
    return clip_loss_forward_backward<double>(a.data(), b.data(), c.data(), d.data(), nullptr, sc.data(),
                                              img.data(), txt.data(), img.data(), txt.data(),
                                              std::exp(logit_scale[0]), N, N, E, 0);
  };
  std::vector<double> dscale = {0.5};  // accumulates onto what is there
  const double L = clip_loss_forward_backward<double>(dimg.data(), dtxt.data(), dimg_all.data(), dtxt_all.data(),
                                                      dscale.data(), scratch.data(), img.data(), txt.data(),
                                                      img.data(), txt.data(), std::exp(logit_scale[0]), N, N, E, 0);
  EXPECT_NEAR(L, naive_clip_loss(img, txt, std::exp(logit_scale[0]), N, E), 1e-12);
  // Single process: the rows and the columns are the same tensors, so the gradients add.
  for (int64_t i = 0; i < N * E; ++i) dimg[i] += dimg_all[i], dtxt[i] += dtxt_all[i];
  dscale[0] -= 0.5;
  expect_grad("clip_loss dimg", img, dimg, loss);
  expect_grad("clip_loss dtxt", txt, dtxt, loss);
  expect_grad("clip_loss dscale_log", logit_scale, dscale, loss);
}

TEST(GradCheck, ClipLossLocalRowsAgainstGathered) {
  // One rank of a gathered batch: Nl local rows at label_offset inside Na columns. The local
  // and the gathered tensors are independent inputs here; each gets its own gradient.
  Rng rng(23);
  const int64_t Nl = 3, Na = 7, E = 4, off = 2;
  auto img = randn(rng, Nl * E, 0.5), txt = randn(rng, Nl * E, 0.5);
  auto img_all = randn(rng, Na * E, 0.5), txt_all = randn(rng, Na * E, 0.5);
  std::vector<double> logit_scale = {1.7};
  auto loss = [&] {
    std::vector<double> a(Nl * E), b(Nl * E), c(Na * E), d(Na * E), sc(2 * Nl * Na);
    return clip_loss_forward_backward<double>(a.data(), b.data(), c.data(), d.data(), nullptr, sc.data(),
                                              img.data(), txt.data(), img_all.data(), txt_all.data(),
                                              std::exp(logit_scale[0]), Nl, Na, E, off);
  };
  std::vector<double> dimg(Nl * E), dtxt(Nl * E), dimg_all(Na * E), dtxt_all(Na * E), sc(2 * Nl * Na),
      dscale = {0.0};
  clip_loss_forward_backward<double>(dimg.data(), dtxt.data(), dimg_all.data(), dtxt_all.data(), dscale.data(),
                                     sc.data(), img.data(), txt.data(), img_all.data(), txt_all.data(),
                                     std::exp(logit_scale[0]), Nl, Na, E, off);
  expect_grad("clip_loss local dimg", img, dimg, loss);
  expect_grad("clip_loss local dtxt", txt, dtxt, loss);
  expect_grad("clip_loss dimg_all", img_all, dimg_all, loss);
  expect_grad("clip_loss dtxt_all", txt_all, dtxt_all, loss);
  expect_grad("clip_loss local dscale_log", logit_scale, dscale, loss);

  std::vector<double> bad(2 * Nl * Na);
  EXPECT_THROW(clip_loss_forward_backward<double>(dimg.data(), dtxt.data(), nullptr, nullptr, nullptr, bad.data(),
                                                  img.data(), txt.data(), img_all.data(), txt_all.data(), 2.0, Nl,
                                                  Na, E, Na - 1),
               Error);
}

TEST(ClipLoss, RanksAverageToSingleProcess) {
  // --local-loss --gather-with-grad on 2 ranks of 3 rows: the mean of the rank losses is the
  // single-process loss over the 6 rows, and summing each rank's column gradients onto the
  // owners' rows (the all-gather's backward), adding the local ones and averaging over ranks
  // (DDP) gives the single-process gradient.
  Rng rng(24);
  const int64_t N = 6, E = 5, Nl = 3;
  auto img = randn(rng, N * E, 0.5), txt = randn(rng, N * E, 0.5);
  const double s = 14.0;
  std::vector<double> g_img(N * E), g_txt(N * E), g_img_all(N * E), g_txt_all(N * E), sc(2 * N * N),
      ds_full = {0.0};
  const double full = clip_loss_forward_backward<double>(g_img.data(), g_txt.data(), g_img_all.data(),
                                                         g_txt_all.data(), ds_full.data(), sc.data(), img.data(),
                                                         txt.data(), img.data(), txt.data(), s, N, N, E, 0);
  std::vector<double> dimg(N * E, 0.0), dtxt(N * E, 0.0), ds_ranks = {0.0};
  double sum_loss = 0;
  for (int64_t rank = 0; rank < 2; ++rank) {
    std::vector<double> li(Nl * E), lt(Nl * E), ai(N * E), at(N * E), sc2(2 * Nl * N);
    sum_loss += clip_loss_forward_backward<double>(li.data(), lt.data(), ai.data(), at.data(), ds_ranks.data(),
                                                   sc2.data(), img.data() + rank * Nl * E,
                                                   txt.data() + rank * Nl * E, img.data(), txt.data(), s, Nl, N, E,
                                                   rank * Nl);
    for (int64_t i = 0; i < N * E; ++i) dimg[i] += ai[i] / 2, dtxt[i] += at[i] / 2;
    for (int64_t i = 0; i < Nl * E; ++i) dimg[rank * Nl * E + i] += li[i] / 2, dtxt[rank * Nl * E + i] += lt[i] / 2;
  }
  EXPECT_NEAR(sum_loss / 2, full, 1e-12);
  EXPECT_NEAR(ds_ranks[0] / 2, ds_full[0], 1e-12);
  for (int64_t i = 0; i < N * E; ++i) {
    EXPECT_NEAR(dimg[i], g_img[i] + g_img_all[i], 1e-12);
    EXPECT_NEAR(dtxt[i], g_txt[i] + g_txt_all[i], 1e-12);
  }
}


// SigLIP's sigmoid loss block: finite differences for every input (features, logit_scale,
// logit_bias) in a block with positives and in a negative-only block, and the value against
// a direct transcription of -sum(logsigmoid(labels * logits)) / B. dimg accumulates.
TEST(GradCheck, SigLipLossBlocks) {
  Rng rng(23);
  const int64_t B = 4, M = 5, E = 3;
  auto img = randn(rng, B * E, 0.7), txt = randn(rng, M * E, 0.7);
  std::vector<double> logit_scale = {std::log(10.0)}, bias = {-2.0};
  for (bool positives : {true, false}) {
    auto loss = [&] {
      std::vector<double> a(B * E, 0.0), b(M * E);
      return siglip_loss_forward_backward<double>(a.data(), b.data(), nullptr, nullptr, img.data(), txt.data(),
                                                  std::exp(logit_scale[0]), bias[0], B, M, E, positives);
    };
    double naive = 0;
    for (int64_t i = 0; i < B; ++i)
      for (int64_t j = 0; j < M; ++j) {
        double d = 0;
        for (int64_t e = 0; e < E; ++e) d += img[i * E + e] * txt[j * E + e];
        const double z = (positives && i == j ? 1.0 : -1.0) * (std::exp(logit_scale[0]) * d + bias[0]);
        naive += std::log1p(std::exp(-z));
      }
    std::vector<double> dimg(B * E, 0.25), dtxt(M * E), dscale = {0.5}, dbias = {0.5};
    const double L = siglip_loss_forward_backward<double>(dimg.data(), dtxt.data(), dscale.data(), dbias.data(),
                                                          img.data(), txt.data(), std::exp(logit_scale[0]), bias[0], B,
                                                          M, E, positives);
    EXPECT_NEAR(L, naive / B, 1e-12);  // both in double over 20 terms: rounding ~1e-15
    for (double& x : dimg) x -= 0.25;  // dimg, dscale, dbias accumulate onto what is there
    dscale[0] -= 0.5, dbias[0] -= 0.5;
    const std::string tag = positives ? "siglip (positives)" : "siglip (negative only)";
    expect_grad(tag + " dimg", img, dimg, loss);
    expect_grad(tag + " dtxt", txt, dtxt, loss);
    expect_grad(tag + " dscale_log", logit_scale, dscale, loss);
    expect_grad(tag + " dbias", bias, dbias, loss);
  }
}

}  // namespace
}  // namespace oc::ops::test
