// amp_bf16 attention on AVX512-BF16, one (batch, head) per call, no library call inside:
// every product (S = q k^T, O = P v, and backward's dP, dV, dQ, dK) is one small "pair GEMM"
// on vdpbf16ps, C[m][n] = sum_p a(m, p) . b[p][n], where a(m, p) and b[p][n] are 32-bit pairs
// of bf16 values and the instruction adds both exact products to an fp32 accumulator (the
// odd one first, then the even one, each rounded: an fp32 FMA chain on exact products).
// Register tiles of 6 rows x 64 columns (24 accumulators) cover the 50x50x64 / 77x77x64
// blocks of ViT-B-32 in a few tiles. The operands are packed per head into thread scratch
// (zero-padded to whole pairs and 16-column blocks); the softmax is fp32 and vectorized.
//
// Written here rather than taken from oneDNN: a oneDNN matmul per 50x64 head costs more in
// primitive execution than the product itself (see BENCHMARKS.md), and the fused softmax
// needs the scores of one head while they are in L1.
//
// Compiled for the baseline ISA: only the functions marked OC_AVX512BF16 use AVX-512, and
// attention.cpp calls them only when the CPU has AVX512-BF16 (run-time dispatch).
// vdpbf16ps treats bf16 denormal inputs as zero and flushes denormal results; q, k, v, P, dO
// and dS of a trained model are nowhere near 1e-38, so this changes nothing in practice.
#include <immintrin.h>

// GCC 12's AVX-512 shift intrinsics start from _mm512_undefined_epi32() (`__m512i __Y = __Y;`),
// which -Wuninitialized reports at every inlined use: a false positive (the value is masked off).
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "core/check.h"
#include "ops/cpu/attention_internal.h"
#include "ops/cpu/scratch.h"

#define OC_AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,avx512bf16")))

namespace oc::ops::cpu {
namespace {

constexpr int kMR = 6;   // rows per register tile
constexpr int kNB = 4;   // 16-column blocks per register tile
constexpr int64_t kN = 16;

int64_t up16(int64_t n) { return (n + 15) / 16 * 16; }
int64_t pairs(int64_t n) { return (n + 1) / 2; }

// The first n lanes (none when n <= 0).
inline __mmask16 lanes(int64_t n) { return n <= 0 ? 0 : n >= 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1); }
inline __mmask32 lanes32(int64_t n) {
  return n <= 0 ? 0 : n >= 32 ? __mmask32(0xffffffffu) : __mmask32((1u << n) - 1);
}
OC_AVX512BF16 inline __m512 splat(float f) { return _mm512_set1_ps(f); }

// bf16 bits of 16 floats, round to nearest even, NaN kept quiet (bf16_convert.h's bf16_bits).
OC_AVX512BF16 inline __m256i to_bf16_16(__m512 x) {
  const __m512i u = _mm512_castps_si512(x);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)), lsb), 16);
  const __mmask16 nan = _mm512_cmpgt_epu32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  r = _mm512_mask_mov_epi32(r, nan, _mm512_srli_epi32(_mm512_or_si512(u, _mm512_set1_epi32(0x00400000)), 16));
  return _mm512_cvtepi32_epi16(r);
}

// vec_math.h's exp8 (Cephes expf) on 16 lanes: the same constants and steps.
OC_AVX512BF16 inline __m512 exp16(__m512 x) {
  const __mmask16 too_small = _mm512_cmp_ps_mask(x, splat(-87.3f), _CMP_LT_OQ);
  x = _mm512_min_ps(splat(88.0f), _mm512_max_ps(splat(-87.3f), x));  // operand order keeps NaN
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, splat(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, splat(0.693359375f), x);
  r = _mm512_fnmadd_ps(n, splat(-2.12194440e-4f), r);
  __m512 p = splat(1.9875691500e-4f);
  p = _mm512_fmadd_ps(p, r, splat(1.3981999507e-3f));
  p = _mm512_fmadd_ps(p, r, splat(8.3334519073e-3f));
  p = _mm512_fmadd_ps(p, r, splat(4.1665795894e-2f));
  p = _mm512_fmadd_ps(p, r, splat(1.6666665459e-1f));
  p = _mm512_fmadd_ps(p, r, splat(5.0000001201e-1f));
  __m512 y = _mm512_fmadd_ps(_mm512_mul_ps(p, r), r, _mm512_add_ps(r, splat(1.0f)));
  const __m512i e = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvtps_epi32(n), _mm512_set1_epi32(127)), 23);
  y = _mm512_mul_ps(y, _mm512_castsi512_ps(e));
  return _mm512_maskz_mov_ps(__mmask16(~too_small), y);
}

// ---- packing (u16 = bf16 bits, u32 = a pair of them) -------------------------------------

// dst[r][0..K) = src[r][0..K), dst[r][K..2*pairs(K)) = 0, rows of pairs(K) u32.
OC_AVX512BF16 void pack_rows(uint32_t* dst, const uint16_t* src, int64_t lds, int64_t R, int64_t K) {
  const int64_t w = 2 * pairs(K);
  for (int64_t r = 0; r < R; ++r) {
    uint16_t* d = reinterpret_cast<uint16_t*>(dst + r * (w / 2));
    for (int64_t k0 = 0; k0 < w; k0 += 32) {
      const __m512i x = _mm512_maskz_loadu_epi16(lanes32(K - k0), src + r * lds + k0);
      _mm512_mask_storeu_epi16(d + k0, lanes32(w - k0), x);
    }
  }
}

// dst[p][r] = (src[r][2p], src[r][2p+1]) for p < pairs(K), r < ldn (ldn % 16 == 0); zero where
// r >= R or 2p+1 >= K. The B operand of S = q k^T and dP = dO v^T.
void pack_transposed(uint32_t* dst, int64_t ldn, const uint16_t* src, int64_t lds, int64_t R, int64_t K) {
  const int64_t P = pairs(K);
  for (int64_t p = 0; p < P; ++p) std::fill_n(dst + p * ldn + R, ldn - R, 0u);
  for (int64_t r = 0; r < R; ++r) {
    const uint16_t* s = src + r * lds;
    for (int64_t p = 0; p < K / 2; ++p) dst[p * ldn + r] = uint32_t(s[2 * p]) | uint32_t(s[2 * p + 1]) << 16;
    if (K % 2) dst[(P - 1) * ldn + r] = s[K - 1];
  }
}

// dst[p][n] = (src[2p][n], src[2p+1][n]) for p < pairs(R), n < ldn (ldn % 16 == 0); zero where
// n >= N or 2p+1 >= R. The B operand of O = P v, dV, dQ, dK and the A operand of dV and dK.
OC_AVX512BF16 void pack_interleaved(uint32_t* dst, int64_t ldn, const uint16_t* src, int64_t lds, int64_t R,
                                    int64_t N) {
  alignas(64) static constexpr uint16_t lo_idx[32] = {0, 32, 1, 33, 2,  34, 3,  35, 4,  36, 5,  37, 6,  38, 7,  39,
                                                      8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
  const __m512i lo = _mm512_load_si512(lo_idx);
  const __m512i hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
  for (int64_t p = 0; p < pairs(R); ++p) {
    const uint16_t* a = src + 2 * p * lds;
    const bool has_b = 2 * p + 1 < R;
    uint32_t* d = dst + p * ldn;
    for (int64_t n0 = 0; n0 < ldn; n0 += 32) {
      const __mmask32 m = lanes32(N - n0);
      const __m512i x = _mm512_maskz_loadu_epi16(m, a + n0);
      const __m512i y = has_b ? _mm512_maskz_loadu_epi16(m, a + lds + n0) : _mm512_setzero_si512();
      _mm512_storeu_si512(d + n0, _mm512_permutex2var_epi16(x, lo, y));
      if (n0 + 16 < ldn) _mm512_storeu_si512(d + n0 + 16, _mm512_permutex2var_epi16(x, hi, y));
    }
  }
}

// ---- the pair GEMM -------------------------------------------------------------------------

// Where a tile goes: fp32 rows (ld) or bf16 rows, columns >= N not written.
struct StoreF32 {
  float* c;
  int64_t ld, N;
  OC_AVX512BF16 void operator()(int64_t m, int64_t n, __m512 v) const {
    _mm512_mask_storeu_ps(c + m * ld + n, lanes(N - n), v);
  }
};
struct StoreBF16 {
  uint16_t* c;
  int64_t ld, N;
  OC_AVX512BF16 void operator()(int64_t m, int64_t n, __m512 v) const {
    _mm256_mask_storeu_epi16(c + m * ld + n, lanes(N - n), to_bf16_16(v));
  }
};

// The A operand: a(m, p) is the u32 at a[m * sm + p * sp].
struct PairsA {
  const uint32_t* a;
  int64_t sm, sp;
};

template <int MR, int NB, class Store>
OC_AVX512BF16 void tile(PairsA A, const uint32_t* b, int64_t ldb, int64_t P, int64_t m0, int64_t n0,
                        const Store& st) {
  __m512 acc[MR][NB];
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_setzero_ps();
  const uint32_t* a = A.a + m0 * A.sm;
  const uint32_t* bp = b + n0;
  for (int64_t p = 0; p < P; ++p, a += A.sp, bp += ldb) {
    __m512bh bv[NB];
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) bv[j] = (__m512bh)_mm512_loadu_si512(bp + j * kN);
#pragma GCC unroll 8
    for (int r = 0; r < MR; ++r) {
      const __m512bh av = (__m512bh)_mm512_set1_epi32(int(a[r * A.sm]));
#pragma GCC unroll 4
      for (int j = 0; j < NB; ++j) acc[r][j] = _mm512_dpbf16_ps(acc[r][j], av, bv[j]);
    }
  }
#pragma GCC unroll 8
  for (int r = 0; r < MR; ++r)
#pragma GCC unroll 4
    for (int j = 0; j < NB; ++j) st(m0 + r, n0 + j * kN, acc[r][j]);
}

template <int NB, class Store>
OC_AVX512BF16 void row_tile(int64_t mr, PairsA A, const uint32_t* b, int64_t ldb, int64_t P, int64_t m0,
                            int64_t n0, const Store& st) {
  switch (mr) {
    case 6: return tile<6, NB>(A, b, ldb, P, m0, n0, st);
    case 5: return tile<5, NB>(A, b, ldb, P, m0, n0, st);
    case 4: return tile<4, NB>(A, b, ldb, P, m0, n0, st);
    case 3: return tile<3, NB>(A, b, ldb, P, m0, n0, st);
    case 2: return tile<2, NB>(A, b, ldb, P, m0, n0, st);
    default: return tile<1, NB>(A, b, ldb, P, m0, n0, st);
  }
}

// C[m][n] for m < M, n < N: sum over p < P of the pair products. b is [P][ldb] with ldb >= up16(N).
// lower: only the columns n <= m are needed (causal scores); whole 16-blocks past them are skipped.
template <class Store>
OC_AVX512BF16 void pair_gemm(int64_t M, int64_t N, int64_t P, PairsA A, const uint32_t* b, int64_t ldb,
                             const Store& st, bool lower = false) {
  for (int64_t m0 = 0; m0 < M; m0 += kMR) {
    const int64_t mr = std::min<int64_t>(kMR, M - m0);
    const int64_t n_end = lower ? std::min(N, m0 + mr) : N;
    for (int64_t n0 = 0; n0 < n_end; n0 += kNB * kN) {
      switch (std::min<int64_t>(kNB, (n_end - n0 + kN - 1) / kN)) {
        case 4: row_tile<4>(mr, A, b, ldb, P, m0, n0, st); break;
        case 3: row_tile<3>(mr, A, b, ldb, P, m0, n0, st); break;
        case 2: row_tile<2>(mr, A, b, ldb, P, m0, n0, st); break;
        default: row_tile<1>(mr, A, b, ldb, P, m0, n0, st); break;
      }
    }
  }
}

// ---- softmax --------------------------------------------------------------------------------

// row[0..n) = softmax(scale * row[0..n)), row[n..T) = 0; pb[0..2 * pairs(T)) = bf16(row), zero padded.
OC_AVX512BF16 void softmax_row(float* row, uint16_t* pb, int64_t n, int64_t T, float scale) {
  __m512 mx = _mm512_set1_ps(-__builtin_inff());
  for (int64_t j = 0; j < n; j += kN)
    mx = _mm512_max_ps(mx, _mm512_mask_loadu_ps(_mm512_set1_ps(-__builtin_inff()), lanes(n - j), row + j));
  const __m512 m = _mm512_set1_ps(_mm512_reduce_max_ps(mx)), s = _mm512_set1_ps(scale);
  __m512 sum = _mm512_setzero_ps();
  for (int64_t j = 0; j < n; j += kN) {
    const __mmask16 k = lanes(n - j);
    const __m512 e = _mm512_maskz_mov_ps(k, exp16(_mm512_mul_ps(s, _mm512_sub_ps(_mm512_maskz_loadu_ps(k, row + j), m))));
    _mm512_mask_storeu_ps(row + j, k, e);
    sum = _mm512_add_ps(sum, e);
  }
  const __m512 inv = _mm512_set1_ps(1.0f / _mm512_reduce_add_ps(sum));
  const int64_t w = 2 * pairs(T);
  for (int64_t j = 0; j < w; j += kN) {
    const __mmask16 k = lanes(n - j);  // zero past n even where inv is NaN (as ref)
    const __m512 p = _mm512_maskz_mul_ps(k, _mm512_maskz_loadu_ps(k, row + j), inv);
    _mm512_mask_storeu_ps(row + j, lanes(T - j), p);
    _mm256_mask_storeu_epi16(pb + j, lanes(w - j), to_bf16_16(p));
  }
}

// ds[0..T) = scale * p * (dp - sum(dp * p)) (dp = dP on entry, p the fp32 probabilities),
// then dsb[0..2 * pairs(T)) = bf16(ds), zero padded. Masked entries have p = 0.
OC_AVX512BF16 void softmax_backward_row(uint16_t* dsb, const float* dp, const float* p, int64_t T, float scale) {
  __m512 dot = _mm512_setzero_ps();
  for (int64_t j = 0; j < T; j += kN) {
    const __mmask16 k = lanes(T - j);
    dot = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, dp + j), _mm512_maskz_loadu_ps(k, p + j), dot);
  }
  const __m512 d = _mm512_set1_ps(_mm512_reduce_add_ps(dot)), s = _mm512_set1_ps(scale);
  const int64_t w = 2 * pairs(T);
  for (int64_t j = 0; j < w; j += kN) {
    const __mmask16 k = lanes(T - j);
    const __m512 pj = _mm512_maskz_loadu_ps(k, p + j);
    const __m512 ds = _mm512_mul_ps(_mm512_mul_ps(s, pj), _mm512_sub_ps(_mm512_maskz_loadu_ps(k, dp + j), d));
    _mm256_mask_storeu_epi16(dsb + j, lanes(w - j), to_bf16_16(_mm512_maskz_mov_ps(k, ds)));
  }
}

const uint16_t* bits(const bf16* p) { return reinterpret_cast<const uint16_t*>(p); }

}  // namespace

// Head (b, h): S = q k^T into att, softmax in place, O = bf16(P) v rounded into out.
OC_AVX512BF16 void attention_head_forward_avx512(bf16* out, float* att, const bf16* qkv, int64_t b, int64_t h,
                                                 int64_t T, int64_t C, int64_t H, bool causal) {
  const int64_t D = C / H, C3 = 3 * C, DP = pairs(D), TP = pairs(T), T16 = up16(T), D16 = up16(D);
  const float scale = 1.0f / std::sqrt(float(D));
  float* S = att + (b * H + h) * T * T;
  uint32_t* s = thread_scratch<uint32_t>(Scratch::Attn, size_t(T * DP + DP * T16 + TP * D16 + T * TP));
  uint32_t *qs = s, *kt = qs + T * DP, *vp = kt + DP * T16, *pb = vp + TP * D16;
  const uint16_t* q = bits(qkv + b * T * C3 + h * D);
  pack_rows(qs, q, C3, T, D);
  pack_transposed(kt, T16, q + C, C3, T, D);
  pack_interleaved(vp, D16, q + 2 * C, C3, T, D);
  pair_gemm(T, T, DP, PairsA{qs, DP, 1}, kt, T16, StoreF32{S, T, T}, causal);  // raw scores
  for (int64_t i = 0; i < T; ++i)
    softmax_row(S + i * T, reinterpret_cast<uint16_t*>(pb + i * TP), causal ? i + 1 : T, T, scale);
  uint16_t* o = reinterpret_cast<uint16_t*>(out + b * T * C + h * D);
  pair_gemm(T, D, TP, PairsA{pb, TP, 1}, vp, D16, StoreBF16{o, C, D});
}

// Head (b, h): dP = dO v^T, dS = softmax_bwd(P, dP) (bf16), dV = bf16(P)^T dO, dQ = dS k, dK = dS^T q.
OC_AVX512BF16 void attention_head_backward_avx512(float* dqkv, const bf16* dout, const bf16* qkv, const float* att,
                                                  int64_t b, int64_t h, int64_t T, int64_t C, int64_t H) {
  const int64_t D = C / H, C3 = 3 * C, DP = pairs(D), TP = pairs(T), T16 = up16(T), D16 = up16(D);
  const float scale = 1.0f / std::sqrt(float(D));
  const size_t n_rows = size_t(T * DP + T * TP), n_t = size_t(DP * T16 + T * T16 + 2 * TP * T16),
               n_d = size_t(3 * TP * D16);
  uint32_t* s = thread_scratch<uint32_t>(Scratch::Attn, n_rows + n_t + n_d + size_t(T * TP));
  uint32_t *dos = s, *vt = dos + T * DP, *pint = vt + DP * T16, *dsint = pint + TP * T16, *dop = dsint + TP * T16,
           *kp = dop + TP * D16, *qp = kp + TP * D16, *sb = qp + TP * D16, *pb = sb + T * TP;
  float* dp = reinterpret_cast<float*>(pb + T * TP);
  const uint16_t* q = bits(qkv + b * T * C3 + h * D);
  const uint16_t* dO = bits(dout + b * T * C + h * D);
  const float* P = att + (b * H + h) * T * T;
  float* dq = dqkv + b * T * C3 + h * D;
  pack_rows(dos, dO, C, T, D);
  pack_transposed(vt, T16, q + 2 * C, C3, T, D);
  pack_interleaved(dop, D16, dO, C, T, D);
  pack_interleaved(kp, D16, q + C, C3, T, D);
  pack_interleaved(qp, D16, q, C3, T, D);
  pair_gemm(T, T, DP, PairsA{dos, DP, 1}, vt, T16, StoreF32{dp, T16, T});  // dP = dO v^T
  uint16_t* pb16 = reinterpret_cast<uint16_t*>(pb);
  uint16_t* sb16 = reinterpret_cast<uint16_t*>(sb);
  for (int64_t i = 0; i < T; ++i) {
    const float* pr = P + i * T;
    const int64_t w = 2 * TP;
    for (int64_t j = 0; j < w; j += kN) {
      const __mmask16 k = lanes(T - j);
      _mm256_mask_storeu_epi16(pb16 + i * w + j, lanes(w - j), to_bf16_16(_mm512_maskz_loadu_ps(k, pr + j)));
    }
    softmax_backward_row(sb16 + i * w, dp + i * T16, pr, T, scale);
  }
  pack_interleaved(pint, T16, pb16, 2 * TP, T, T);
  pack_interleaved(dsint, T16, sb16, 2 * TP, T, T);
  pair_gemm(T, D, TP, PairsA{pint, 1, T16}, dop, D16, StoreF32{dq + 2 * C, C3, D});  // dV = P^T dO
  pair_gemm(T, D, TP, PairsA{sb, TP, 1}, kp, D16, StoreF32{dq, C3, D});              // dQ = dS k
  pair_gemm(T, D, TP, PairsA{dsint, 1, T16}, qp, D16, StoreF32{dq + C, C3, D});      // dK = dS^T q
}

bool attention_avx512_bf16_supported() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
}

}  // namespace oc::ops::cpu
