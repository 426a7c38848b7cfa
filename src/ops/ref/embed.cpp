// Reference patch extraction, embeddings and row gathers.
#include "core/check.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops::ref {

void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P) {
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

void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                       int64_t C) {
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0; t <= Np; ++t)
      for (int64_t c = 0; c < C; ++c) {
        const float src = t == 0 ? cls[c] : patch_out[(b * Np + t - 1) * C + c];
        x[(b * (Np + 1) + t) * C + c] = src + pos[t * C + c];
      }
}

void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np,
                        int64_t C) {
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
void check_tokens(const int32_t* tokens, int64_t n, int64_t V) {
  for (int64_t i = 0; i < n; ++i)
    OC_CHECK(tokens[i] >= 0 && tokens[i] < V, "token_embed: token {} at position {} outside vocabulary [0, {})",
             tokens[i], i, V);
}
}  // namespace

void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                         int64_t C, int64_t V) {
  check_tokens(tokens, B * Tn, V);
  for (int64_t bt = 0; bt < B * Tn; ++bt)
    for (int64_t c = 0; c < C; ++c) x[bt * C + c] = wte[int64_t(tokens[bt]) * C + c] + wpe[(bt % Tn) * C + c];
}

void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                          int64_t C, int64_t V) {
  check_tokens(tokens, B * Tn, V);
  // In token order, as a sequential scatter-add defines it.
  for (int64_t bt = 0; bt < B * Tn; ++bt)
    for (int64_t c = 0; c < C; ++c) {
      dwte[int64_t(tokens[bt]) * C + c] += dx[bt * C + c];
      dwpe[(bt % Tn) * C + c] += dx[bt * C + c];
    }
}

void gather_rows_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    OC_CHECK(idx[b] >= 0 && idx[b] < Tn, "gather_rows: index {} of row {} outside [0, {})", idx[b], b, Tn);
    for (int64_t c = 0; c < C; ++c) out[b * C + c] = inp[(b * Tn + idx[b]) * C + c];
  }
}

void gather_rows_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t C) {
  for (int64_t b = 0; b < B; ++b) {
    OC_CHECK(idx[b] >= 0 && idx[b] < Tn, "gather_rows: index {} of row {} outside [0, {})", idx[b], b, Tn);
    for (int64_t c = 0; c < C; ++c) dinp[(b * Tn + idx[b]) * C + c] += dout[b * C + c];
  }
}

}  // namespace oc::ops::ref
