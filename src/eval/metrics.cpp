#include "eval/metrics.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "core/check.h"
#include "eval/torch_sort.h"
#include "ops/staging.h"

namespace oc {

namespace {
// Appends the mean/median rank and recalls of `ranks` (0-based) under `prefix`.
void summarize(std::vector<int64_t> ranks, const std::string& prefix, std::map<std::string, double>* out) {
  const double n = double(ranks.size());
  double sum = 0;
  int64_t r1 = 0, r5 = 0, r10 = 0;
  for (int64_t r : ranks) sum += double(r), r1 += r < 1, r5 += r < 5, r10 += r < 10;
  std::sort(ranks.begin(), ranks.end());
  const size_t h = ranks.size() / 2;
  // np.floor(np.median(ranks)) + 1
  const double median = ranks.size() % 2 ? double(ranks[h]) : std::floor((double(ranks[h - 1]) + double(ranks[h])) / 2);
  (*out)[prefix + "_mean_rank"] = sum / n + 1;
  (*out)[prefix + "_median_rank"] = median + 1;
  (*out)[prefix + "_R@1"] = double(r1) / n;
  (*out)[prefix + "_R@5"] = double(r5) / n;
  (*out)[prefix + "_R@10"] = double(r10) / n;
}
}  // namespace

std::map<std::string, double> retrieval_metrics(std::span<const float> img, std::span<const float> txt, int64_t N,
                                                int64_t M, int64_t E, std::span<const int64_t> text_image,
                                                float logit_scale, int64_t block, ops::Backend& be) {
  OC_CHECK(int64_t(img.size()) == N * E && int64_t(txt.size()) == M * E && int64_t(text_image.size()) == M,
           "retrieval_metrics: sizes do not match N={} M={} E={}", N, M, E);
  for (int64_t m = 0; m < M; ++m)
    OC_CHECK(text_image[size_t(m)] >= 0 && text_image[size_t(m)] < N, "caption {} points to image {} of {}", m,
             text_image[size_t(m)], N);
  std::vector<std::vector<int64_t>> captions(static_cast<size_t>(N));
  for (int64_t m = 0; m < M; ++m) captions[size_t(text_image[size_t(m)])].push_back(m);
  for (int64_t i = 0; i < N; ++i)
    OC_CHECK(!captions[size_t(i)].empty(), "image {} has no caption: retrieval needs at least one per image", i);
  // OpenCLIP's logits: (logit_scale * image_features) @ text_features.t(), the scale applied to
  // the features first. text_to_image ranks columns of the same product (logits_per_image.t()).
  std::vector<float> scaled(img.begin(), img.end());
  for (float& x : scaled) x *= logit_scale;
  std::vector<int64_t> i2t(static_cast<size_t>(N)), t2i(static_cast<size_t>(M));
  std::vector<float> scores(size_t(block * std::max(N, M)));
  // The GEMMs run on `be`; the rankings read each block of logits on the host.
  ops::Staging img_be(be, "retrieval image features"), txt_be(be, "retrieval text features"),
      scores_be(be, "a block of retrieval logits");
  const float* img_d = img_be.upload(scaled);
  const float* txt_d = txt_be.upload(txt);
  auto gemm_abt = [&](int64_t rows, int64_t cols, const float* A, const float* B) {  // scores = A @ B^T
    float* C = scores_be.output({scores.data(), size_t(rows * cols)});
    be.run(ops::GemmArgs{
        .ta = false, .tb = true, .M = rows, .N = cols, .K = E, .alpha = 1.0f, .A = A, .lda = E, .B = B, .ldb = E,
        .beta = 0.0f, .C = C, .ldc = cols});
    scores_be.download();
  };
  // image_to_text: each image's row of logits; with several captions (--val-dedup-images) the
  // best-placed one counts.
  for (int64_t i0 = 0; i0 < N; i0 += block) {
    const int64_t bn = std::min(block, N - i0);
    gemm_abt(bn, M, img_d + i0 * E, txt_d);
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < bn; ++i) {
      std::vector<std::pair<float, int64_t>> scratch;
      const std::span<const float> row(scores.data() + i * M, size_t(M));
      int64_t best = INT64_MAX;
      for (int64_t m : captions[size_t(i0 + i)]) best = std::min(best, torch_argsort_desc_position(row, m, &scratch));
      i2t[size_t(i0 + i)] = best;
    }
  }
  // text_to_image: each caption's column of the same logits, gathered into a row.
  for (int64_t m0 = 0; m0 < M; m0 += block) {
    const int64_t bm = std::min(block, M - m0);
    gemm_abt(N, bm, img_d, txt_d + m0 * E);
#pragma omp parallel for schedule(static)
    for (int64_t m = 0; m < bm; ++m) {
      std::vector<std::pair<float, int64_t>> scratch;
      std::vector<float> column(static_cast<size_t>(N));
      for (int64_t i = 0; i < N; ++i) column[size_t(i)] = scores[size_t(i * bm + m)];
      t2i[size_t(m0 + m)] = torch_argsort_desc_position(column, text_image[size_t(m0 + m)], &scratch);
    }
  }
  std::map<std::string, double> out;
  summarize(std::move(i2t), "image_to_text", &out);
  summarize(std::move(t2i), "text_to_image", &out);
  return out;
}

double topk_accuracy(std::span<const float> logits, std::span<const int64_t> labels, int64_t N, int64_t C, int k) {
  OC_CHECK(int64_t(logits.size()) == N * C && int64_t(labels.size()) == N, "topk_accuracy: sizes do not match");
  if (N == 0) return 0;
  int64_t correct = 0;
  for (int64_t n = 0; n < N; ++n) {
    const float* row = logits.data() + n * C;
    const int64_t y = labels[size_t(n)];
    if (y < 0 || y >= C) continue;
    // Classes ranked before y: strictly larger, or equal with a lower index.
    int64_t before = 0;
    for (int64_t c = 0; c < C; ++c) before += row[c] > row[y] || (row[c] == row[y] && c < y);
    correct += before < k;
  }
  return double(correct) / double(N);
}

}  // namespace oc
