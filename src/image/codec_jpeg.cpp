// JPEG decode/encode with libjpeg-turbo. Decoding follows PIL 9.4 (JpegImagePlugin.py,
// JpegDecode.c) so pixels match Image.open(f) bit for bit with the same libjpeg-turbo:
// default IDCT (islow) and fancy upsampling; 1 component -> L, 3 -> RGB, 4 (CMYK, and YCCK,
// which libjpeg turns into CMYK) -> CMYK read with inverted (Adobe) polarity, PIL's
// "CMYK;I" rawmode, whatever the Adobe marker says. Truncated input is
// an error (PIL raises "image file is truncated"); other libjpeg warnings are ignored as PIL
// ignores them. libjpeg errors longjmp back here; no C++ object with a destructor is
// created between setjmp and a possible longjmp.
#include <algorithm>
#include <csetjmp>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

// jpeglib.h needs size_t and FILE declared first.
#include <jpeglib.h>
#include <jerror.h>

#include "image/codec_internal.h"

namespace oc::detail {
namespace {

// libjpeg-turbo's TurboJPEG API stops at 500 scans; a crafted progressive file can
// otherwise make decoding take minutes.
constexpr int kMaxScans = 500;

struct JpegErr {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
  bool truncated;
};

void on_error(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegErr*>(cinfo->err);
  (*cinfo->err->format_message)(cinfo, e->message);
  longjmp(e->jump, 1);
}

// Warnings (level -1) are ignored except "premature end of file", which jpeg_mem_src
// reports when it runs out of bytes and pads with a fake EOI.
void on_message(j_common_ptr cinfo, int level) {
  auto* e = reinterpret_cast<JpegErr*>(cinfo->err);
  if (level < 0 && cinfo->err->msg_code == JWRN_JPEG_EOF) e->truncated = true;
}

void on_progress(j_common_ptr cinfo) {
  if (!cinfo->is_decompressor) return;
  auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->input_scan_number > kMaxScans) {
    auto* e = reinterpret_cast<JpegErr*>(cinfo->err);
    std::snprintf(e->message, sizeof(e->message), "more than %d scans", kMaxScans);
    longjmp(e->jump, 1);
  }
}

JpegErr* init_err(JpegErr* e) {
  jpeg_std_error(&e->mgr);
  e->mgr.error_exit = on_error;
  e->mgr.emit_message = on_message;
  e->mgr.output_message = [](j_common_ptr) {};
  e->message[0] = 0;
  e->truncated = false;
  return e;
}

}  // namespace

int jpeg_scale_eighths(int width, int height, int min_shortest_side) {
  if (min_shortest_side <= 0) return 8;
  int shortest = width < height ? width : height;
  for (int m = 1; m < 8; ++m) {
    // libjpeg's output size is ceil(size * m / 8) (jdiv_round_up).
    int64_t s = (int64_t(shortest) * m + 7) / 8;
    if (s >= min_shortest_side) return m;
  }
  return 8;
}

Result<SourceImage> decode_jpeg(std::span<const uint8_t> bytes, const DecodeOptions& opt) {
  // Everything with a destructor lives here, before setjmp.
  SourceImage out;
  std::vector<JSAMPROW> rows;
  std::string error;
  jpeg_decompress_struct cinfo;
  JpegErr err;
  jpeg_progress_mgr progress;
  progress.progress_monitor = on_progress;
  cinfo.err = &init_err(&err)->mgr;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return Err{"JPEG: " + std::string(err.message)};
  }
  jpeg_create_decompress(&cinfo);
  cinfo.progress = &progress;
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);

  const int64_t w = cinfo.image_width, h = cinfo.image_height;
  const int nc = cinfo.num_components;
  if (w * h > opt.max_pixels) {
    error = "JPEG: " + std::to_string(w) + "x" + std::to_string(h) + " exceeds the pixel limit " +
            std::to_string(opt.max_pixels);
  } else if (nc != 1 && nc != 3 && nc != 4) {
    error = "JPEG: cannot handle " + std::to_string(nc) + "-component images";  // as PIL
  } else if (err.truncated) {
    error = "JPEG: file is truncated (" + std::to_string(bytes.size()) + " bytes)";
  }
  if (!error.empty()) {
    jpeg_destroy_decompress(&cinfo);
    return Err{error};
  }
  // As PIL: gray stays gray, YCbCr/RGB come out as RGB, CMYK and YCCK as CMYK.
  cinfo.out_color_space = nc == 1 ? JCS_GRAYSCALE : nc == 4 ? JCS_CMYK : JCS_RGB;
  out.mode = nc == 1 ? PixelMode::L : nc == 4 ? PixelMode::CMYK : PixelMode::RGB;
  const int m = jpeg_scale_eighths(int(w), int(h), opt.min_shortest_side);
  if (m < 8) {
    cinfo.scale_num = m;
    cinfo.scale_denom = 8;
  }
  jpeg_start_decompress(&cinfo);
  out.width = int(cinfo.output_width);
  out.height = int(cinfo.output_height);
  const size_t row_bytes = size_t(out.width) * mode_channels(out.mode);
  out.pixels.resize(row_bytes * out.height);
  rows.resize(size_t(out.height));
  for (int y = 0; y < out.height; ++y) rows[y] = out.pixels.data() + row_bytes * y;
  while (cinfo.output_scanline < cinfo.output_height) {
    int y0 = int(cinfo.output_scanline);
    jpeg_read_scanlines(&cinfo, rows.data() + y0, cinfo.output_height - y0);
  }
  if (nc == 4) {  // PIL's "CMYK;I" unpacker: Adobe files store inverted CMYK
    for (uint8_t& v : out.pixels) v = uint8_t(255 - v);
  }
  // Reads on to EOI: PIL rejects a file missing even its last byte, and so do we.
  jpeg_finish_decompress(&cinfo);
  bool truncated = err.truncated;
  jpeg_destroy_decompress(&cinfo);
  if (truncated) return Err{"JPEG: file is truncated (" + std::to_string(bytes.size()) + " bytes)"};
  return out;
}

Result<std::vector<uint8_t>> encode_jpeg(const ImageU8& img, int quality) {
  std::vector<uint8_t> result;
  jpeg_compress_struct cinfo;
  JpegErr err;
  unsigned char* buf = nullptr;
  unsigned long size = 0;
  cinfo.err = &init_err(&err)->mgr;
  if (setjmp(err.jump)) {
    jpeg_destroy_compress(&cinfo);
    std::free(buf);
    return Err{"JPEG encode: " + std::string(err.message)};
  }
  jpeg_create_compress(&cinfo);
  jpeg_mem_dest(&cinfo, &buf, &size);
  cinfo.image_width = JDIMENSION(img.width);
  cinfo.image_height = JDIMENSION(img.height);
  cinfo.input_components = 3;
  cinfo.in_color_space = JCS_RGB;
  jpeg_set_defaults(&cinfo);  // YCbCr 4:2:0, islow DCT: PIL's defaults
  jpeg_set_quality(&cinfo, quality, TRUE);
  jpeg_start_compress(&cinfo, TRUE);
  while (cinfo.next_scanline < cinfo.image_height) {
    JSAMPROW row = const_cast<uint8_t*>(img.row(int(cinfo.next_scanline)));
    jpeg_write_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_compress(&cinfo);
  jpeg_destroy_compress(&cinfo);
  result.assign(buf, buf + size);
  std::free(buf);
  return result;
}

}  // namespace oc::detail
