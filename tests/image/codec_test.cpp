// Codec behaviour without Python: round trips, format sniffing, DCT-scaled decoding sizes,
// and bad input (truncated, corrupt, empty, random, decompression bombs, other formats),
// which must come back as an error with a reason, never a crash.
#include "image/codec.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <vector>

#include "core/rng.h"
#include "image/codec_internal.h"
#include "image/test_images.h"

namespace oc {
namespace {

using testing_images::make_rgb;

std::vector<uint8_t> encode_ok(const ImageU8& img, ImageFormat f, int q = 90) {
  auto r = encode_image(img, f, q);
  EXPECT_TRUE(r.ok()) << r.error();
  return r.ok() ? std::move(r).value() : std::vector<uint8_t>{};
}

double mean_abs_diff(const ImageU8& a, const ImageU8& b) {
  double s = 0;
  for (size_t i = 0; i < a.rgb.size(); ++i) s += std::abs(int(a.rgb[i]) - int(b.rgb[i]));
  return s / a.rgb.size();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(ImageCodec, SniffsFormats) {
  ImageU8 img = make_rgb(9, 7);
  EXPECT_EQ(sniff_format(encode_ok(img, ImageFormat::Jpeg)), ImageFormat::Jpeg);
  EXPECT_EQ(sniff_format(encode_ok(img, ImageFormat::Png)), ImageFormat::Png);
  EXPECT_EQ(sniff_format(encode_ok(img, ImageFormat::Webp)), ImageFormat::Webp);
  std::vector<uint8_t> gif = {'G', 'I', 'F', '8', '9', 'a', 1, 0, 1, 0};
  EXPECT_EQ(sniff_format(gif), ImageFormat::Unknown);
  EXPECT_EQ(sniff_format({}), ImageFormat::Unknown);
}

TEST(ImageCodec, RoundTrips) {
  ImageU8 img = make_rgb(97, 61);
  auto png = decode_image(encode_ok(img, ImageFormat::Png));
  ASSERT_TRUE(png.ok()) << png.error();
  EXPECT_EQ(png->rgb, img.rgb);  // lossless
  // Lossy codecs: per-channel noise (+-20, which 4:2:0 chroma cannot keep) and the 0/255
  // checker are the hard parts; measured mean errors are 7.4 (JPEG q95) and ~5 (WebP q95)
  // with libjpeg-turbo 2.1 / libwebp 1.2; a broken colour path gives tens.
  auto jpg = decode_image(encode_ok(img, ImageFormat::Jpeg, 95));
  ASSERT_TRUE(jpg.ok()) << jpg.error();
  ASSERT_EQ(jpg->width, 97);
  ASSERT_EQ(jpg->height, 61);
  EXPECT_LT(mean_abs_diff(*jpg, img), 11.0);
  auto webp = decode_image(encode_ok(img, ImageFormat::Webp, 95));
  ASSERT_TRUE(webp.ok()) << webp.error();
  EXPECT_LT(mean_abs_diff(*webp, img), 11.0);
  std::printf("[round trip] mean |diff| JPEG q95 %.2f, WebP q95 %.2f\n", mean_abs_diff(*jpg, img), mean_abs_diff(*webp, img));
  // A flat image survives JPEG almost exactly (no chroma drift from 4:2:0).
  ImageU8 flat = make_rgb(16, 16);
  for (size_t i = 0; i < flat.rgb.size(); i += 3) flat.rgb[i] = 200, flat.rgb[i + 1] = 30, flat.rgb[i + 2] = 90;
  auto fj = decode_image(encode_ok(flat, ImageFormat::Jpeg, 95));
  ASSERT_TRUE(fj.ok());
  EXPECT_LT(mean_abs_diff(*fj, flat), 2.0);
}

TEST(ImageCodec, EncodeRejectsBadArguments) {
  ImageU8 empty;
  EXPECT_FALSE(encode_image(empty, ImageFormat::Jpeg).ok());
  ImageU8 img = make_rgb(4, 4);
  EXPECT_FALSE(encode_image(img, ImageFormat::Jpeg, 0).ok());
  EXPECT_FALSE(encode_image(img, ImageFormat::Jpeg, 101).ok());
  EXPECT_FALSE(encode_image(img, ImageFormat::Unknown).ok());
  img.rgb.pop_back();
  EXPECT_FALSE(encode_image(img, ImageFormat::Png).ok());
}

TEST(ImageCodec, DctScaledDecodeKeepsShortestSide) {
  ImageU8 img = make_rgb(640, 480);
  auto bytes = encode_ok(img, ImageFormat::Jpeg);
  DecodeOptions opt;
  opt.min_shortest_side = 224;  // 480 * 4/8 = 240 >= 224, 3/8 gives 180
  auto r = decode_image(bytes, opt);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(r->width, 320);
  EXPECT_EQ(r->height, 240);
  opt.min_shortest_side = 479;  // needs full size
  r = decode_image(bytes, opt);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->width, 640);
  EXPECT_EQ(detail::jpeg_scale_eighths(640, 480, 0), 8);
  EXPECT_EQ(detail::jpeg_scale_eighths(640, 480, 60), 1);
  EXPECT_EQ(detail::jpeg_scale_eighths(641, 481, 61), 1);  // ceil(481/8) = 61 -> 1/8 fits
  EXPECT_EQ(detail::jpeg_scale_eighths(641, 481, 62), 2);
  // PNG ignores the option.
  auto p = decode_image(encode_ok(img, ImageFormat::Png), opt);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->width, 640);
}

TEST(ImageCodec, EmptyRandomAndUnsupportedInputsAreErrors) {
  auto e = decode_image({});
  ASSERT_FALSE(e.ok());
  EXPECT_TRUE(contains(e.error(), "0 bytes")) << e.error();
  std::string gif = "GIF89a\x10\x00\x10\x00\x80\x00\x00";
  auto g = decode_image(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(gif.data()), gif.size()));
  ASSERT_FALSE(g.ok());
  EXPECT_TRUE(contains(g.error(), "GIF")) << g.error();
  std::vector<uint8_t> bmp = {'B', 'M', 0x46, 0, 0, 0, 0, 0, 0, 0, 0x36, 0, 0, 0, 0x28, 0};
  auto b = decode_image(bmp);
  ASSERT_FALSE(b.ok());
  EXPECT_TRUE(contains(b.error(), "BMP")) << b.error();
  // Random bytes, alone and behind each format's magic: errors, never crashes.
  Rng rng(7);
  const std::vector<std::string> magics = {"", "\xFF\xD8\xFF", std::string("\x89PNG\r\n\x1A\n", 8), "RIFF\x20\0\0\0WEBPVP8 "};
  for (int t = 0; t < 400; ++t) {
    const std::string& m = magics[t % magics.size()];
    std::vector<uint8_t> buf(m.begin(), m.end());
    const size_t n = rng.below(600);
    for (size_t i = 0; i < n; ++i) buf.push_back(uint8_t(rng.below(256)));
    auto r = decode_image(buf);
    if (r.ok()) {  // a random stream can be a valid tiny picture only in theory
      EXPECT_GT(r->width, 0);
    } else {
      EXPECT_FALSE(r.error().empty());
    }
  }
}

TEST(ImageCodec, TruncatedFilesAreErrors) {
  ImageU8 img = make_rgb(97, 61);
  for (ImageFormat f : {ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Webp}) {
    auto bytes = encode_ok(img, f);
    const size_t n = bytes.size();
    std::vector<size_t> keep = {1, 2, 3, 5, 8, 12, 16, 30, 60, n / 4, n / 2, 3 * n / 4, n - 40};
    // PIL rejects a JPEG or WebP missing its last byte; for PNG it accepts a missing IEND
    // (12 bytes), and so does libpng as we drive it.
    if (f != ImageFormat::Png) keep.insert(keep.end(), {n - 1, n - 2});
    for (size_t k : keep) {
      auto r = decode_image(std::span<const uint8_t>(bytes.data(), k));
      EXPECT_FALSE(r.ok()) << "format " << int(f) << " kept " << k << " of " << n;
      if (!r.ok()) {
        EXPECT_FALSE(r.error().empty());
      }
    }
    auto whole = decode_image(bytes);
    EXPECT_TRUE(whole.ok()) << whole.error();
  }
  auto png = encode_ok(img, ImageFormat::Png);
  auto no_iend = decode_image(std::span<const uint8_t>(png.data(), png.size() - 12));
  EXPECT_TRUE(no_iend.ok()) << no_iend.error();
}

TEST(ImageCodec, CorruptBytesNeverCrash) {
  ImageU8 img = make_rgb(64, 48);
  Rng rng(11);
  int errors = 0, total = 0;
  for (ImageFormat f : {ImageFormat::Jpeg, ImageFormat::Png, ImageFormat::Webp}) {
    const auto bytes = encode_ok(img, f);
    for (int t = 0; t < 150; ++t) {
      auto b = bytes;
      const int flips = 1 + int(rng.below(8));
      for (int k = 0; k < flips; ++k) b[2 + rng.below(b.size() - 2)] ^= uint8_t(1 + rng.below(255));
      auto r = decode_image(b);
      ++total;
      if (!r.ok()) {
        ++errors;
        EXPECT_FALSE(r.error().empty());
      } else {
        EXPECT_EQ(r->rgb.size(), size_t(r->width) * r->height * 3);
        EXPECT_LE(int64_t(r->width) * r->height, DecodeOptions{}.max_pixels);
      }
    }
  }
  // Most flips hit entropy-coded data that JPEG decodes to garbage without complaint (as
  // PIL does); PNG's CRCs and WebP's checks catch most of theirs.
  EXPECT_GT(errors, total / 5);
}

uint32_t crc32_of(const uint8_t* p, size_t n) {
  uint32_t c = 0xFFFFFFFFu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

void put_be32(std::vector<uint8_t>& v, uint32_t x) {
  for (int s = 24; s >= 0; s -= 8) v.push_back(uint8_t(x >> s));
}

void put_chunk(std::vector<uint8_t>& v, const char* tag, const std::vector<uint8_t>& data) {
  put_be32(v, uint32_t(data.size()));
  const size_t start = v.size();
  v.insert(v.end(), tag, tag + 4);
  v.insert(v.end(), data.begin(), data.end());
  put_be32(v, crc32_of(&v[start], v.size() - start));
}

// VmRSS or VmHWM (peak) of this process in KiB, from /proc/self/status.
long status_kib(const char* field) {
  std::FILE* f = std::fopen("/proc/self/status", "r");
  char line[256];
  long v = -1;
  while (f && std::fgets(line, sizeof line, f))
    if (std::strncmp(line, field, std::strlen(field)) == 0) v = std::atol(line + std::strlen(field) + 1);
  if (f) std::fclose(f);
  return v;
}

// Issue 40, item 11: a 1x1 PNG with 120 zTXt/iCCP chunks of 7.9 MB each (7.7 KB deflated each) made
// libpng inflate them all inside png_read_info (948 MB here, 7.9 GB with the issue's
// 999), before the pixel limit. Ancillary chunks are now skipped unread.
TEST(ImageCodec, PngTextChunksAreSkippedNotInflated) {
  auto small = encode_ok(make_rgb(1, 1), ImageFormat::Png);
  std::vector<uint8_t> zeros(7'900'000, 0), z(compressBound(uLong(zeros.size())));
  uLongf zn = uLongf(z.size());
  ASSERT_EQ(compress2(z.data(), &zn, zeros.data(), uLong(zeros.size()), 9), Z_OK);
  std::vector<uint8_t> text = {'k', 0, 0};  // keyword "k", compression method 0
  text.insert(text.end(), z.begin(), z.begin() + long(zn));
  std::vector<uint8_t> png(small.begin(), small.begin() + 33);  // signature + IHDR
  for (int i = 0; i < 120; ++i) put_chunk(png, i % 2 ? "zTXt" : "iCCP", text);
  png.insert(png.end(), small.begin() + 33, small.end());
  zeros = {};
  // The peak is reset (clear_refs 5) so that it measures this decode alone. Bound: 32 MiB,
  // well over the decoder's own few KB.
  std::FILE* clear = std::fopen("/proc/self/clear_refs", "w");
  const bool reset = clear && std::fputs("5", clear) >= 0 && std::fclose(clear) == 0;
  const long before = status_kib("VmRSS:");
  timespec c0{}, c1{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
  auto img = decode_image(png);
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
  ASSERT_TRUE(img.ok()) << img.error();
  EXPECT_EQ(img->width, 1);
  // This libpng drops each inflated text past its 8 MB chunk limit rather than keeping it, but
  // inflates all of it first: CPU-seconds, not memory, were the cost here (948 MB inflated:
  // 2.0 s of this thread's CPU on a loaded Zen 4, 0.70 s for 40 chunks).
  // Skipped chunks are only CRC-checked: 0.3 s of this thread's CPU is far above that and far
  // below inflating 948 MB, whatever the machine's load (CPU time, not wall time).
  const double cpu = double(c1.tv_sec - c0.tv_sec) + 1e-9 * double(c1.tv_nsec - c0.tv_nsec);
  EXPECT_LT(cpu, 0.3) << "the text chunks were inflated";
  if (!reset) GTEST_SKIP() << "/proc/self/clear_refs cannot reset the peak: the memory bound is not measured";
  EXPECT_LT(status_kib("VmHWM:") - before, 32 * 1024) << "peak RSS grew while decoding";
}

TEST(ImageCodec, DecompressionBombsAreRejectedFromTheHeader) {
  // PNG whose IHDR claims 100000 x 100000 RGB (30 GB) with a valid CRC.
  std::vector<uint8_t> png = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1A, '\n'};
  std::vector<uint8_t> ihdr;
  put_be32(ihdr, 100000);
  put_be32(ihdr, 100000);
  ihdr.insert(ihdr.end(), {8, 2, 0, 0, 0});
  put_chunk(png, "IHDR", ihdr);
  put_chunk(png, "IDAT", {0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01});
  put_chunk(png, "IEND", {});
  auto p = decode_image(png);
  ASSERT_FALSE(p.ok());
  EXPECT_TRUE(contains(p.error(), "pixel limit")) << p.error();

  // JPEG whose SOF claims 60000 x 60000.
  auto jpg = encode_ok(make_rgb(16, 16), ImageFormat::Jpeg);
  bool patched = false;
  for (size_t i = 0; i + 9 < jpg.size(); ++i) {
    if (jpg[i] == 0xFF && jpg[i + 1] == 0xC0) {
      jpg[i + 5] = 0xEA, jpg[i + 6] = 0x60, jpg[i + 7] = 0xEA, jpg[i + 8] = 0x60;
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  auto j = decode_image(jpg);
  ASSERT_FALSE(j.ok());
  EXPECT_TRUE(contains(j.error(), "pixel limit")) << j.error();

  // Lossy WebP whose VP8 frame header claims 16383 x 16383.
  auto webp = encode_ok(make_rgb(16, 16), ImageFormat::Webp);
  patched = false;
  for (size_t i = 0; i + 7 < webp.size(); ++i) {
    if (webp[i] == 0x9d && webp[i + 1] == 0x01 && webp[i + 2] == 0x2a) {
      webp[i + 3] = 0xFF, webp[i + 4] = 0x3F, webp[i + 5] = 0xFF, webp[i + 6] = 0x3F;
      patched = true;
      break;
    }
  }
  ASSERT_TRUE(patched);
  auto w = decode_image(webp);
  ASSERT_FALSE(w.ok());
  EXPECT_TRUE(contains(w.error(), "pixel limit")) << w.error();

  // The limit is configurable and counts pixels exactly.
  auto small = encode_ok(make_rgb(300, 200), ImageFormat::Png);
  DecodeOptions opt;
  opt.max_pixels = 300 * 200 - 1;
  EXPECT_FALSE(decode_image(small, opt).ok());
  opt.max_pixels = 300 * 200;
  EXPECT_TRUE(decode_image(small, opt).ok());
}

TEST(ImageCodec, DecodeFileNamesThePath) {
  auto r = decode_image_file("/nonexistent/oc_image_test.jpg");
  ASSERT_FALSE(r.ok());
  EXPECT_TRUE(contains(r.error(), "/nonexistent/oc_image_test.jpg")) << r.error();
}

}  // namespace
}  // namespace oc
