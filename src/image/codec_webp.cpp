// WebP decode/encode with libwebp. PIL 9.4 decodes still WebP through WebPAnimDecoder:
// mode RGBA when the file has alpha, else RGB (its "RGBX"). Decoding straight to RGB or
// non-premultiplied RGBA gives the same pixels (checked by the parity tests). Animated WebP
// is rejected: taking its first frame would need libwebpdemux.
#include <webp/decode.h>
#include <webp/encode.h>

#include <string>

#include "image/codec_internal.h"

namespace oc::detail {
namespace {

const char* status_name(VP8StatusCode s) {
  switch (s) {
    case VP8_STATUS_OK: return "ok";
    case VP8_STATUS_OUT_OF_MEMORY: return "out of memory";
    case VP8_STATUS_INVALID_PARAM: return "invalid parameter";
    case VP8_STATUS_BITSTREAM_ERROR: return "bitstream error";
    case VP8_STATUS_UNSUPPORTED_FEATURE: return "unsupported feature";
    case VP8_STATUS_SUSPENDED: return "suspended";
    case VP8_STATUS_USER_ABORT: return "user abort";
    case VP8_STATUS_NOT_ENOUGH_DATA: return "not enough data (truncated)";
  }
  return "unknown error";
}

}  // namespace

Result<SourceImage> decode_webp(std::span<const uint8_t> bytes, const DecodeOptions& opt) {
  WebPDecoderConfig config;
  if (!WebPInitDecoderConfig(&config)) return Err{"WebP: libwebp version mismatch"};
  VP8StatusCode s = WebPGetFeatures(bytes.data(), bytes.size(), &config.input);
  if (s != VP8_STATUS_OK) return Err{std::string("WebP header: ") + status_name(s)};
  const int64_t w = config.input.width, h = config.input.height;
  if (config.input.has_animation) return Err{"WebP: animated images are not supported"};
  if (w <= 0 || h <= 0) return Err{"WebP: empty image"};
  if (w * h > opt.max_pixels) {
    return Err{"WebP: " + std::to_string(w) + "x" + std::to_string(h) + " exceeds the pixel limit " +
               std::to_string(opt.max_pixels)};
  }
  SourceImage out;
  out.mode = config.input.has_alpha ? PixelMode::RGBA : PixelMode::RGB;
  const int c = mode_channels(out.mode);
  out.width = int(w);
  out.height = int(h);
  out.pixels.resize(size_t(w) * h * c);
  config.output.colorspace = c == 4 ? MODE_RGBA : MODE_RGB;
  config.output.is_external_memory = 1;
  config.output.u.RGBA.rgba = out.pixels.data();
  config.output.u.RGBA.stride = out.width * c;
  config.output.u.RGBA.size = out.pixels.size();
  s = WebPDecode(bytes.data(), bytes.size(), &config);
  WebPFreeDecBuffer(&config.output);  // no-op for external memory, kept for symmetry
  if (s != VP8_STATUS_OK) return Err{std::string("WebP: ") + status_name(s)};
  return out;
}

Result<std::vector<uint8_t>> encode_webp(const ImageU8& img, int quality) {
  uint8_t* buf = nullptr;
  size_t n = WebPEncodeRGB(img.rgb.data(), img.width, img.height, img.width * 3, float(quality), &buf);
  if (n == 0 || !buf) return Err{"WebP encode failed (" + std::to_string(img.width) + "x" +
                                 std::to_string(img.height) + ")"};
  std::vector<uint8_t> result(buf, buf + n);
  WebPFree(buf);
  return result;
}

}  // namespace oc::detail
