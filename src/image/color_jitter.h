// OpenCLIP 2.24's colour augmentations (--aug-cfg color_jitter=(b,c,s,h) color_jitter_prob=p
// gray_scale_prob=q; transform.py's color_jitter and gray_scale classes) with torchvision's
// semantics on PIL images: ColorJitter applies brightness, contrast, saturation and hue in a
// random order with factors uniform in [max(0, 1-x), 1+x] ([-h, h] for hue; 0 skips one),
// each through Pillow's integer arithmetic (ImageEnhance blends, L = ITU-R 601-2 luma in
// 16-bit fixed point, the RGB<->HSV conversions of Pillow's Convert.c). Grayscale(3)
// replicates that luma. The input is RGB after _convert_to_rgb, HWC uint8, changed in place.
// Only the random draws differ from OpenCLIP's (our Rng, not Python's random and torch's).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>

#include "core/rng.h"

namespace oc {

struct ColorAugCfg {
  std::array<double, 4> jitter{0, 0, 0, 0};  // brightness, contrast, saturation, hue
  double jitter_prob = 0, gray_prob = 0;
  bool active() const { return jitter_prob > 0 || gray_prob > 0; }
};

// torchvision.transforms.functional on a PIL RGB image (factor as PIL's blend takes it).
void adjust_brightness(std::span<uint8_t> rgb, double factor);
void adjust_contrast(std::span<uint8_t> rgb, double factor);
void adjust_saturation(std::span<uint8_t> rgb, double factor);
void adjust_hue(std::span<uint8_t> rgb, double hue_factor);  // hue_factor in [-0.5, 0.5]
void to_grayscale_rgb(std::span<uint8_t> rgb);                  // Grayscale(num_output_channels=3)

// One ColorJitter call with the factors and order given (order: a permutation of 0..3 =
// brightness, contrast, saturation, hue; an empty factor is skipped: torchvision's None, for
// a range of [1, 1] ([0, 0] for hue)).
void color_jitter(std::span<uint8_t> rgb, const std::array<int, 4>& order,
                  const std::array<std::optional<double>, 4>& factors);

// The train transform's colour step: color_jitter with probability jitter_prob (order and
// factors drawn), then grayscale with probability gray_prob.
void random_color_aug(std::span<uint8_t> rgb, const ColorAugCfg& cfg, Rng& rng);

}  // namespace oc
