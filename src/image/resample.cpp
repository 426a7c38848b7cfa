// PIL-exact antialiased resampling of 8-bit images, 1-4 channels (see resample.h). The coefficient maths is
// a transcription of Pillow 9.4 precompute_coeffs/normalize_coeffs_8bpc and must round
// exactly as PIL's C does, so floating-point contraction (FMA) is turned off in this file:
// the build targets x86-64-v3 where GCC would otherwise fuse the filter polynomials. The
// pixel passes are integer (22-bit fixed point) and exact by construction.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "image/resample.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/check.h"

#if defined(__AVX2__)
#include <immintrin.h>
#endif

namespace oc {
namespace {

constexpr int kBits = kResamplePrecisionBits;

double bicubic_filter(double x) {
  const double a = -0.5;
  if (x < 0.0) x = -x;
  if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
  if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
  return 0.0;
}

double bilinear_filter(double x) {
  if (x < 0.0) x = -x;
  if (x < 1.0) return 1.0 - x;
  return 0.0;
}

// PIL's per-output windows for outputs first .. first+count-1: output first+i reads
// xmin[i] .. xmin[i]+xmax[i]-1 with weights k[i*ksize ..].
struct PilCoeffs {
  int ksize = 0;
  std::vector<int> xmin, xmax;
  std::vector<int32_t> k;
};

void pil_coeffs(int in_size, int64_t out_size, int64_t first, int count, Interp interp, PilCoeffs* c) {
  double (*filter)(double) = interp == Interp::Bicubic ? bicubic_filter : bilinear_filter;
  const double filter_support = interp == Interp::Bicubic ? 2.0 : 1.0;
  // PIL gets the box as floats; ours is always (0, in_size).
  const float in0 = 0.0f, in1 = float(in_size);
  const double scale = double(in1 - in0) / out_size;
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = filter_support * filterscale;
  const int ksize = int(std::ceil(support)) * 2 + 1;
  c->ksize = ksize;
  c->xmin.resize(count);
  c->xmax.resize(count);
  c->k.assign(size_t(count) * ksize, 0);
  std::vector<double> kk(ksize);
  for (int i = 0; i < count; ++i) {
    const int64_t xx = first + i;
    const double center = in0 + (xx + 0.5) * scale;
    double ww = 0.0;
    const double ss = 1.0 / filterscale;
    int xmin = int(center - support + 0.5);
    if (xmin < 0) xmin = 0;
    int xmax = int(center + support + 0.5);
    if (xmax > in_size) xmax = in_size;
    xmax -= xmin;
    for (int x = 0; x < xmax; ++x) {
      double w = filter((x + xmin - center + 0.5) * ss);
      kk[x] = w;
      ww += w;
    }
    for (int x = 0; x < xmax; ++x) {
      if (ww != 0.0) kk[x] /= ww;
    }
    int32_t* k = &c->k[size_t(i) * ksize];
    for (int x = 0; x < xmax; ++x)
      k[x] = kk[x] < 0 ? int(-0.5 + kk[x] * (1 << kBits)) : int(0.5 + kk[x] * (1 << kBits));
    c->xmin[i] = xmin;
    c->xmax[i] = xmax;
  }
}

inline uint8_t clip8(int32_t ss) {
  int v = ss >> kBits;
  return uint8_t(v < 0 ? 0 : v > 255 ? 255 : v);
}

// Scratch reused across calls on one thread (the data loader calls this per sample).
struct Scratch {
  AxisCoeffs cx, cy;
  PilCoeffs pil;
  std::vector<uint8_t> row;  // one padded input row
  std::vector<uint8_t> tmp;  // horizontal-pass output rows
  std::vector<int32_t> kx;  // horizontal coefficients as 8-lane vectors: tap pair {k0 x4, k1 x4}
  std::vector<int> hstart;  // horizontal window starts relative to the first needed column
};

Scratch& scratch() {
  thread_local Scratch s;
  return s;
}

void make_coeffs(int in_size, int64_t out_size, int64_t first, int count, Interp interp, PilCoeffs* pil,
                 AxisCoeffs* c) {
  c->in_size = in_size;
  c->out_size = out_size;
  c->first = first;
  c->start.resize(count);
  if (in_size == out_size) {  // PIL skips this pass; one unit tap is the same
    c->taps = 1;
    c->k.assign(count, 1 << kBits);
    for (int i = 0; i < count; ++i) c->start[i] = int(first + i);
    return;
  }
  pil_coeffs(in_size, out_size, first, count, interp, pil);
  int taps = 1;
  for (int i = 0; i < count; ++i) taps = std::max(taps, pil->xmax[i]);
  c->taps = taps;
  c->k.assign(size_t(count) * taps, 0);
  for (int i = 0; i < count; ++i) {
    int s = std::min(pil->xmin[i], in_size - taps);
    c->start[i] = s;
    int off = pil->xmin[i] - s;
    for (int x = 0; x < pil->xmax[i]; ++x) c->k[size_t(i) * taps + off + x] = pil->k[size_t(i) * pil->ksize + x];
  }
}

inline size_t round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

// Scalar horizontal pass over one row for kC channels (the fallback without AVX2, and
// the path for 1- and 2-channel images).
template <int kC>
void hpass_row_scalar(const uint8_t* in, const int* starts, const int32_t* k, int taps, int n, uint8_t* out) {
  for (int o = 0; o < n; ++o, k += taps) {
    const uint8_t* p = in + size_t(starts[o]) * kC;
    int32_t ss[kC];
    for (int c = 0; c < kC; ++c) ss[c] = 1 << (kBits - 1);
    for (int t = 0; t < taps; ++t)
      for (int c = 0; c < kC; ++c) ss[c] += p[kC * t + c] * k[t];
    for (int c = 0; c < kC; ++c) out[size_t(o) * kC + c] = clip8(ss[c]);
  }
}

#if defined(__AVX2__)
// One output pixel of the horizontal pass, unreduced: lanes {even taps: c0..c3 | odd taps:
// c0..c3} (for kC = 3 the fourth lane is 0). kv holds each tap pair's weights as
// {k0 x4, k1 x4}. kPairs > 0 fixes the trip count at compile time so the loop unrolls.
template <int kC, int kPairs>
inline __m256i hpass_acc(const uint8_t* p, const int32_t* kv, int pairs) {
  static_assert(kC == 3 || kC == 4);
  const __m128i shuf = _mm_setr_epi8(0, 1, 2, -1, 3, 4, 5, -1, -1, -1, -1, -1, -1, -1, -1, -1);
  const int np = kPairs > 0 ? kPairs : pairs;
  __m256i acc = _mm256_setzero_si256();
  for (int q = 0; q < np; ++q) {
    __m128i px = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(p + 2 * kC * q));
    if constexpr (kC == 3) px = _mm_shuffle_epi8(px, shuf);
    __m256i v = _mm256_cvtepu8_epi32(px);
    __m256i k = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(kv + 8 * q));
    acc = _mm256_add_epi32(acc, _mm256_mullo_epi32(v, k));
  }
  return acc;
}

// Four outputs per step share the reduction and the store (RGB: 12 bytes + 4 junk bytes,
// which the row padding absorbs; 4 channels: 16 bytes).
template <int kC, int kPairs>
void hpass_row_avx2(const uint8_t* in, const int* starts, const int32_t* kx, int pairs, int n, uint8_t* out) {
  const __m256i bias = _mm256_set1_epi32(1 << (kBits - 1));
  const __m128i compact = _mm_setr_epi8(0, 1, 2, 4, 5, 6, 8, 9, 10, 12, 13, 14, -1, -1, -1, -1);
  const size_t kstep = size_t(pairs) * 8;
  int o = 0;
  for (; o + 4 <= n; o += 4) {
    __m256i a0 = hpass_acc<kC, kPairs>(in + starts[o] * kC, kx + kstep * o, pairs);
    __m256i a1 = hpass_acc<kC, kPairs>(in + starts[o + 1] * kC, kx + kstep * (o + 1), pairs);
    __m256i a2 = hpass_acc<kC, kPairs>(in + starts[o + 2] * kC, kx + kstep * (o + 2), pairs);
    __m256i a3 = hpass_acc<kC, kPairs>(in + starts[o + 3] * kC, kx + kstep * (o + 3), pairs);
    // Fold the even/odd-tap halves: s01 = {pixel o | pixel o+1}, s23 likewise.
    __m256i s01 = _mm256_add_epi32(_mm256_permute2x128_si256(a0, a1, 0x20), _mm256_permute2x128_si256(a0, a1, 0x31));
    __m256i s23 = _mm256_add_epi32(_mm256_permute2x128_si256(a2, a3, 0x20), _mm256_permute2x128_si256(a2, a3, 0x31));
    s01 = _mm256_srai_epi32(_mm256_add_epi32(s01, bias), kBits);
    s23 = _mm256_srai_epi32(_mm256_add_epi32(s23, bias), kBits);
    __m256i p = _mm256_packs_epi32(s01, s23);  // lanes {o, o+2 | o+1, o+3} as int16
    p = _mm256_packus_epi16(p, p);             // saturates to 0..255 like PIL's clip8
    __m128i q = _mm_unpacklo_epi32(_mm256_castsi256_si128(p), _mm256_extracti128_si256(p, 1));
    if constexpr (kC == 3) q = _mm_shuffle_epi8(q, compact);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + size_t(o) * kC), q);
  }
  for (; o < n; ++o) {
    __m256i acc = hpass_acc<kC, kPairs>(in + starts[o] * kC, kx + kstep * o, pairs);
    __m128i sum = _mm_add_epi32(_mm256_castsi256_si128(acc), _mm256_extracti128_si256(acc, 1));
    sum = _mm_srai_epi32(_mm_add_epi32(sum, _mm256_castsi256_si128(bias)), kBits);
    sum = _mm_packus_epi16(_mm_packs_epi32(sum, sum), sum);
    int32_t v = _mm_cvtsi128_si32(sum);
    std::memcpy(out + size_t(o) * kC, &v, 4);  // RGB: the 4th byte is junk the padding absorbs
  }
}

template <int kC>
void hpass_row_avx2_dispatch(const uint8_t* in, const int* starts, const int32_t* kx, int pairs, int n, uint8_t* out) {
  switch (pairs) {
    case 1: return hpass_row_avx2<kC, 1>(in, starts, kx, pairs, n, out);
    case 2: return hpass_row_avx2<kC, 2>(in, starts, kx, pairs, n, out);
    case 3: return hpass_row_avx2<kC, 3>(in, starts, kx, pairs, n, out);
    case 4: return hpass_row_avx2<kC, 4>(in, starts, kx, pairs, n, out);
    case 5: return hpass_row_avx2<kC, 5>(in, starts, kx, pairs, n, out);
    case 6: return hpass_row_avx2<kC, 6>(in, starts, kx, pairs, n, out);
    case 7: return hpass_row_avx2<kC, 7>(in, starts, kx, pairs, n, out);
    case 8: return hpass_row_avx2<kC, 8>(in, starts, kx, pairs, n, out);
    default: return hpass_row_avx2<kC, 0>(in, starts, kx, pairs, n, out);
  }
}
#endif

// Horizontal pass over one row: `in` holds the input pixels from column c0 (padded with
// zeros); writes n outputs of `channels` bytes, whose windows start at in + starts[o] pixels.
void hpass_row(const uint8_t* in, const AxisCoeffs& cx, int n, int channels, const Scratch& s, uint8_t* out) {
  const int taps = cx.taps;
  const int* starts = s.hstart.data();
#if defined(__AVX2__)
  const int pairs = (taps + 1) / 2;
  if (channels == 3) return hpass_row_avx2_dispatch<3>(in, starts, s.kx.data(), pairs, n, out);
  if (channels == 4) return hpass_row_avx2_dispatch<4>(in, starts, s.kx.data(), pairs, n, out);
#endif
  switch (channels) {
    case 1: return hpass_row_scalar<1>(in, starts, cx.k.data(), taps, n, out);
    case 2: return hpass_row_scalar<2>(in, starts, cx.k.data(), taps, n, out);
    case 3: return hpass_row_scalar<3>(in, starts, cx.k.data(), taps, n, out);
    default: return hpass_row_scalar<4>(in, starts, cx.k.data(), taps, n, out);
  }
}

// Vertical pass for one output row: rows[t] are the taps' input rows, `nbytes` wide
// (readable up to round_up(nbytes, 16)).
void vpass_row(const uint8_t* base, size_t stride, const int32_t* k, int taps, size_t nbytes, uint8_t* out) {
#if defined(__AVX2__)
  const __m256i bias = _mm256_set1_epi32(1 << (kBits - 1));
  for (size_t off = 0; off < nbytes; off += 16) {
    __m256i a0 = bias, a1 = bias;
    const uint8_t* p = base + off;
    for (int t = 0; t < taps; ++t, p += stride) {
      __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
      __m256i kk = _mm256_set1_epi32(k[t]);
      a0 = _mm256_add_epi32(a0, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(v), kk));
      a1 = _mm256_add_epi32(a1, _mm256_mullo_epi32(_mm256_cvtepu8_epi32(_mm_srli_si128(v, 8)), kk));
    }
    __m256i p16 = _mm256_packs_epi32(_mm256_srai_epi32(a0, kBits), _mm256_srai_epi32(a1, kBits));
    p16 = _mm256_permute4x64_epi64(p16, 0xD8);
    __m128i r = _mm_packus_epi16(_mm256_castsi256_si128(p16), _mm256_extracti128_si256(p16, 1));
    if (off + 16 <= nbytes) {
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + off), r);
    } else {
      alignas(16) uint8_t tail[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tail), r);
      std::memcpy(out + off, tail, nbytes - off);
    }
  }
#else
  for (size_t i = 0; i < nbytes; ++i) {
    int32_t ss = 1 << (kBits - 1);
    for (int t = 0; t < taps; ++t) ss += base[i + size_t(t) * stride] * k[t];
    out[i] = clip8(ss);
  }
#endif
}

}  // namespace

AxisCoeffs resample_coeffs(int in_size, int64_t out_size, int64_t first, int count, Interp interp) {
  OC_CHECK(in_size > 0 && out_size > 0 && first >= 0 && count > 0 && first + count <= out_size,
           "resample {} -> {} (outputs {}+{})", in_size, out_size, first, count);
  AxisCoeffs c;
  PilCoeffs pil;
  make_coeffs(in_size, out_size, first, count, interp, &pil, &c);
  return c;
}

void resample_window(const PixelView& src, int64_t out_w, int64_t out_h, Interp interp, int64_t wx, int64_t wy,
                     int ww, int wh, uint8_t* dst) {
  OC_CHECK(src.width > 0 && src.height > 0 && out_w > 0 && out_h > 0, "resample {}x{} -> {}x{}", src.width,
           src.height, out_w, out_h);
  OC_CHECK(src.channels >= 1 && src.channels <= 4, "resample: {} channels", src.channels);
  const int C = src.channels;
  OC_CHECK(wx >= 0 && wy >= 0 && ww > 0 && wh > 0 && wx + ww <= out_w && wy + wh <= out_h,
           "window {},{} {}x{} outside {}x{}", wx, wy, ww, wh, out_w, out_h);
  Scratch& s = scratch();
  // Coefficients for the window's outputs only: an extreme aspect ratio can make the full
  // resized image billions of pixels long while the crop is 224 wide.
  make_coeffs(src.width, out_w, wx, ww, interp, &s.pil, &s.cx);
  make_coeffs(src.height, out_h, wy, wh, interp, &s.pil, &s.cy);
  const AxisCoeffs& cx = s.cx;
  const AxisCoeffs& cy = s.cy;

  // Input columns and rows the window needs (window starts are non-decreasing).
  const int c0 = cx.start[0], c1 = cx.start[ww - 1] + cx.taps;
  const int r0 = cy.start[0], r1 = cy.start[wh - 1] + cy.taps;
  const size_t nbytes = size_t(ww) * C;
  const size_t tstride = round_up(nbytes, 16) + 16;
  s.tmp.resize(tstride * size_t(r1 - r0));
  // Room for the 8-byte loads of the last (possibly zero-weight) tap pair.
  s.row.assign(size_t(c1 - c0 + 4) * C, 0);
  s.hstart.resize(ww);
  for (int o = 0; o < ww; ++o) s.hstart[o] = cx.start[o] - c0;

#if defined(__AVX2__)
  const int pairs = (cx.taps + 1) / 2;
  s.kx.resize(size_t(ww) * pairs * 8);
  for (int o = 0; o < ww; ++o) {
    const int32_t* k = &cx.k[size_t(o) * cx.taps];
    for (int q = 0; q < pairs; ++q) {
      int32_t k0 = k[2 * q], k1 = 2 * q + 1 < cx.taps ? k[2 * q + 1] : 0;
      int32_t* d = &s.kx[(size_t(o) * pairs + q) * 8];
      for (int l = 0; l < 4; ++l) d[l] = k0, d[4 + l] = k1;
    }
  }
#endif

  const bool x_identity = src.width == out_w;
  for (int r = r0; r < r1; ++r) {
    const uint8_t* in = src.data + size_t(r) * src.stride + size_t(c0) * C;
    uint8_t* out = s.tmp.data() + size_t(r - r0) * tstride;
    if (x_identity) {
      std::memcpy(out, in, nbytes);
    } else {
      std::memcpy(s.row.data(), in, size_t(c1 - c0) * C);
      hpass_row(s.row.data(), cx, ww, C, s, out);
    }
  }

  const bool y_identity = src.height == out_h;
  for (int y = 0; y < wh; ++y) {
    const uint8_t* base = s.tmp.data() + size_t(cy.start[y] - r0) * tstride;
    uint8_t* out = dst + size_t(y) * nbytes;
    if (y_identity)
      std::memcpy(out, base, nbytes);
    else
      vpass_row(base, tstride, &cy.k[size_t(y) * cy.taps], cy.taps, nbytes, out);
  }
}

void resample_window_reference(const PixelView& src, int out_w, int out_h, Interp interp, int wx, int wy, int ww,
                               int wh, uint8_t* dst) {
  OC_CHECK(src.width > 0 && src.height > 0 && out_w > 0 && out_h > 0, "resample");
  const int C = src.channels;
  // Full PIL resize: horizontal pass over the rows the vertical pass uses, then vertical.
  PilCoeffs ch, cv;
  pil_coeffs(src.height, out_h, 0, out_h, interp, &cv);
  const bool need_h = out_w != src.width, need_v = out_h != src.height;
  const int yfirst = need_v ? cv.xmin[0] : 0;
  const int ylast = need_v ? cv.xmin[out_h - 1] + cv.xmax[out_h - 1] : src.height;
  const int tw = need_h ? out_w : src.width;
  const size_t trow = size_t(tw) * C;
  std::vector<uint8_t> tmp(trow * (ylast - yfirst));
  if (need_h) {
    pil_coeffs(src.width, out_w, 0, out_w, interp, &ch);
    for (int yy = 0; yy < ylast - yfirst; ++yy) {
      const uint8_t* in = src.row(yy + yfirst);
      for (int xx = 0; xx < out_w; ++xx) {
        const int32_t* k = &ch.k[size_t(xx) * ch.ksize];
        for (int c = 0; c < C; ++c) {
          int32_t ss = 1 << (kBits - 1);
          for (int x = 0; x < ch.xmax[xx]; ++x) ss += in[(x + ch.xmin[xx]) * C + c] * k[x];
          tmp[size_t(yy) * trow + size_t(xx) * C + c] = clip8(ss);
        }
      }
    }
  } else {
    for (int yy = 0; yy < ylast - yfirst; ++yy) std::memcpy(&tmp[size_t(yy) * trow], src.row(yy + yfirst), trow);
  }
  std::vector<uint8_t> full(trow * out_h);
  if (need_v) {
    for (int yy = 0; yy < out_h; ++yy) {
      const int32_t* k = &cv.k[size_t(yy) * cv.ksize];
      for (size_t xx = 0; xx < trow; ++xx) {
        int32_t ss = 1 << (kBits - 1);
        for (int y = 0; y < cv.xmax[yy]; ++y) ss += tmp[size_t(y + cv.xmin[yy] - yfirst) * trow + xx] * k[y];
        full[size_t(yy) * trow + xx] = clip8(ss);
      }
    }
  } else {
    full = tmp;
  }
  for (int y = 0; y < wh; ++y)
    std::memcpy(dst + size_t(y) * ww * C, &full[size_t(wy + y) * trow + size_t(wx) * C], size_t(ww) * C);
}

std::vector<int> nearest_index(int in_size, int64_t out_size, int64_t first, int count) {
  OC_CHECK(in_size > 0 && out_size > 0 && first >= 0 && count > 0 && first + count <= out_size,
           "nearest {} -> {} (outputs {}+{})", in_size, out_size, first, count);
  // _imaging.c _resize: a[0] = (double)(box[2] - box[0]) / xsize with a float box (exact
  // for our integer sizes); ImagingScaleAffine: xo = a[2] + a[0] * 0.5, then xo += a[0].
  const double scale = double(float(in_size)) / double(out_size);
  std::vector<int> idx(static_cast<size_t>(count));
  // Replaying PIL's running sum up to `first` costs `first` additions. Beyond 2^24 (an
  // output more than 16M pixels long, e.g. the shortest-side resize of a 1 x 20M image,
  // which PIL could not even allocate) the exact product stands in for the sum.
  constexpr int64_t kMaxReplay = int64_t(1) << 24;
  double xo = 0.0 + scale * 0.5;
  if (first <= kMaxReplay) {
    for (int64_t x = 0; x < first; ++x) xo += scale;
  } else {
    xo = scale * (double(first) + 0.5);
  }
  for (int i = 0; i < count; ++i, xo += scale) {
    const int v = xo < 0.0 ? -1 : int(xo);  // PIL's COORD
    idx[size_t(i)] = std::clamp(v, 0, in_size - 1);  // PIL leaves such pixels unwritten; none occur
  }
  return idx;
}

void nearest_window(const PixelView& src, int64_t out_w, int64_t out_h, int64_t wx, int64_t wy, int ww, int wh,
                    uint8_t* dst) {
  OC_CHECK(src.width > 0 && src.height > 0 && out_w > 0 && out_h > 0, "nearest {}x{} -> {}x{}", src.width,
           src.height, out_w, out_h);
  OC_CHECK(wx >= 0 && wy >= 0 && ww > 0 && wh > 0 && wx + ww <= out_w && wy + wh <= out_h,
           "window {},{} {}x{} outside {}x{}", wx, wy, ww, wh, out_w, out_h);
  const int C = src.channels;
  const std::vector<int> xs = nearest_index(src.width, out_w, wx, ww);
  const std::vector<int> ys = nearest_index(src.height, out_h, wy, wh);
  for (int y = 0; y < wh; ++y) {
    const uint8_t* in = src.row(ys[size_t(y)]);
    uint8_t* out = dst + size_t(y) * ww * C;
    if (C == 1) {
      for (int x = 0; x < ww; ++x) out[x] = in[xs[size_t(x)]];
    } else {
      for (int x = 0; x < ww; ++x) std::memcpy(out + size_t(x) * C, in + size_t(xs[size_t(x)]) * C, size_t(C));
    }
  }
}

}  // namespace oc
