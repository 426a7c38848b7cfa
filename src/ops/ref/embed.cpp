// Reference patch extraction, embeddings and row gathers.
#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

void run(const Im2PatchesArgs& a) {
  const auto& [patches, img, B, S, P] = a;
  OC_CHECK(P > 0 && S % P == 0, "im2patches: image size {} not a multiple of patch size {}", S, P);
  const int64_t G = S / P;
  // patches[b, gy*G + gx, (c*P + ky)*P + kx] = img[b, c, gy*P + ky, gx*P + kx]
  for (int64_t b = 0; b < B; ++b)
    for (int64_t gy = 0; gy < G; ++gy)
      for (int64_t gx = 0; gx < G; ++gx)
        for (int64_t c = 0; c < 3; ++c)
          for (int64_t ky = 0; ky < P; ++ky)
            for (int64_t kx = 0; kx < P; ++kx)
              patches[((b * G * G + gy * G + gx) * 3 + c) * P * P + ky * P + kx] =
                  img[((b * 3 + c) * S + gy * P + ky) * S + gx * P + kx];
}

void run(const VitEmbedForwardArgs& a) {
  const auto& [x, patch_out, cls, pos, B, Np, C] = a;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t <= Np; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const float src = t == 0 ? cls[c] : patch_out[(b * Np + t - 1) * C + c];
        x[(b * (Np + 1) + t) * C + c] = src + pos[t * C + c];
      }
}

void run(const VitEmbedBackwardArgs& a) {
  const auto& [dpatch_out, dcls, dpos, dx, B, Np, C] = a;
  for (int64_t t = 0; t <= Np; ++t)
    for (int64_t c = 0; c < C; ++c) {
      double sum = 0;
      for (int64_t b = 0; b < B; ++b) {
        const float g = dx[(b * (Np + 1) + t) * C + c];
        sum += g;
        if (t > 0) dpatch_out[(b * Np + t - 1) * C + c] = g;
      }
      dpos[t * C + c] = float(dpos[t * C + c] + sum);
      if (t == 0) dcls[c] = float(dcls[c] + sum);
    }
}

namespace {
void check_tokens(std::span<const int32_t> tokens, int64_t n, int64_t V) {
  OC_CHECK(int64_t(tokens.size()) == n, "token_embed: {} token ids for {} positions", tokens.size(), n);
  for (int64_t i = 0; i < n; ++i)
    OC_CHECK(tokens[i] >= 0 && tokens[i] < V, "token_embed: token {} at position {} outside vocabulary [0, {})",
             tokens[i], i, V);
}
}  // namespace

void run(const TokenEmbedForwardArgs& a) {
  const auto& [x, tokens, wte, wpe, B, Tn, C, V] = a;
  check_tokens(tokens, B * Tn, V);
  for (int64_t bt = 0; bt < B * Tn; ++bt)
    for (int64_t c = 0; c < C; ++c) x[bt * C + c] = wte[int64_t(tokens[bt]) * C + c] + wpe[(bt % Tn) * C + c];
}

void run(const TokenEmbedBackwardArgs& a) {
  const auto& [dwte, dwpe, dx, tokens, B, Tn, C, V] = a;
  check_tokens(tokens, B * Tn, V);
  // In token order, as a sequential scatter-add defines it.
  for (int64_t bt = 0; bt < B * Tn; ++bt)
    for (int64_t c = 0; c < C; ++c) {
      dwte[int64_t(tokens[bt]) * C + c] += dx[bt * C + c];
      dwpe[(bt % Tn) * C + c] += dx[bt * C + c];
    }
}

void run(const GatherRowsForwardArgs& a) {
  const auto& [out, inp, idx, B, Tn, C] = a;
  OC_CHECK(int64_t(idx.size()) == B, "gather_rows: {} indices for {} rows", idx.size(), B);
  for (int64_t b = 0; b < B; ++b) {
    OC_CHECK(idx[b] >= 0 && idx[b] < Tn, "gather_rows: index {} of row {} outside [0, {})", idx[b], b, Tn);
    for (int64_t c = 0; c < C; ++c) out[b * C + c] = inp[(b * Tn + idx[b]) * C + c];
  }
}

void run(const GatherRowsBackwardArgs& a) {
  const auto& [dinp, dout, idx, B, Tn, C] = a;
  OC_CHECK(int64_t(idx.size()) == B, "gather_rows: {} indices for {} rows", idx.size(), B);
  for (int64_t b = 0; b < B; ++b) {
    OC_CHECK(idx[b] >= 0 && idx[b] < Tn, "gather_rows: index {} of row {} outside [0, {})", idx[b], b, Tn);
    for (int64_t c = 0; c < C; ++c) dinp[(b * Tn + idx[b]) * C + c] += dout[b * C + c];
  }
}

}  // namespace oc::ops::ref
