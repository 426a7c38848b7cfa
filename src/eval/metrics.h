// Evaluation metrics as OpenCLIP computes them (train.py get_clip_metrics, zero_shot.py):
// retrieval ranks and recalls, and top-k accuracy. Functions of host feature matrices whose
// similarity GEMMs run on a backend (the model's, --device), in blocks so 5,000 images x
// 25,000 captions run in bounded memory.
#pragma once
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "ops/backend.h"

namespace oc {

// Rows of logits per block of retrieval_metrics: its score buffer is block x max(N, M) floats.
inline constexpr int64_t kRetrievalBlock = 1024;

// Retrieval between N images and M texts (features L2-normalized, [N,E] and [M,E]).
// text_image[m] = index of the image caption m belongs to. 1:1 pairs (M == N,
// text_image[i] == i) give OpenCLIP's get_clip_metrics; with several captions per image
// (--val-dedup-images, ours: flickr30k/COCO have 5), image_to_text ranks the image's
// best-placed caption (CLIP_benchmark's convention) and text_to_image ranks each caption's image.
// Keys: {image_to_text,text_to_image}_{mean_rank,median_rank,R@1,R@5,R@10}. A rank is 1 + the
// ground truth's position in torch.argsort(logits, descending=True) on the CPU, with logits =
// (logit_scale * image_features) @ text_features^T as OpenCLIP computes them: equal scores
// (the copies of an image on a multi-caption CSV) are ordered as torch's sort orders them
// (eval/torch_sort.h), not in the ground truth's favour. The logits are computed on `be`
// (features uploaded once, each block of logits copied back for the ranking: ops/staging.h).
std::map<std::string, double> retrieval_metrics(std::span<const float> image_features,
                                                std::span<const float> text_features, int64_t N, int64_t M, int64_t E,
                                                std::span<const int64_t> text_image, float logit_scale = 1.0f,
                                                int64_t block = kRetrievalBlock,
                                                ops::Backend& be = ops::default_backend());

// OpenCLIP's zero-shot accuracy: logits [N,C]; top-k correct when the label is among the k
// largest (ties broken toward the lower class index, as torch.topk on CPU).
double topk_accuracy(std::span<const float> logits, std::span<const int64_t> labels, int64_t N, int64_t C, int k);

}  // namespace oc
