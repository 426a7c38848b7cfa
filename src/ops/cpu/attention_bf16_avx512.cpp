// amp_bf16 attention on AVX-512, one (batch, head) per call, no library call inside: every
// product (S = q k^T, O = P v, and backward's dP, dV, dQ, dK) is one small register-tiled
// GEMM, C[m][n] = sum_k a(m, k) * b[k][n], on fp32 FMAs over bf16 values widened to fp32 (a
// product of two bf16 values is exact in fp32, so each FMA rounds only the running sum:
// exact products, fp32 accumulation). Tiles of 6 rows x 64 columns (24 zmm accumulators)
// cover ViT-B-32's 50x50x64 and 77x77x64 heads in a few tiles; the scores, softmax and P v of
// one head stay in L1/L2, and the softmax is fp32 and vectorized.
//
// Why FMA and not vdpbf16ps: on the AMX Xeon this was written on, vdpbf16ps (32 multiply-adds)
// issues at a quarter of the rate of a 512-bit FMA (16): measured 1.6 G/s against 6.7 G/s on
// one core, so widened FMAs do twice the work per second. AMX tiles would be faster still for
// the products, but need per-thread tile configuration; the softmax and packing around the
// products already cost about as much as the FMAs here.
//
// Why not oneDNN: a oneDNN matmul per 50x64 head costs more in primitive execution than the
// product itself, and sgemm per head (the fallback in attention.cpp) needs widened copies and
// a separate softmax pass.
//
// Compiled for the baseline ISA: only the functions marked OC_AVX512 use AVX-512, and
// attention.cpp calls them only when cpuid reports AVX-512 F/BW/VL/DQ (run-time dispatch).
#include <immintrin.h>

// GCC 12's AVX-512 intrinsics start some results from _mm512_undefined_*() (`__m512 __Y = __Y;`),
// which -W(maybe-)uninitialized reports at every inlined use: a false positive.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include <algorithm>
#include <cmath>
#include <cstdint>

#include <sys/syscall.h>
#include <unistd.h>

#include "core/machine.h"
#include "ops/cpu/attention_internal.h"
#include "ops/cpu/quantize_static.h"
#include "ops/cpu/scratch.h"
#include "ops/cpu/vec_math.h"

#define OC_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq")))

namespace oc::ops::cpu {
namespace {

constexpr int kMR = 6;  // rows per register tile
constexpr int kNB = 4;  // 16-column blocks per register tile
constexpr int64_t kN = 16;

int64_t up16(int64_t n) { return (n + 15) / 16 * 16; }

// The first n lanes (none when n <= 0).
inline __mmask16 lanes(int64_t n) { return n <= 0 ? 0 : n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }

OC_AVX512 inline __m512 splat(float f) { return _mm512_set1_ps(f); }

// 16 bf16 (the first n; zero past them) widened to fp32 (exact).
OC_AVX512 inline __m512 widen16(const uint16_t* p, int64_t n) {
  const __m512i x = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(lanes(n), p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(x, 16));
}

// The bf16 value of each lane kept in fp32: round to nearest even, NaN kept quiet
// (bf16_convert.h's round_row).
OC_AVX512 inline __m512 round_bf16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x), hi = _mm512_set1_epi32(int(0xffff0000u));
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_and_si512(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), hi);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_and_si512(_mm512_or_si512(u, _mm512_set1_epi32(0x00400000)), hi));
  return _mm512_castsi512_ps(r);
}

// bf16 bits of 16 floats (round to nearest even, NaN quiet).
OC_AVX512 inline __m256i to_bf16_16(__m512 x) {
  return _mm512_cvtepi32_epi16(_mm512_srli_epi32(_mm512_castps_si512(round_bf16(x)), 16));
}

// vec_math.h's exp8 (Cephes expf) on 16 lanes: the same constants (ExpfConst) and steps.
OC_AVX512 inline __m512 exp16(__m512 x) {
  using E = ExpfConst;
  const __mmask16 too_small = _mm512_cmp_ps_mask(x, splat(E::kMin), _CMP_LT_OQ);
  x = _mm512_min_ps(splat(E::kMax), _mm512_max_ps(splat(E::kMin), x));  // operand order keeps NaN
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, splat(E::kLog2e)), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, splat(E::kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, splat(E::kLn2Lo), r);
  __m512 p = splat(E::kPoly[0]);
  for (int i = 1; i < 6; ++i) p = _mm512_fmadd_ps(p, r, splat(E::kPoly[i]));
  __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, splat(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  y = _mm512_mul_ps(y, _mm512_castsi512_ps(e));
  return _mm512_maskz_mov_ps(__mmask16(~too_small), y);
}

// ---- packing: bf16 head columns -> fp32 blocks in thread scratch --------------------------

// dst[r][0..ldd) = float(src[r][0..K)), zero from K to ldd (ldd % 16 == 0).
OC_AVX512 void widen_rows(float* dst, int64_t ldd, const uint16_t* src, int64_t lds, int64_t R, int64_t K) {
  for (int64_t r = 0; r < R; ++r)
    for (int64_t k = 0; k < ldd; k += kN) _mm512_storeu_ps(dst + r * ldd + k, widen16(src + r * lds + k, K - k));
}

// In-register transpose of 16 rows of 16 floats: r[c] becomes column c. Unpack pairs, then
// 4x4 blocks within 128-bit lanes, then the lanes (two 128-bit shuffles).
OC_AVX512 inline void transpose16(__m512 r[16]) {
  __m512 t[16];
#pragma GCC unroll 8
  for (int i = 0; i < 8; ++i) {
    t[2 * i] = _mm512_unpacklo_ps(r[2 * i], r[2 * i + 1]);      // lane: a0 b0 a1 b1
    t[2 * i + 1] = _mm512_unpackhi_ps(r[2 * i], r[2 * i + 1]);  // lane: a2 b2 a3 b3
  }
#pragma GCC unroll 4
  for (int i = 0; i < 4; ++i) {  // r[4i + c]: rows 4i..4i+3 of column 4L + c in lane L
    r[4 * i + 0] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0x44);
    r[4 * i + 1] = _mm512_shuffle_ps(t[4 * i + 0], t[4 * i + 2], 0xee);
    r[4 * i + 2] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0x44);
    r[4 * i + 3] = _mm512_shuffle_ps(t[4 * i + 1], t[4 * i + 3], 0xee);
  }
#pragma GCC unroll 4
  for (int c = 0; c < 4; ++c) {
    t[c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0x88);
    t[4 + c] = _mm512_shuffle_f32x4(r[c], r[4 + c], 0xdd);
    t[8 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0x88);
    t[12 + c] = _mm512_shuffle_f32x4(r[8 + c], r[12 + c], 0xdd);
  }
#pragma GCC unroll 8
  for (int x = 0; x < 8; ++x) {
    r[x] = _mm512_shuffle_f32x4(t[x], t[8 + x], 0x88);
    r[8 + x] = _mm512_shuffle_f32x4(t[x], t[8 + x], 0xdd);
  }
}

// dst[k][r] = float(src[r][k]) for k < K, r < up16(R), zero from R (ldd >= up16(R), % 16 == 0),
// in 16x16 blocks transposed in registers.
OC_AVX512 void widen_transposed(float* dst, int64_t ldd, const uint16_t* src, int64_t lds, int64_t R, int64_t K) {
  for (int64_t r0 = 0; r0 < R; r0 += kN)
    for (int64_t k0 = 0; k0 < K; k0 += kN) {
      __m512 x[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        x[i] = r0 + i < R ? widen16(src + (r0 + i) * lds + k0, K - k0) : _mm512_setzero_ps();
      transpose16(x);
      const int64_t kn = std::min<int64_t>(kN, K - k0);
      for (int64_t c = 0; c < kn; ++c) _mm512_storeu_ps(dst + (k0 + c) * ldd + r0, x[c]);
    }
}

// ---- the register-tiled GEMM ------------------------------------------------------------------

// Where a tile goes: fp32 rows (ld) or bf16 rows; columns >= N are not written.
struct StoreF32 {
  float* c;
  int64_t ld, N;
  OC_AVX512 void operator()(int64_t m, int64_t n, __m512 v) const {
    _mm512_mask_storeu_ps(c + m * ld + n, lanes(N - n), v);
  }
};
struct StoreBF16 {
  uint16_t* c;
  int64_t ld, N;
  OC_AVX512 void operator()(int64_t m, int64_t n, __m512 v) const {
    _mm256_mask_storeu_epi16(c + m * ld + n, lanes(N - n), to_bf16_16(v));
  }
};

// int8 rows for the next GEMM (ops/gemm_int8.h AttentionInt8Args): round(v / scale) clamped
// to +-127 (vcvtps2dq rounds to nearest even, as nearbyint); a non-finite value marks its row's
// scale NaN (rows m of this head; the other heads of the row may mark it too).
struct StoreS8 {
  int8_t* c;
  int64_t ld, N;
  float inv;
  float* scale;
  OC_AVX512 void operator()(int64_t m, int64_t n, __m512 v) const {
    const __mmask16 k = lanes(N - n);
    if (_mm512_mask_fpclass_ps_mask(k, v, 0x99)) mark_row_nan(scale + m);  // QNaN, +Inf, -Inf, SNaN
    __m512 x = _mm512_mul_ps(v, _mm512_set1_ps(inv));
    x = _mm512_min_ps(_mm512_max_ps(x, _mm512_set1_ps(-127.0f)), _mm512_set1_ps(127.0f));
    _mm_mask_storeu_epi8(c + m * ld + n, k, _mm512_cvtsepi32_epi8(_mm512_cvtps_epi32(x)));
  }
};

// The A operand: a(m, k) = a[m * sm + k * sk] (row-major, or transposed with sm = 1).
struct MatA {
  const float* a;
  int64_t sm, sk;
};

template <int MR, int NB, class Store>
OC_AVX512 void tile(MatA A, const float* b, int64_t ldb, int64_t K, int64_t m0, int64_t n0, const Store& st) {
  __m512 acc[MR][NB];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_setzero_ps();
  const float* a = A.a + m0 * A.sm;
  const float* bp = b + n0;
  for (int64_t k = 0; k < K; ++k, a += A.sk, bp += ldb) {
    __m512 bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = _mm512_loadu_ps(bp + j * kN);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512 av = _mm512_set1_ps(a[r * A.sm]);
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_fmadd_ps(av, bv[j], acc[r][j]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) st(m0 + r, n0 + j * kN, acc[r][j]);
}

template <int NB, class Store>
OC_AVX512 void row_tile(int64_t mr, MatA A, const float* b, int64_t ldb, int64_t K, int64_t m0, int64_t n0,
                        const Store& st) {
  switch (mr) {
    case 6: return tile<6, NB>(A, b, ldb, K, m0, n0, st);
    case 5: return tile<5, NB>(A, b, ldb, K, m0, n0, st);
    case 4: return tile<4, NB>(A, b, ldb, K, m0, n0, st);
    case 3: return tile<3, NB>(A, b, ldb, K, m0, n0, st);
    case 2: return tile<2, NB>(A, b, ldb, K, m0, n0, st);
    default: return tile<1, NB>(A, b, ldb, K, m0, n0, st);
  }
}

// C[m][n] = sum_{k < K} a(m, k) b[k][n] for m < M, n < N; b is [K][ldb], ldb >= up16(N), its
// columns past N finite (zero). lower: only columns n <= m are needed (causal scores); whole
// 16-column blocks past them are skipped. Each C element is one FMA chain in k order.
template <class Store>
OC_AVX512 void gemm_tiles(int64_t M, int64_t N, int64_t K, MatA A, const float* b, int64_t ldb, const Store& st,
                          bool lower = false) {
  for (int64_t m0 = 0; m0 < M; m0 += kMR) {
    const int64_t mr = std::min<int64_t>(kMR, M - m0);
    const int64_t n_end = lower ? std::min(N, m0 + mr) : N;
    for (int64_t n0 = 0; n0 < n_end; n0 += kNB * kN) {
      switch (std::min<int64_t>(kNB, (n_end - n0 + kN - 1) / kN)) {
        case 4: row_tile<4>(mr, A, b, ldb, K, m0, n0, st); break;
        case 3: row_tile<3>(mr, A, b, ldb, K, m0, n0, st); break;
        case 2: row_tile<2>(mr, A, b, ldb, K, m0, n0, st); break;
        default: row_tile<1>(mr, A, b, ldb, K, m0, n0, st); break;
      }
    }
  }
}

// ---- softmax ----------------------------------------------------------------------------------

// For the R rows r of row0 (stride lds): softmax(scale * row[0..n_r)), zero past n_r; the
// exponentials are written back into the rows, the probabilities go to out(r, j, p) for the
// 16 columns from j, j < out.width. R rows at once: their reductions are independent chains,
// so the core overlaps them (one row at a time is latency bound).
template <int R, class Out>
OC_AVX512 void softmax_rows(float* row0, int64_t lds, const int64_t* n, float scale, const Out& out) {
  const __m512 ninf = splat(-__builtin_inff()), s = splat(scale);
  int64_t n_max = 0;
  for (int r = 0; r < R; ++r) n_max = std::max(n_max, n[r]);
  __m512 mx[R], sum[R], m[R], inv[R];
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) mx[r] = ninf, sum[r] = _mm512_setzero_ps();
  for (int64_t j = 0; j < n_max; j += kN)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r)
      mx[r] = _mm512_max_ps(mx[r], _mm512_mask_loadu_ps(ninf, lanes(n[r] - j), row0 + r * lds + j));
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) m[r] = splat(_mm512_reduce_max_ps(mx[r]));
  for (int64_t j = 0; j < n_max; j += kN)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __mmask16 k = lanes(n[r] - j);
      float* row = row0 + r * lds;
      const __m512 e =
          _mm512_maskz_mov_ps(k, exp16(_mm512_mul_ps(s, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), m[r]))));
      _mm512_mask_storeu_ps(row + j, k, e);
      sum[r] = _mm512_add_ps(sum[r], e);
    }
#pragma GCC unroll 8
  for (int r = 0; r < R; ++r) inv[r] = splat(1.0f / _mm512_reduce_add_ps(sum[r]));
  for (int64_t j = 0; j < out.width; j += kN)
#pragma GCC unroll 8
    for (int r = 0; r < R; ++r) {
      const __mmask16 k = lanes(n[r] - j);  // zero past n even where inv is NaN (as ref)
      out(r, j, _mm512_maskz_mul_ps(k, _mm512_maskz_loadu_ps(k, row0 + r * lds + j), inv[r]));
    }
}

// The register-tiled kernel's probabilities: fp32 back into the scores' rows (stride T, the
// [T,T] block att or scratch) and their bf16 values, kept in fp32, into pr (stride T).
struct ProbsF32 {
  float *s, *pr;
  int64_t T, width;
  OC_AVX512 void operator()(int r, int64_t j, __m512 p) const {
    const __mmask16 t = lanes(T - j);
    _mm512_mask_storeu_ps(s + r * T + j, t, p);
    _mm512_mask_storeu_ps(pr + r * T + j, t, round_bf16(p));
  }
};

// Softmax of the T rows of S (stride lds; causal: row i keeps columns 0..i), four rows at a
// time; rows(i) is the Out of the rows from i.
template <class Rows>
OC_AVX512 void softmax(float* S, int64_t lds, int64_t T, bool causal, float scale, const Rows& rows) {
  int64_t i = 0;
  for (; i + 4 <= T; i += 4) {
    const int64_t n[4] = {causal ? i + 1 : T, causal ? i + 2 : T, causal ? i + 3 : T, causal ? i + 4 : T};
    softmax_rows<4>(S + i * lds, lds, n, scale, rows(i));
  }
  for (; i < T; ++i) {
    const int64_t n = causal ? i + 1 : T;
    softmax_rows<1>(S + i * lds, lds, &n, scale, rows(i));
  }
}

// dsr[0..T) = the bf16 values of scale * p * (dp - sum(dp * p)) (dp = dP, p the fp32
// probabilities; masked entries have p = 0); pr[0..T) = the bf16 values of p.
OC_AVX512 void softmax_backward_row(float* dsr, float* pr, const float* dp, const float* p, int64_t T, float scale) {
  __m512 dot = _mm512_setzero_ps();
  for (int64_t j = 0; j < T; j += kN) {
    const __mmask16 k = lanes(T - j);
    dot = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, dp + j), _mm512_maskz_loadu_ps(k, p + j), dot);
  }
  const __m512 d = splat(_mm512_reduce_add_ps(dot)), s = splat(scale);
  for (int64_t j = 0; j < T; j += kN) {
    const __mmask16 k = lanes(T - j);
    const __m512 pj = _mm512_maskz_loadu_ps(k, p + j);
    const __m512 ds = _mm512_mul_ps(_mm512_mul_ps(s, pj), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dp + j), d));
    _mm512_mask_storeu_ps(dsr + j, k, round_bf16(ds));
    _mm512_mask_storeu_ps(pr + j, k, round_bf16(pj));
  }
}

const uint16_t* bits(const bf16* p) { return reinterpret_cast<const uint16_t*>(p); }

}  // namespace

// Head (b, h): S = q k^T into att (att null, inference: into this thread's scratch), softmax
// in place, O = bf16(P) v rounded into out (or, with q8, quantized into q8's int8 rows).
OC_AVX512 void attention_head_forward_avx512(bf16* out, float* att, const bf16* qkv, int64_t b, int64_t h, int64_t T,
                                             int64_t C, int64_t H, bool causal, const Int8Out* q8) {
  const int64_t D = C / H, C3 = 3 * C, T16 = up16(T), D16 = up16(D);
  const float scale = 1.0f / std::sqrt(float(D));
  float* s = thread_scratch<float>(Scratch::Attn, size_t(T * D16 + D * T16 + T * D16 + (att ? 1 : 2) * T * T));
  float *qf = s, *kt = qf + T * D16, *vf = kt + D * T16, *pr = vf + T * D16;
  float* S = att ? att + (b * H + h) * T * T : pr + T * T;
  const uint16_t* q = bits(qkv + b * T * C3 + h * D);
  widen_rows(qf, D16, q, C3, T, D);
  widen_transposed(kt, T16, q + C, C3, T, D);
  widen_rows(vf, D16, q + 2 * C, C3, T, D);
  gemm_tiles(T, T, D, MatA{qf, D16, 1}, kt, T16, StoreF32{S, T, T}, causal);  // raw scores
  softmax(S, T, T, causal, scale, [&](int64_t i) { return ProbsF32{S + i * T, pr + i * T, T, T}; });
  if (q8) {
    gemm_tiles(T, D, T, MatA{pr, T, 1}, vf, D16,
               StoreS8{q8->q + b * T * C + h * D, C, D, 1.0f / q8->scale_in, q8->scale + b * T});
    return;
  }
  uint16_t* o = reinterpret_cast<uint16_t*>(out + b * T * C + h * D);
  gemm_tiles(T, D, T, MatA{pr, T, 1}, vf, D16, StoreBF16{o, C, D});
}

// Head (b, h): dP = dO v^T, dS = softmax_bwd(P, dP) (bf16 values), dV = bf16(P)^T dO,
// dQ = dS k, dK = dS^T q.
OC_AVX512 void attention_head_backward_avx512(float* dqkv, const bf16* dout, const bf16* qkv, const float* att,
                                              int64_t b, int64_t h, int64_t T, int64_t C, int64_t H) {
  const int64_t D = C / H, C3 = 3 * C, T16 = up16(T), D16 = up16(D);
  const float scale = 1.0f / std::sqrt(float(D));
  float* s = thread_scratch<float>(Scratch::Attn, size_t(4 * T * D16 + D * T16 + T * T16 + 2 * T * T));
  float *dof = s, *qf = dof + T * D16, *kf = qf + T * D16, *vt = kf + T * D16, *dp = vt + D * T16,
        *pr = dp + T * T16, *dsr = pr + T * T;
  const uint16_t* q = bits(qkv + b * T * C3 + h * D);
  const float* P = att + (b * H + h) * T * T;
  float* dq = dqkv + b * T * C3 + h * D;
  widen_rows(dof, D16, bits(dout + b * T * C + h * D), C, T, D);
  widen_rows(qf, D16, q, C3, T, D);
  widen_rows(kf, D16, q + C, C3, T, D);
  widen_transposed(vt, T16, q + 2 * C, C3, T, D);
  gemm_tiles(T, T, D, MatA{dof, D16, 1}, vt, T16, StoreF32{dp, T16, T});  // dP = dO v^T
  for (int64_t i = 0; i < T; ++i) softmax_backward_row(dsr + i * T, pr + i * T, dp + i * T16, P + i * T, T, scale);
  gemm_tiles(T, D, T, MatA{pr, 1, T}, dof, D16, StoreF32{dq + 2 * C, C3, D});  // dV = P^T dO
  gemm_tiles(T, D, T, MatA{dsr, T, 1}, kf, D16, StoreF32{dq, C3, D});          // dQ = dS k
  gemm_tiles(T, D, T, MatA{dsr, 1, T}, qf, D16, StoreF32{dq + C, C3, D});      // dK = dS^T q
}

// ---- AMX-BF16: the two products on tiles ------------------------------------------------------
//
// Where the CPU has AMX, S = q k^T and O = P v run on tiles (tdpbf16ps: 16x16 fp32 += 16x32
// bf16 . 32x16 bf16, pairs of products summed in fp32) instead of widened FMAs: on ViT-B-32's
// 50x50x64 heads the FMA tiles above were ~45% of attention's time, the tiles do them in a
// fraction of that, and the softmax (the same code as above) is what is left. Operands are
// packed per head into thread scratch, zero-padded to whole tiles: q rows [T16][D32] bf16;
// k in the B layout of tdpbf16ps (row p holds the bf16 pairs (k[n][2p], k[n][2p+1]) of 16
// tokens n: k's rows seen as 32-bit pairs, transposed); v the same with pairs of tokens
// (v[2p][n], v[2p+1][n]); P in bf16 [T16][T32], zero past each row's last column. Zero
// padding adds exact zeros, so the sums are those of the unpadded products in another order.
// Every tile register is configured 16 rows x 64 bytes once per thread (AmxTiles, in
// attention.cpp's parallel region); oneDNN configures its own before each of its kernels.
#define OC_AMX __attribute__((target("amx-tile,amx-bf16,avx512f,avx512bw,avx512vl,avx512dq")))

namespace {

int64_t up32(int64_t n) { return (n + 31) / 32 * 32; }
inline __mmask32 lanes32(int64_t n) { return n <= 0 ? 0 : n >= 32 ? ~__mmask32(0) : __mmask32((1u << n) - 1); }

// The probabilities of the tile kernel: fp32 into att (stride T, null in inference), bf16
// bits into P (stride ldp, width columns: zero past the row's last).
struct ProbsAmx {
  float* att;
  uint16_t* p;
  int64_t T, ldp, width;
  OC_AVX512 void operator()(int r, int64_t j, __m512 v) const {
    if (att) _mm512_mask_storeu_ps(att + r * T + j, lanes(T - j), v);
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(p + r * ldp + j), to_bf16_16(v));
  }
};

// dst[t][0..D32) = src[t][0..D) (stride lds), zero past D and for rows t >= T, t < T16.
OC_AVX512 void pack_rows(uint16_t* dst, const uint16_t* src, int64_t lds, int64_t T, int64_t T16, int64_t D, int64_t D32) {
  for (int64_t t = 0; t < T16; ++t)
    for (int64_t d = 0; d < D32; d += 32)
      _mm512_storeu_si512(dst + t * D32 + d, _mm512_maskz_loadu_epi16(t < T ? lanes32(D - d) : 0, src + t * lds + d));
}

// dst[p][n] (stride T16) = the 32-bit pair (src[n][2p], src[n][2p+1]) for p < D32 / 2, n < T16,
// zero past D and T: k as the B operand of q k^T.
OC_AVX512 void pack_pairs_transposed(uint32_t* dst, const uint16_t* src, int64_t lds, int64_t T, int64_t T16, int64_t D,
                                     int64_t D32) {
  for (int64_t n0 = 0; n0 < T16; n0 += kN)
    for (int64_t d = 0; d < D32; d += 32) {
      __m512 x[16];
#pragma GCC unroll 16
      for (int i = 0; i < 16; ++i)
        x[i] = _mm512_castsi512_ps(_mm512_maskz_loadu_epi16(n0 + i < T ? lanes32(D - d) : 0, src + (n0 + i) * lds + d));
      transpose16(x);  // moves bits only
#pragma GCC unroll 16
      for (int c = 0; c < 16; ++c) _mm512_storeu_ps(reinterpret_cast<float*>(dst + (d / 2 + c) * T16 + n0), x[c]);
    }
}

// dst[p][n] (stride D16) = the 32-bit pair (src[2p][n], src[2p+1][n]) for p < T32 / 2, n < D16,
// zero past T and D: v as the B operand of P v.
OC_AVX512 void pack_row_pairs(uint32_t* dst, const uint16_t* src, int64_t lds, int64_t T, int64_t T32, int64_t D, int64_t D16) {
  for (int64_t p = 0; p < T32 / 2; ++p)
    for (int64_t n = 0; n < D16; n += kN) {
      const __mmask16 k = lanes(D - n);
      const __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(2 * p < T ? k : 0, src + 2 * p * lds + n));
      const __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(2 * p + 1 < T ? k : 0, src + (2 * p + 1) * lds + n));
      _mm512_storeu_si512(dst + p * D16 + n, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
    }
}

// C[16 x 16] at c (stride ldc floats) = sum over K (a multiple of 32) of a[16][K] (bf16, stride
// lda elements) times b's K/2 pair rows (stride ldb pairs).
OC_AMX void tile_product(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* b, int64_t ldb, int64_t K) {
  _tile_zero(0);
  for (int64_t k = 0; k < K; k += 32) {
    _tile_loadd(4, a + k, lda * 2);
    _tile_loadd(6, b + k / 2 * ldb, ldb * 4);
    _tile_dpbf16ps(0, 4, 6);
  }
  _tile_stored(0, c, ldc * 4);
}

// The same for C[32 x 32], four accumulators: one tile's products wait on the previous ones
// of its accumulator (tdpbf16ps' latency is several times its issue interval), four overlap.
OC_AMX void tile_product_2x2(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* b, int64_t ldb,
                             int64_t K) {
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  for (int64_t k = 0; k < K; k += 32) {
    _tile_loadd(4, a + k, lda * 2);
    _tile_loadd(5, a + 16 * lda + k, lda * 2);
    _tile_loadd(6, b + k / 2 * ldb, ldb * 4);
    _tile_loadd(7, b + k / 2 * ldb + 16, ldb * 4);
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, ldc * 4);
  _tile_stored(1, c + 16, ldc * 4);
  _tile_stored(2, c + 16 * ldc, ldc * 4);
  _tile_stored(3, c + 16 * ldc + 16, ldc * 4);
}

// C[M16 x N16] = a[M16][K] times b (K/2 pair rows of N16 columns), in 2x2 tile blocks and
// single tiles at the edges; lower: only the blocks left of each row block's last column.
OC_AMX void tile_gemm(float* c, int64_t ldc, const uint16_t* a, int64_t lda, const uint32_t* b, int64_t ldb, int64_t M16,
                      int64_t N16, int64_t K, bool lower) {
  for (int64_t i = 0; i < M16; i += 32) {
    const int64_t i_end = std::min(i + 32, M16), n_end = lower ? std::min(N16, i_end) : N16;
    for (int64_t j = 0; j < n_end; j += 32) {
      const int64_t j_end = std::min(j + 32, n_end);
      if (i_end - i == 32 && j_end - j == 32) {
        tile_product_2x2(c + i * ldc + j, ldc, a + i * lda, lda, b + j, ldb, K);
        continue;
      }
      for (int64_t ii = i; ii < i_end; ii += 16)
        for (int64_t jj = j; jj < j_end; jj += 16) tile_product(c + ii * ldc + jj, ldc, a + ii * lda, lda, b + jj, ldb, K);
    }
  }
}

template <class Store>
OC_AVX512 void store_rows(const float* o, int64_t ldo, int64_t T, int64_t D, const Store& st) {
  for (int64_t m = 0; m < T; ++m)
    for (int64_t n = 0; n < D; n += kN) st(m, n, _mm512_loadu_ps(o + m * ldo + n));
}

struct alignas(64) TileConfig {
  uint8_t palette_id = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

}  // namespace

OC_AMX void amx_tiles_configure() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) cfg.rows[t] = 16, cfg.colsb[t] = 64;
  // GCC's _tile_loadconfig tells the compiler it reads 8 bytes of cfg: without the barrier
  // the stores to rows and colsb may be dropped as dead.
  __asm__ __volatile__("" : : "r"(&cfg) : "memory");
  _tile_loadconfig(&cfg);
}
OC_AMX void amx_tiles_release() { _tile_release(); }

// Head (b, h) on AMX tiles (the tiles configured by amx_tiles_configure on this thread): the
// same contract as attention_head_forward_avx512.
OC_AMX void attention_head_forward_amx(bf16* out, float* att, const bf16* qkv, int64_t b, int64_t h, int64_t T, int64_t C,
                                       int64_t H, bool causal, const Int8Out* q8) {
  const int64_t D = C / H, C3 = 3 * C, T16 = up16(T), T32 = up32(T), D16 = up16(D), D32 = up32(D);
  const float scale = 1.0f / std::sqrt(float(D));
  // bf16 q [T16][D32], k pairs [D32/2][T16], v pairs [T32/2][D16], P [T16][T32]; fp32 S, O.
  const size_t halves = size_t(T16 * D32 + D32 * T16 + T32 * D16 + T16 * T32);
  float* s = thread_scratch<float>(Scratch::Attn, halves / 2 + size_t(T16 * T16 + T16 * D16));
  uint16_t* qp = reinterpret_cast<uint16_t*>(s);
  uint32_t* kp = reinterpret_cast<uint32_t*>(qp + T16 * D32);
  uint32_t* vp = kp + D32 / 2 * T16;
  uint16_t* P = reinterpret_cast<uint16_t*>(vp + T32 / 2 * D16);
  float* S = s + halves / 2;
  float* O = S + T16 * T16;
  const uint16_t* q = bits(qkv + b * T * C3 + h * D);
  pack_rows(qp, q, C3, T, T16, D, D32);
  pack_pairs_transposed(kp, q + C, C3, T, T16, D, D32);
  pack_row_pairs(vp, q + 2 * C, C3, T, T32, D, D16);
  tile_gemm(S, T16, qp, D32, kp, T16, T16, T16, D32, causal);  // raw scores
  float* A = att ? att + (b * H + h) * T * T : nullptr;
  softmax(S, T16, T, causal, scale,
          [&](int64_t i) { return ProbsAmx{A ? A + i * T : nullptr, P + i * T32, T, T32, T32}; });
  std::fill(P + T * T32, P + T16 * T32, uint16_t(0));  // the padding rows
  tile_gemm(O, D16, P, T32, vp, D16, T16, D16, T32, false);
  if (q8)
    return store_rows(O, D16, T, D, StoreS8{q8->q + b * T * C + h * D, C, D, 1.0f / q8->scale_in, q8->scale + b * T});
  store_rows(O, D16, T, D, StoreBF16{reinterpret_cast<uint16_t*>(out + b * T * C + h * D), C, D});
}

bool attention_amx_supported() {
  // Linux hands out AMX tile state only on request (arch_prctl ARCH_REQ_XCOMP_PERM for
  // XFEATURE_XTILEDATA, idempotent); oneDNN asks too, but attention may run first.
  static const bool ok = [] {
    const MachineInfo m = machine_info();
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    return attention_avx512_supported() && m.amx_tile && m.amx_bf16 &&
           syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
}

bool attention_avx512_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

}  // namespace oc::ops::cpu
