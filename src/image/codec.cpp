// Format sniffing and dispatch for codec.h; the formats live in codec_{jpeg,png,webp}.cpp.
#include "image/codec.h"

#include <cctype>

#include <fmt/format.h>

#include <string_view>

#include "core/fs.h"
#include "image/codec_internal.h"

namespace oc {
namespace {

using namespace std::literals;

bool starts_with(std::span<const uint8_t> b, std::string_view magic, size_t at = 0) {
  if (b.size() < at + magic.size()) return false;
  for (size_t i = 0; i < magic.size(); ++i)
    if (b[at + i] != uint8_t(magic[i])) return false;
  return true;
}

// Names formats we recognise but do not decode, so the error says what the file was.
const char* other_format_name(std::span<const uint8_t> b) {
  if (starts_with(b, "GIF87a"sv) || starts_with(b, "GIF89a"sv)) return "GIF";
  if (starts_with(b, "BM"sv)) return "BMP";
  if (starts_with(b, "II*\0"sv) || starts_with(b, "MM\0*"sv)) return "TIFF";
  if (starts_with(b, "\0\0\1\0"sv)) return "ICO";
  if (starts_with(b, "ftyp"sv, 4)) return "ISO-BMFF (HEIF/AVIF)";
  return nullptr;
}

}  // namespace

ImageFormat sniff_format(std::span<const uint8_t> b) {
  if (starts_with(b, "\xFF\xD8\xFF"sv)) return ImageFormat::Jpeg;
  if (starts_with(b, "\x89PNG\r\n\x1A\n"sv)) return ImageFormat::Png;
  if (starts_with(b, "RIFF"sv) && starts_with(b, "WEBP"sv, 8)) return ImageFormat::Webp;
  return ImageFormat::Unknown;
}

Result<SourceImage> decode_source_image(std::span<const uint8_t> bytes, const DecodeOptions& opt) {
  if (bytes.empty()) return Err{"empty image data (0 bytes)"};
  switch (sniff_format(bytes)) {
    case ImageFormat::Jpeg: return detail::decode_jpeg(bytes, opt);
    case ImageFormat::Png: return detail::decode_png(bytes, opt);
    case ImageFormat::Webp: return detail::decode_webp(bytes, opt);
    case ImageFormat::Unknown: break;
  }
  if (const char* name = other_format_name(bytes))
    return Err{fmt::format("unsupported image format {} ({} bytes)", name, bytes.size())};
  std::string head;
  for (size_t i = 0; i < bytes.size() && i < 8; ++i) head += fmt::format("{:02x}", bytes[i]);
  return Err{fmt::format("unrecognised image format (first bytes {}, {} bytes)", head, bytes.size())};
}

Result<SourceImage> decode_source_image_file(const std::string& path, const DecodeOptions& opt) {
  auto bytes = fs::read_file(path);
  if (!bytes) return Err{bytes.error()};
  auto img = decode_source_image(*bytes, opt);
  if (!img) return Err{path + ": " + img.error()};
  return img;
}

Result<ImageU8> decode_image(std::span<const uint8_t> bytes, const DecodeOptions& opt) {
  auto img = decode_source_image(bytes, opt);
  if (!img) return Err{img.error()};
  return to_rgb(std::move(img).value());  // RGB: the pixels move, no copy
}

Result<ImageU8> decode_image_file(const std::string& path, const DecodeOptions& opt) {
  auto img = decode_source_image_file(path, opt);
  if (!img) return Err{img.error()};
  return to_rgb(std::move(img).value());
}

Result<std::vector<uint8_t>> encode_image(const ImageU8& img, ImageFormat fmt, int quality) {
  if (img.width <= 0 || img.height <= 0 || img.rgb.size() != size_t(img.width) * img.height * 3)
    return Err{fmt::format("encode: bad image {}x{} with {} bytes", img.width, img.height, img.rgb.size())};
  if (quality < 1 || quality > 100) return Err{fmt::format("encode: quality {} not in 1..100", quality)};
  switch (fmt) {
    case ImageFormat::Jpeg:
      if (img.width > 65500 || img.height > 65500) return Err{"encode: JPEG is limited to 65500 pixels a side"};
      return detail::encode_jpeg(img, quality);
    case ImageFormat::Png: return detail::encode_png(img);
    case ImageFormat::Webp:
      if (img.width > 16383 || img.height > 16383) return Err{"encode: WebP is limited to 16383 pixels a side"};
      return detail::encode_webp(img, quality);
    case ImageFormat::Unknown: break;
  }
  return Err{"encode: unknown format"};
}

bool has_image_extension(std::string_view name) {
  const size_t d = name.rfind('.');
  if (d == std::string_view::npos) return false;
  std::string e(name.substr(d + 1));
  for (auto& c : e) c = char(std::tolower(static_cast<unsigned char>(c)));
  return e == "jpg" || e == "jpeg" || e == "png" || e == "webp";
}

}  // namespace oc
