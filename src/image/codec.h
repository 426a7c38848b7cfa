// Image decoding (JPEG via libjpeg-turbo incl. grayscale/CMYK, PNG via libpng incl.
// palette/16-bit/alpha, WebP via libwebp) in the mode PIL opens the file in
// (decode_source_image: Image.open(f)) or to RGB (decode_image: Image.open(f).convert('RGB')),
// and encoding (JPEG/PNG/WebP) for the shard writers. Bad input returns an error, never aborts.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "image/image.h"
#include "image/source.h"

namespace oc {

enum class ImageFormat { Unknown, Jpeg, Png, Webp };

ImageFormat sniff_format(std::span<const uint8_t> bytes);
// A file name OpenCLIP/webdataset treat as an image: .jpg .jpeg .png .webp (any case).
bool has_image_extension(std::string_view name);

struct DecodeOptions {
  int64_t max_pixels = 25'000'000;  // as recent OpenCLIP (PIL's MAX_IMAGE_PIXELS-style guard)
  // JPEG only: the decoder may use libjpeg-turbo's DCT scaling to a size no smaller than
  // this shortest side (0 = always full size). Used by the train/eval transforms when the
  // result stays within the parity bound.
  int min_shortest_side = 0;
};

// PIL's modes: PNG 1-bit gray -> 1, 2/4/8-bit gray -> L, gray+alpha -> LA, palette -> P
// (tRNS ignored), RGB -> RGB, RGBA -> RGBA (16-bit keeps the high byte; 16-bit gray, PIL's
// "I", -> L clipped at 255); JPEG gray -> L, YCbCr/RGB -> RGB, CMYK/YCCK -> CMYK (Adobe
// inverted, as PIL); WebP -> RGB or RGBA.
Result<SourceImage> decode_source_image(std::span<const uint8_t> bytes, const DecodeOptions& opt = {});
Result<SourceImage> decode_source_image_file(const std::string& path, const DecodeOptions& opt = {});
// decode_source_image then convert('RGB').
Result<ImageU8> decode_image(std::span<const uint8_t> bytes, const DecodeOptions& opt = {});
Result<ImageU8> decode_image_file(const std::string& path, const DecodeOptions& opt = {});

// quality: JPEG/WebP 1..100; PNG ignores it (compression level 6).
Result<std::vector<uint8_t>> encode_image(const ImageU8& img, ImageFormat fmt, int quality = 95);

}  // namespace oc
