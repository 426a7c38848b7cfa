// PNG decode/encode with libpng, matching PIL 9.4's Image.open(f) (PngImagePlugin's
// mode table): 1-bit gray -> 1 (0/255), 2/4/8-bit gray -> L (libpng's expansion scales as
// PIL's L;2/L;4 unpackers), gray+alpha -> LA, palette -> P with PIL's 256-entry palette
// (entries past PLTE are the gray ramp; tRNS is kept by neither: convert('RGB') ignores it),
// RGB -> RGB, RGBA -> RGBA; 16-bit RGB/RGBA/gray+alpha keep the high byte (PIL's "RGB;16B"
// etc.). 16-bit gray, which PIL opens as mode "I" (32-bit), becomes L clipped at 255: that is
// what i2rgb gives, so convert('RGB') matches PIL, but the transforms then resize 8-bit values
// where PIL resizes the 32-bit ones (a documented difference for this rare mode).
// Gamma/ICC chunks are ignored, as PIL ignores them.
// libpng errors longjmp back here; C++ objects all live outside the setjmp region.
#include <png.h>

#include <csetjmp>
#include <cstdio>
#include <cstring>
#include <string>

#include "image/codec_internal.h"

namespace oc::detail {
namespace {

struct PngState {
  const uint8_t* data;
  size_t size, pos;
  char message[256];
};

void on_error(png_structp png, png_const_charp msg) {
  auto* st = static_cast<PngState*>(png_get_error_ptr(png));
  std::snprintf(st->message, sizeof(st->message), "%s", msg);
  png_longjmp(png, 1);
}

void on_warning(png_structp, png_const_charp) {}

void on_read(png_structp png, png_bytep out, size_t n) {
  auto* st = static_cast<PngState*>(png_get_io_ptr(png));
  if (n > st->size - st->pos) {
    std::snprintf(st->message, sizeof(st->message), "file is truncated (needs %zu bytes at offset %zu of %zu)",
                  n, st->pos, st->size);
    png_longjmp(png, 1);
  }
  std::memcpy(out, st->data + st->pos, n);
  st->pos += n;
}

// 16-bit gray (PIL's "I") to L: i2rgb clips at 255, it does not scale.
void gray16_to_l(const uint8_t* s, png_uint_32 w, uint8_t* d) {
  for (png_uint_32 x = 0; x < w; ++x) {
    const unsigned v = (unsigned(s[2 * x]) << 8) | s[2 * x + 1];
    d[x] = uint8_t(v > 255 ? 255 : v);
  }
}

PixelMode png_mode(int color, int depth) {
  switch (color) {
    case PNG_COLOR_TYPE_GRAY: return depth == 1 ? PixelMode::Bit : PixelMode::L;
    case PNG_COLOR_TYPE_GRAY_ALPHA: return PixelMode::LA;
    case PNG_COLOR_TYPE_PALETTE: return PixelMode::P;
    case PNG_COLOR_TYPE_RGB_ALPHA: return PixelMode::RGBA;
    default: return PixelMode::RGB;
  }
}

// Nothing but pixels is read: every ancillary chunk but tRNS (text, ICC, gamma, ...: zTXt,
// iTXt and iCCP are deflated, 7.7 KB can hold 7.9 MB, and 999 zTXt chunks were all inflated
// and kept inside png_read_info, before the pixel limit) is skipped unread, as PIL's
// convert('RGB') ignores them all; any chunk libpng still allocates is capped at 8 MiB, and
// at most 64 unknown chunks are kept.
void limit_chunks(png_structp png) {
  png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, nullptr, -1);
  png_set_chunk_cache_max(png, 64);
  png_set_chunk_malloc_max(png, png_alloc_size_t(8) << 20);
}

}  // namespace

Result<SourceImage> decode_png(std::span<const uint8_t> bytes, const DecodeOptions& opt) {
  SourceImage out;
  std::vector<uint8_t> tmp;
  std::vector<png_bytep> rows;
  std::string error;
  PngState st{bytes.data(), bytes.size(), 0, {0}};
  if (bytes.size() < 8 || png_sig_cmp(bytes.data(), 0, 8) != 0) return Err{"PNG: bad signature"};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
  if (!png) return Err{"PNG: out of memory"};
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return Err{"PNG: out of memory"};
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return Err{"PNG: " + std::string(st.message) + " (at byte " + std::to_string(st.pos) + ")"};
  }
  png_set_read_fn(png, &st, on_read);
  limit_chunks(png);
  png_read_info(png, info);
  png_uint_32 w = 0, h = 0;
  int depth = 0, color = 0, interlace = 0;
  png_get_IHDR(png, info, &w, &h, &depth, &color, &interlace, nullptr, nullptr);
  if (int64_t(w) * int64_t(h) > opt.max_pixels) {
    error = "PNG: " + std::to_string(w) + "x" + std::to_string(h) + " exceeds the pixel limit " +
            std::to_string(opt.max_pixels);
    png_destroy_read_struct(&png, &info, nullptr);
    return Err{error};
  }
  const bool gray16 = color == PNG_COLOR_TYPE_GRAY && depth == 16;
  out.mode = png_mode(color, depth);
  if (color == PNG_COLOR_TYPE_PALETTE) {
    png_colorp plte = nullptr;
    int n = 0;
    if (png_get_PLTE(png, info, &plte, &n) == 0) n = 0;  // libpng has already refused a missing PLTE
    uint8_t rgb[768];
    for (int i = 0; i < n && i < 256; ++i) rgb[3 * i] = plte[i].red, rgb[3 * i + 1] = plte[i].green, rgb[3 * i + 2] = plte[i].blue;
    out.palette = pil_palette(rgb, n < 256 ? n : 256);
    png_set_packing(png);  // 1/2/4-bit indices to one byte each, values kept
  }
  if (color == PNG_COLOR_TYPE_GRAY && depth < 8) png_set_expand_gray_1_2_4_to_8(png);  // 1-bit: 0/255
  if (depth == 16 && !gray16) png_set_strip_16(png);  // keeps the high byte, as PIL
  const int passes = png_set_interlace_handling(png);
  png_read_update_info(png, info);
  const int channels = png_get_channels(png, info);
  const size_t rowbytes = png_get_rowbytes(png, info);
  const int want = mode_channels(out.mode);
  if ((gray16 && rowbytes != size_t(w) * 2) || (!gray16 && (channels != want || rowbytes != size_t(w) * want))) {
    error = "PNG: unexpected row layout (" + std::to_string(channels) + " channels, " + std::to_string(rowbytes) +
            " bytes for " + std::to_string(w) + " pixels)";
    png_destroy_read_struct(&png, &info, nullptr);
    return Err{error};
  }
  out.width = int(w);
  out.height = int(h);
  out.pixels.resize(size_t(w) * h * want);
  rows.resize(h);
  if (!gray16) {  // straight into the output, interlaced or not
    for (png_uint_32 y = 0; y < h; ++y) rows[y] = out.pixels.data() + size_t(y) * w * want;
    png_read_image(png, rows.data());
  } else if (passes == 1) {  // one row at a time: no full-size temporary
    tmp.resize(rowbytes);
    for (png_uint_32 y = 0; y < h; ++y) {
      png_read_row(png, tmp.data(), nullptr);
      gray16_to_l(tmp.data(), w, out.pixels.data() + size_t(y) * w);
    }
  } else {  // Adam7 fills every row over seven passes
    tmp.resize(rowbytes * h);
    for (png_uint_32 y = 0; y < h; ++y) rows[y] = tmp.data() + rowbytes * y;
    png_read_image(png, rows.data());
    for (png_uint_32 y = 0; y < h; ++y) gray16_to_l(rows[y], w, out.pixels.data() + size_t(y) * w);
  }
  png_destroy_read_struct(&png, &info, nullptr);
  return out;
}

namespace {
void on_write(png_structp png, png_bytep data, size_t n) {
  auto* v = static_cast<std::vector<uint8_t>*>(png_get_io_ptr(png));
  v->insert(v->end(), data, data + n);
}
}  // namespace

Result<std::vector<uint8_t>> encode_png(const ImageU8& img) {
  std::vector<uint8_t> result;
  std::vector<png_bytep> rows(size_t(img.height));
  PngState st{nullptr, 0, 0, {0}};
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &st, on_error, on_warning);
  if (!png) return Err{"PNG encode: out of memory"};
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_write_struct(&png, nullptr);
    return Err{"PNG encode: out of memory"};
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    return Err{"PNG encode: " + std::string(st.message)};
  }
  png_set_write_fn(png, &result, on_write, nullptr);
  png_set_compression_level(png, 6);  // PIL's default compress_level
  png_set_IHDR(png, info, png_uint_32(img.width), png_uint_32(img.height), 8, PNG_COLOR_TYPE_RGB,
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  for (int y = 0; y < img.height; ++y) rows[y] = const_cast<uint8_t*>(img.row(y));
  png_write_info(png, info);
  png_write_image(png, rows.data());
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  return result;
}

}  // namespace oc::detail
