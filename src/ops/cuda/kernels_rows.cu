// Row kernels: LayerNorm, L2 normalisation, LayerScale, token mean, gathers, patch and
// token embeddings. One block per row for row reductions (statistics in double, as the
// reference); reductions over rows (parameter gradients) by one thread per column, over row
// chunks where the rows are many (LayerNorm, bias sums: kernels.h, column_chunks), so every
// sum has a fixed order: deterministic, no atomics. First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/kernels.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {



__global__ void k_ln_fwd(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                         int64_t C, double eps) {
  const float* x = inp + blockIdx.x * C;
  double s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += x[c];
  const double mu = block_sum(s) / double(C);
  double q = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) q += (x[c] - mu) * (x[c] - mu);
  const double rs = 1.0 / sqrt(block_sum(q) / double(C) + eps);
  float* y = out + blockIdx.x * C;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) y[c] = float((x[c] - mu) * rs * w[c] + b[c]);
  if (threadIdx.x == 0) {
    if (mean) mean[blockIdx.x] = float(mu);
    if (rstd) rstd[blockIdx.x] = float(rs);
  }
}
// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w (ACCUMULATES, as the contract:
// LayerNorm sits on the residual stream).
__global__ void k_ln_bwd_dx(float* dinp, const float* dout, const float* inp, const float* w, const float* mean,
                            const float* rstd, int64_t C) {
  const int64_t r = blockIdx.x;
  const float* x = inp + r * C;
  const float* dy = dout + r * C;
  const double mu = mean[r], rs = rstd[r];
  double sg = 0, sgx = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const double g = double(dy[c]) * w[c], xh = (x[c] - mu) * rs;
    sg += g, sgx += g * xh;
  }
  const double mg = block_sum(sg) / double(C), mgx = block_sum(sgx) / double(C);
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
    const double g = double(dy[c]) * w[c], xh = (x[c] - mu) * rs;
    dinp[r * C + c] = float(dinp[r * C + c] + rs * (g - mg - xh * mgx));
  }
}
// Block (column block x, row chunk y): partial dweight and dbias sums of column c.
__global__ void k_ln_dwdb_part(double* pw, double* pb, const float* dout, const float* inp, const float* mean,
                               const float* rstd, int64_t N, int64_t C) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= C) return;
  int64_t r0, r1;
  chunk_rows(N, &r0, &r1);
  double sw = 0, sb = 0;
  for (int64_t r = r0; r < r1; ++r) {
    const double dy = dout[r * C + c];
    sw += dy * ((inp[r * C + c] - double(mean[r])) * double(rstd[r]));
    sb += dy;
  }
  pw[blockIdx.y * C + c] = sw;
  pb[blockIdx.y * C + c] = sb;
}
__global__ void k_col_sums_part(double* p, const float* x, int64_t M, int64_t N) {
  const int64_t c = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (c >= N) return;
  int64_t r0, r1;
  chunk_rows(M, &r0, &r1);
  double s = 0;
  for (int64_t r = r0; r < r1; ++r) s += x[r * N + c];
  p[blockIdx.y * N + c] = s;
}
constexpr double kNormEps = 1e-12;  // F.normalize's eps, as ops/ref/loss.cpp
__global__ void k_l2_fwd(float* out, float* norm, const float* inp, int64_t C) {
  const float* x = inp + blockIdx.x * C;
  double s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += double(x[c]) * x[c];
  const double n = sqrt(block_sum(s));  // divided by std::max(n, eps), as ref: a NaN norm stays NaN
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    out[blockIdx.x * C + c] = float(x[c] / (n < kNormEps ? kNormEps : n));
  if (threadIdx.x == 0) norm[blockIdx.x] = float(n);
}
__global__ void k_l2_bwd(float* dinp, const float* dout, const float* out, const float* norm, int64_t C) {
  const int64_t r = blockIdx.x;
  const float* g = dout + r * C;
  const float* y = out + r * C;
  double s = 0;
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += double(y[c]) * g[c];
  const double yg = block_sum(s);
  const float nr = norm[r];
  for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
    dinp[r * C + c] = nr > kNormEps ? float((g[c] - y[c] * yg) / nr) : float(g[c] / kNormEps);
}
__global__ void k_ls_fwd(float* x, const float* gamma, int64_t N, int64_t C) { GRID_STRIDE(i, N * C) x[i] *= gamma[i % C]; }
__global__ void k_ls_dgamma(float* dgamma, const float* o, const float* dy, int64_t N, int64_t C) {
  GRID_STRIDE(c, C) {
    double s = 0;
    for (int64_t r = 0; r < N; ++r) s += double(dy[r * C + c]) * o[r * C + c];
    dgamma[c] = float(dgamma[c] + s);
  }
}
__global__ void k_ls_dx(float* o_dx, const float* dy, const float* gamma, int64_t N, int64_t C) {
  GRID_STRIDE(i, N * C) o_dx[i] = gamma[i % C] * dy[i];
}
__global__ void k_mean_fwd(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C) {
  GRID_STRIDE(i, B * C) {
    const int64_t b = i / C, c = i % C;
    double s = 0;
    for (int64_t t = first; t < Tn; ++t) s += inp[(b * Tn + t) * C + c];
    out[i] = float(s / double(Tn - first));
  }
}
__global__ void k_mean_bwd(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C) {
  const int64_t T = Tn - first;
  GRID_STRIDE(i, B * T * C) {
    const int64_t b = i / (T * C), t = first + (i / C) % T, c = i % C;
    dinp[(b * Tn + t) * C + c] += float(double(dout[b * C + c]) / double(T));
  }
}
__global__ void k_gather_fwd(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                             int64_t C) {
  GRID_STRIDE(i, B * K * C) {
    const int64_t bk = i / C, b = bk / K, c = i % C;
    out[i] = inp[(b * Tn + idx[bk]) * C + c];
  }
}
// One thread per (b, c) walks k in order: repeated indices add in a fixed order.
__global__ void k_gather_bwd(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                             int64_t C) {
  GRID_STRIDE(i, B * C) {
    const int64_t b = i / C, c = i % C;
    for (int64_t k = 0; k < K; ++k) dinp[(b * Tn + idx[b * K + k]) * C + c] += dout[(b * K + k) * C + c];
  }
}
__global__ void k_im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P) {
  const int64_t G = S / P, row = 3 * P * P;
  GRID_STRIDE(i, B * G * G * row) {
    const int64_t pidx = i / row, j = i % row;
    const int64_t b = pidx / (G * G), gy = (pidx / G) % G, gx = pidx % G;
    const int64_t ch = j / (P * P), ky = (j / P) % P, kx = j % P;
    patches[i] = img[((b * 3 + ch) * S + gy * P + ky) * S + gx * P + kx];
  }
}
__global__ void k_vit_fwd(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                          int64_t C) {
  GRID_STRIDE(i, B * (Np + 1) * C) {
    const int64_t b = i / ((Np + 1) * C), t = (i / C) % (Np + 1), c = i % C;
    x[i] = (t == 0 ? cls[c] : patch_out[(b * Np + t - 1) * C + c]) + pos[t * C + c];
  }
}
__global__ void k_vit_bwd_patch(float* dpatch_out, const float* dx, int64_t B, int64_t Np, int64_t C) {
  GRID_STRIDE(i, B * Np * C) {
    const int64_t b = i / (Np * C), t = (i / C) % Np, c = i % C;
    dpatch_out[i] = dx[(b * (Np + 1) + 1 + t) * C + c];
  }
}
// dpos[t,c] += sum_b dx[b,t,c]; dcls[c] += sum_b dx[b,0,c].
__global__ void k_vit_bwd_pos(float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np, int64_t C) {
  GRID_STRIDE(i, (Np + 1) * C) {
    double s = 0;
    for (int64_t b = 0; b < B; ++b) s += dx[b * (Np + 1) * C + i];
    dpos[i] = float(dpos[i] + s);
    if (i < C) dcls[i] = float(dcls[i] + s);
  }
}
__global__ void k_tok_fwd(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                          int64_t C) {
  GRID_STRIDE(i, B * Tn * C) {
    const int64_t bt = i / C, t = bt % Tn, c = i % C;
    x[i] = wte[int64_t(tokens[bt]) * C + c] + wpe[t * C + c];
  }
}
// dwte: one thread per column walks all (b, t) in order (deterministic, no atomics; slow for
// large batches: a sort-by-token version is future work). dwpe: one thread per (t, c).
__global__ void k_tok_bwd_wte(float* dwte, const float* dx, const int32_t* tokens, int64_t BT, int64_t C) {
  GRID_STRIDE(c, C)
    for (int64_t r = 0; r < BT; ++r) dwte[int64_t(tokens[r]) * C + c] += dx[r * C + c];
}
__global__ void k_tok_bwd_wpe(float* dwpe, const float* dx, int64_t B, int64_t Tn, int64_t C) {
  GRID_STRIDE(i, Tn * C) {
    double s = 0;
    for (int64_t b = 0; b < B; ++b) s += dx[b * Tn * C + i];
    dwpe[i] = float(dwpe[i] + s);
  }
}

}  // namespace

void layernorm_forward(float* out, float* mean, float* rstd, const float* inp, const float* w, const float* b,
                       int64_t N, int64_t C, double eps, cudaStream_t s) {
  if (N > 0) k_ln_fwd<<<unsigned(N), kThreads, 0, s>>>(out, mean, rstd, inp, w, b, C, eps);
}
void layernorm_backward_dx(float* dinp, const float* dout, const float* inp, const float* w, const float* mean,
                           const float* rstd, int64_t N, int64_t C, cudaStream_t s) {
  if (N > 0) k_ln_bwd_dx<<<unsigned(N), kThreads, 0, s>>>(dinp, dout, inp, w, mean, rstd, C);
}
void layernorm_backward_dwdb(float* dw, float* db, double* partial, const float* dout, const float* inp,
                             const float* mean, const float* rstd, int64_t N, int64_t C, cudaStream_t s) {
  if (N <= 0 || C <= 0 || (!dw && !db)) return;
  const int chunks = column_chunks(N);
  const dim3 grid(unsigned((C + kThreads - 1) / kThreads), unsigned(chunks));
  k_ln_dwdb_part<<<grid, kThreads, 0, s>>>(partial, partial + int64_t(chunks) * C, dout, inp, mean, rstd, N, C);
  if (dw) add_column_partials(dw, partial, chunks, C, s);
  if (db) add_column_partials(db, partial + int64_t(chunks) * C, chunks, C, s);
}
void col_sums_acc(float* dst, double* partial, const float* x, int64_t M, int64_t N, cudaStream_t s) {
  if (M <= 0 || N <= 0) return;
  const int chunks = column_chunks(M);
  const dim3 grid(unsigned((N + kThreads - 1) / kThreads), unsigned(chunks));
  k_col_sums_part<<<grid, kThreads, 0, s>>>(partial, x, M, N);
  add_column_partials(dst, partial, chunks, N, s);
}
void l2norm_forward(float* out, float* norm, const float* inp, int64_t N, int64_t C, cudaStream_t s) {
  if (N > 0) k_l2_fwd<<<unsigned(N), kThreads, 0, s>>>(out, norm, inp, C);
}
void l2norm_backward(float* dinp, const float* dout, const float* out, const float* norm, int64_t N, int64_t C,
                     cudaStream_t s) {
  if (N > 0) k_l2_bwd<<<unsigned(N), kThreads, 0, s>>>(dinp, dout, out, norm, C);
}
void layer_scale_forward(float* x, const float* gamma, int64_t N, int64_t C, cudaStream_t s) {
  k_ls_fwd<<<blocks_for(N * C), kThreads, 0, s>>>(x, gamma, N, C);
}
void layer_scale_backward(float* dgamma, float* o_dx, const float* dy, const float* gamma, int64_t N, int64_t C,
                          cudaStream_t s) {
  k_ls_dgamma<<<blocks_for(C), kThreads, 0, s>>>(dgamma, o_dx, dy, N, C);  // reads o before it is overwritten
  k_ls_dx<<<blocks_for(N * C), kThreads, 0, s>>>(o_dx, dy, gamma, N, C);
}
void mean_tokens_forward(float* out, const float* inp, int64_t B, int64_t Tn, int64_t first, int64_t C,
                         cudaStream_t s) {
  k_mean_fwd<<<blocks_for(B * C), kThreads, 0, s>>>(out, inp, B, Tn, first, C);
}
void mean_tokens_backward(float* dinp, const float* dout, int64_t B, int64_t Tn, int64_t first, int64_t C,
                          cudaStream_t s) {
  k_mean_bwd<<<blocks_for(B * (Tn - first) * C), kThreads, 0, s>>>(dinp, dout, B, Tn, first, C);
}
void gather_tokens_forward(float* out, const float* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                           int64_t C, cudaStream_t s) {
  k_gather_fwd<<<blocks_for(B * K * C), kThreads, 0, s>>>(out, inp, idx, B, Tn, K, C);
}
void gather_tokens_backward(float* dinp, const float* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K,
                            int64_t C, cudaStream_t s) {
  k_gather_bwd<<<blocks_for(B * C), kThreads, 0, s>>>(dinp, dout, idx, B, Tn, K, C);
}
void im2patches(float* patches, const float* img, int64_t B, int64_t S, int64_t P, cudaStream_t s) {
  const int64_t G = S / P;
  k_im2patches<<<blocks_for(B * G * G * 3 * P * P), kThreads, 0, s>>>(patches, img, B, S, P);
}
void vit_embed_forward(float* x, const float* patch_out, const float* cls, const float* pos, int64_t B, int64_t Np,
                       int64_t C, cudaStream_t s) {
  k_vit_fwd<<<blocks_for(B * (Np + 1) * C), kThreads, 0, s>>>(x, patch_out, cls, pos, B, Np, C);
}
void vit_embed_backward(float* dpatch_out, float* dcls, float* dpos, const float* dx, int64_t B, int64_t Np, int64_t C,
                        cudaStream_t s) {
  k_vit_bwd_patch<<<blocks_for(B * Np * C), kThreads, 0, s>>>(dpatch_out, dx, B, Np, C);
  k_vit_bwd_pos<<<blocks_for((Np + 1) * C), kThreads, 0, s>>>(dcls, dpos, dx, B, Np, C);
}
void token_embed_forward(float* x, const int32_t* tokens, const float* wte, const float* wpe, int64_t B, int64_t Tn,
                         int64_t C, cudaStream_t s) {
  k_tok_fwd<<<blocks_for(B * Tn * C), kThreads, 0, s>>>(x, tokens, wte, wpe, B, Tn, C);
}
void token_embed_backward(float* dwte, float* dwpe, const float* dx, const int32_t* tokens, int64_t B, int64_t Tn,
                          int64_t C, cudaStream_t s) {
  k_tok_bwd_wte<<<blocks_for(C), kThreads, 0, s>>>(dwte, dx, tokens, B * Tn, C);
  k_tok_bwd_wpe<<<blocks_for(Tn * C), kThreads, 0, s>>>(dwpe, dx, B, Tn, C);
}

}  // namespace oc::ops::cuda
