// Patch extraction, class/positional/token embeddings and row gathers. Every reduction
// (dcls, dpos, dwte, dwpe) is split by output column or row, each summed in a fixed order:
// deterministic for any thread count, no atomics.
#include "ops/cpu/embed.h"
#include "ops/cpu/cpu_backend.h"

#include <algorithm>

#include "core/check.h"

namespace oc::ops {

template <typename T>
void im2patches(T* patches, const T* img, int64_t B, int64_t S, int64_t P) {
  OC_CHECK(P > 0 && S % P == 0, "im2patches: image size {} not a multiple of patch size {}", S, P);
  const int64_t G = S / P, row = 3 * P * P;
#pragma omp parallel for schedule(static)
  for (int64_t bp = 0; bp < B * G * G; ++bp) {
    const int64_t b = bp / (G * G), gy = (bp / G) % G, gx = bp % G;
    T* dst = patches + bp * row;
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t ky = 0; ky < P; ++ky) {
        const T* src = img + ((b * 3 + c) * S + gy * P + ky) * S + gx * P;
        std::copy(src, src + P, dst + (c * P + ky) * P);
      }
  }
}

template <typename T>
void vit_embed_forward(T* x, const T* patch_out, const T* cls, const T* pos, int64_t B, int64_t Np, int64_t C) {
  const int64_t Tn = Np + 1;
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < B * Tn; ++bt) {
    const int64_t b = bt / Tn, t = bt % Tn;
    const T* src = t == 0 ? cls : patch_out + (b * Np + t - 1) * C;
    const T* p = pos + t * C;
    T* dst = x + bt * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) dst[c] = src[c] + p[c];
  }
}

template <typename T>
void vit_embed_backward(T* dpatch_out, T* dcls, T* dpos, const T* dx, int64_t B, int64_t Np, int64_t C) {
  const int64_t Tn = Np + 1;
  // One task per position: copy its patch gradients and sum its column over the batch.
#pragma omp parallel for schedule(static)
  for (int64_t t = 0; t < Tn; ++t) {
    T* dp = dpos + t * C;
    for (int64_t b = 0; b < B; ++b) {
      const T* g = dx + (b * Tn + t) * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dp[c] += g[c];
      if (t == 0) {
        for (int64_t c = 0; c < C; ++c) dcls[c] += g[c];
      } else {
        std::copy(g, g + C, dpatch_out + (b * Np + t - 1) * C);
      }
    }
  }
}

template <typename T>
void token_embed_forward(T* x, const int32_t* tokens, const T* wte, const T* wpe, int64_t B, int64_t Tn, int64_t C,
                         int64_t V) {
  for (int64_t i = 0; i < B * Tn; ++i)
    OC_CHECK(tokens[i] >= 0 && tokens[i] < V, "token_embed: token {} at position {} outside vocabulary [0, {})",
             tokens[i], i, V);
#pragma omp parallel for schedule(static)
  for (int64_t bt = 0; bt < B * Tn; ++bt) {
    const T* e = wte + int64_t(tokens[bt]) * C;
    const T* p = wpe + (bt % Tn) * C;
    T* dst = x + bt * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) dst[c] = e[c] + p[c];
  }
}

template <typename T>
void token_embed_backward(T* dwte, T* dwpe, const T* dx, const int32_t* tokens, int64_t B, int64_t Tn, int64_t C,
                          int64_t V) {
  for (int64_t i = 0; i < B * Tn; ++i)
    OC_CHECK(tokens[i] >= 0 && tokens[i] < V, "token_embed: token {} at position {} outside vocabulary [0, {})",
             tokens[i], i, V);
  // Threads own column blocks and walk all tokens in order: a token repeated in the batch
  // accumulates into the same row in the same order whatever the thread count.
  constexpr int64_t kBlock = 64;
  const int64_t nblocks = (C + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static)
  for (int64_t blk = 0; blk < nblocks; ++blk) {
    const int64_t c0 = blk * kBlock, c1 = std::min(C, c0 + kBlock);
    for (int64_t bt = 0; bt < B * Tn; ++bt) {
      const T* g = dx + bt * C;
      T* e = dwte + int64_t(tokens[bt]) * C;
      T* p = dwpe + (bt % Tn) * C;
#pragma omp simd
      for (int64_t c = c0; c < c1; ++c) {
        e[c] += g[c];
        p[c] += g[c];
      }
    }
  }
}

template <typename T>
void gather_rows_forward(T* out, const T* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    OC_CHECK(idx[b] >= 0 && idx[b] < Tn, "gather_rows: index {} of row {} outside [0, {})", idx[b], b, Tn);
    const T* src = inp + (b * Tn + idx[b]) * C;
    std::copy(src, src + C, out + b * C);
  }
}

template <typename T>
void gather_rows_backward(T* dinp, const T* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    OC_CHECK(idx[b] >= 0 && idx[b] < Tn, "gather_rows: index {} of row {} outside [0, {})", idx[b], b, Tn);
    T* dst = dinp + (b * Tn + idx[b]) * C;
    const T* g = dout + b * C;
#pragma omp simd
    for (int64_t c = 0; c < C; ++c) dst[c] += g[c];
  }
}

#define OC_INSTANTIATE(T)                                                                                        \
  template void im2patches<T>(T*, const T*, int64_t, int64_t, int64_t);                                          \
  template void vit_embed_forward<T>(T*, const T*, const T*, const T*, int64_t, int64_t, int64_t);              \
  template void vit_embed_backward<T>(T*, T*, T*, const T*, int64_t, int64_t, int64_t);                          \
  template void token_embed_forward<T>(T*, const int32_t*, const T*, const T*, int64_t, int64_t, int64_t,       \
                                       int64_t);                                                                 \
  template void token_embed_backward<T>(T*, T*, const T*, const int32_t*, int64_t, int64_t, int64_t, int64_t);   \
  template void gather_rows_forward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t);                 \
  template void gather_rows_backward<T>(T*, const T*, const int32_t*, int64_t, int64_t, int64_t);
OC_INSTANTIATE(float)
OC_INSTANTIATE(double)
#undef OC_INSTANTIATE

}  // namespace oc::ops

// The cpu backend's entry points for these ops (declared in ops/cpu/cpu_backend.h).
namespace oc::ops::cpu {
void run(const Im2PatchesArgs& a) { ops::im2patches(a.patches, a.img, a.B, a.S, a.P); }
void run(const VitEmbedForwardArgs& a) { ops::vit_embed_forward(a.x, a.patch_out, a.cls, a.pos, a.B, a.Np, a.C); }
void run(const VitEmbedBackwardArgs& a) { ops::vit_embed_backward(a.dpatch_out, a.dcls, a.dpos, a.dx, a.B, a.Np, a.C); }
void run(const TokenEmbedForwardArgs& a) {
  ops::token_embed_forward(a.x, a.tokens.data(), a.wte, a.wpe, a.B, a.Tn, a.C, a.V);
}
void run(const TokenEmbedBackwardArgs& a) {
  ops::token_embed_backward(a.dwte, a.dwpe, a.dx, a.tokens.data(), a.B, a.Tn, a.C, a.V);
}
void run(const GatherRowsForwardArgs& a) { ops::gather_rows_forward(a.out, a.inp, a.idx.data(), a.B, a.Tn, a.C); }
void run(const GatherRowsBackwardArgs& a) { ops::gather_rows_backward(a.dinp, a.dout, a.idx.data(), a.B, a.Tn, a.C); }
}  // namespace oc::ops::cpu
