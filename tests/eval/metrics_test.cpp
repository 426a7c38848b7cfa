// Retrieval and zero-shot metrics on small cases computed by hand.
#include <gtest/gtest.h>

#include <cmath>

#include "eval/metrics.h"

namespace oc {
namespace {

TEST(Retrieval, OneToOneByHand) {
  // 3 images, 3 texts, E=2. Scores I@T^T:
  //   img0 = (1,0): t0=(1,0) 1, t1=(0,1) 0, t2=(.6,.8) .6  -> gt t0 rank 0
  //   img1 = (0,1): t0 0, t1 1, t2 .8                       -> gt t1 rank 0
  //   img2 = (1,0): t0 1, t1 0, t2 .6                        -> gt t2 rank 1 (t0 higher)
  std::vector<float> img = {1, 0, 0, 1, 1, 0};
  std::vector<float> txt = {1, 0, 0, 1, 0.6f, 0.8f};
  std::vector<int64_t> map = {0, 1, 2};
  auto m = retrieval_metrics(img, txt, 3, 3, 2, map, 1.0f, 2);
  EXPECT_DOUBLE_EQ(m["image_to_text_mean_rank"], (1 + 1 + 2) / 3.0);
  EXPECT_DOUBLE_EQ(m["image_to_text_median_rank"], 1);
  EXPECT_DOUBLE_EQ(m["image_to_text_R@1"], 2 / 3.0);
  EXPECT_DOUBLE_EQ(m["image_to_text_R@5"], 1);
  // text_to_image (torch.argsort order; rows of <= 16 sort stably): t0 scores images (1,0,1):
  // gt img0 ties img2 and comes first -> 0; t1: (0,1,0) gt img1 -> 0; t2: (.6,.8,.6) gt img2:
  // img1 higher, img0 ties and comes first -> 2.
  EXPECT_DOUBLE_EQ(m["text_to_image_mean_rank"], 5 / 3.0);
  EXPECT_DOUBLE_EQ(m["text_to_image_R@1"], 2 / 3.0);
  EXPECT_DOUBLE_EQ(m["text_to_image_R@10"], 1);
}

TEST(Retrieval, MultiCaptionUsesBestCaptionAndMedianFloor) {
  // 2 images, 4 captions (2 each), E=1: all scores are products of scalars.
  std::vector<float> img = {1, -1};
  std::vector<float> txt = {0.9f, -0.5f, 0.1f, -0.8f};
  std::vector<int64_t> map = {0, 0, 1, 1};
  auto m = retrieval_metrics(img, txt, 2, 4, 1, map, 1.0f, 1);
  // img0 scores (.9,-.5,.1,-.8): captions 0 (rank 0) and 1 (rank 2): best 0.
  // img1 scores (-.9,.5,-.1,.8): captions 2 (rank 2) and 3 (rank 0): best 0.
  EXPECT_DOUBLE_EQ(m["image_to_text_R@1"], 1.0);
  // text_to_image: c0 (.9,-.9)->img0 rank0; c1 (-.5,.5)->img0 rank1; c2 (.1,-.1)->img1 rank1;
  // c3 (-.8,.8)->img1 rank0. ranks {0,1,1,0}: median (0+1)/2 floored = 0 -> 1.
  EXPECT_DOUBLE_EQ(m["text_to_image_R@1"], 0.5);
  EXPECT_DOUBLE_EQ(m["text_to_image_median_rank"], 1);
  EXPECT_DOUBLE_EQ(m["text_to_image_mean_rank"], 1.5);
}

TEST(TopK, ByHandWithTies) {
  std::vector<float> logits = {0.1f, 0.7f, 0.2f,   // label 1 -> top1
                               0.5f, 0.5f, 0.0f,   // label 1, tie with class 0 -> rank 2
                               0.3f, 0.2f, 0.1f};  // label 2 -> rank 3
  std::vector<int64_t> y = {1, 1, 2};
  EXPECT_DOUBLE_EQ(topk_accuracy(logits, y, 3, 3, 1), 1 / 3.0);
  EXPECT_DOUBLE_EQ(topk_accuracy(logits, y, 3, 3, 2), 2 / 3.0);
  EXPECT_DOUBLE_EQ(topk_accuracy(logits, y, 3, 3, 3), 1.0);
}

}  // namespace
}  // namespace oc
