// Per-format decoders/encoders behind codec.h's dispatch. Each decoder checks the header's
// pixel count against DecodeOptions::max_pixels before allocating and returns Err (never
// aborts) on truncated, corrupt or unsupported input.
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "image/codec.h"

namespace oc::detail {

// Each decoder gives the mode PIL's Image.open gives (see codec.h).
Result<SourceImage> decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& opt);
Result<SourceImage> decode_png(std::span<const uint8_t> bytes, const DecodeOptions& opt);
Result<SourceImage> decode_webp(std::span<const uint8_t> bytes, const DecodeOptions& opt);

Result<std::vector<uint8_t>> encode_jpeg(const ImageU8& img, int quality);
Result<std::vector<uint8_t>> encode_png(const ImageU8& img);
Result<std::vector<uint8_t>> encode_webp(const ImageU8& img, int quality);

// JPEG DCT scaling: the smallest M/8 (M in 1..8) whose output keeps the shortest side >=
// min_shortest_side; 8 (no scaling) when min_shortest_side <= 0 or nothing smaller fits.
int jpeg_scale_eighths(int width, int height, int min_shortest_side);

}  // namespace oc::detail
