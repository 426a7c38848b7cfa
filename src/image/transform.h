// OpenCLIP's image transforms: eval = resize (shortest side, PIL-style antialiased bicubic)
// + center crop (torchvision rounding) + normalize; train = torchvision RandomResizedCrop
// (seeded, its sampling procedure and fallback) [+ colour jitter, grayscale] + normalize.
// Output CHW float.
// Given a SourceImage the resize and crop happen in its PIL mode, then convert('RGB'), as
// OpenCLIP's transforms on Image.open(f) (CsvDataset, preprocess(Image.open(path))); given
// an ImageU8 the image is already RGB, as after webdataset's decode("pilrgb") or
// torchvision's ImageFolder loader, which convert before the transform.
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <string>

#include "core/result.h"
#include "core/rng.h"
#include "image/color_jitter.h"
#include "image/image.h"
#include "image/source.h"

namespace oc {

enum class Interp { Bicubic, Bilinear };
enum class ResizeMode { Shortest, Longest, Squash };

struct PreprocessCfg {
  int size = 224;
  std::array<float, 3> mean{0.48145466f, 0.4578275f, 0.40821073f};
  std::array<float, 3> std{0.26862954f, 0.26130258f, 0.27577711f};
  Interp interpolation = Interp::Bicubic;
  ResizeMode resize_mode = ResizeMode::Shortest;
  int fill_color = 0;  // for ResizeMode::Longest padding
  // RandomResizedCrop (train): scale and ratio ranges.
  std::array<double, 2> scale{0.9, 1.0};
  std::array<double, 2> ratio{3.0 / 4.0, 4.0 / 3.0};
  ColorAugCfg color;  // --aug-cfg color_jitter / color_jitter_prob / gray_scale_prob (train)
};

// Parses OpenCLIP's --aug-cfg "scale=(0.8,1.0) ratio=(0.75,1.33) color_jitter=(0.4,0.4,0.4,0.1)
// color_jitter_prob=0.8 gray_scale_prob=0.2" into cfg; unknown keys give an error naming them.
// (OpenCLIP 2.24 passes only scale to RandomResizedCrop: its ratio is ignored with a warning
// there; here it is applied.)
Status parse_aug_cfg(const std::string& text, PreprocessCfg* cfg);

// Writes 3*size*size floats (CHW) to out.
void preprocess_eval(const ImageU8& img, const PreprocessCfg& cfg, std::span<float> out);
void preprocess_train(const ImageU8& img, const PreprocessCfg& cfg, Rng& rng, std::span<float> out);
void preprocess_eval(const SourceImage& img, const PreprocessCfg& cfg, std::span<float> out);
void preprocess_train(const SourceImage& img, const PreprocessCfg& cfg, Rng& rng, std::span<float> out);
// The same up to the pixels: writes size*size*3 uint8 (HWC) to hwc; normalize_chw, or the
// backend (ops/pixels.h), turns them into exactly the floats above.
void preprocess_eval(const ImageU8& img, const PreprocessCfg& cfg, std::span<uint8_t> hwc);
void preprocess_train(const ImageU8& img, const PreprocessCfg& cfg, Rng& rng, std::span<uint8_t> hwc);
void preprocess_eval(const SourceImage& img, const PreprocessCfg& cfg, std::span<uint8_t> hwc);
void preprocess_train(const SourceImage& img, const PreprocessCfg& cfg, Rng& rng, std::span<uint8_t> hwc);
// ToTensor + Normalize in float32 as torchvision computes them: HWC uint8 (size x size) ->
// CHW floats, (x / 255 - mean[c]) / std[c].
void normalize_chw(const uint8_t* hwc, int size, const PreprocessCfg& cfg, std::span<float> out);
// The same floats left in HWC order (a channels-last tower's batch, data/loader.h BatchMemory).
void normalize_hwc(const uint8_t* hwc, int size, const PreprocessCfg& cfg, std::span<float> out);

// Building blocks (exposed for tests and for the shard writers' resizing).
ImageU8 resize(const ImageU8& img, int out_w, int out_h, Interp interp);  // PIL-style antialias
ImageU8 crop(const ImageU8& img, int x, int y, int w, int h);
// torchvision RandomResizedCrop.get_params: returns {x, y, w, h}.
std::array<int, 4> random_resized_crop_params(int width, int height, const std::array<double, 2>& scale,
                                              const std::array<double, 2>& ratio, Rng& rng);

}  // namespace oc
