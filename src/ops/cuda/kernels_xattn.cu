// Attention of Tq query rows over Tk keys with strided rows (ops/cross_attention.h): SigLIP's
// MAP head (1 latent over up to 729 patches), AttentionPool2d (1 query over HW+1 tokens), and
// self-attention on sequences too long for kernels_attention.cu's shared memory (q, k, v the
// thirds of each qkv row, Tq = Tk = T, causal or not). Nothing of K or V is staged in shared
// memory, so Tk is unbounded: the scores and probabilities of a query row live in its row of
// `att` (global; the op's output anyway), the block keeps its query row and per-warp partials.
//   forward: one block (8 warps) per (batch, head, query row): warp w takes keys t = w, w+8, ...,
//     its lanes split the head dimension, a butterfly sum gives the score; NaN-sticky max and
//     the fp32 softmax as kernels_attention.cu; P@V with the keys split over the warps as above
//     and the 8 partial sums added in warp order.
//   backward: the same blocks for dP = dO v^T, dS = scale P (dP - rowsum(dP P)) (into the
//     caller's scratch) and dQ = dS k; then one thread per element of dK, dV (columns of k/v
//     rows) sums over the Tq query rows in order.
// Every sum has a fixed order (deterministic); masked keys (causal) have P = 0 and still enter
// P@V and dV, as in the reference (0 * NaN stays NaN). amp_bf16: q, k, v, dO, P and dS rounded
// to bf16 where they enter a product (`Round`), as ops/ref/cross_attention.cpp.
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/kernels_fused.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

constexpr int kXWarps = 8, kXThreads = kXWarps * 32;

struct XGeom {
  int64_t ldq, ldk, ldv;
  int Tq, Tk, C, H;
};

// The max (NaN-sticky) / sum of one warp-uniform value per warp, over the warps in order; every
// thread gets it. red: kXWarps floats of shared memory.
__device__ float warps_max(float v, float* red) {
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < kXWarps; ++w) r = nan_max(r, red[w]);
  __syncthreads();
  return r;
}
__device__ float warps_sum(float v, float* red) {
  if (threadIdx.x % 32 == 0) red[threadIdx.x / 32] = v;
  __syncthreads();
  float r = red[0];
  for (int w = 1; w < kXWarps; ++w) r += red[w];
  __syncthreads();
  return r;
}

// dst[d] = sum_t op(p[t]) * op(M[t * ldm + d]) for d < D: warp w sums t = w, w+8, ... into
// part[w][d], then thread d adds the 8 partials in order and calls put(d, sum).
template <bool Round, bool RoundP, class In, class Put>
__device__ void rows_times(const float* p, const In* M, int64_t ldm, int Tk, int D, float* part, Put put) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  for (int d = lane; d < D; d += 32) {
    float acc = 0.0f;
    for (int t = warp; t < Tk; t += kXWarps) acc += op<RoundP>(p[t]) * op<Round>(ld(M, int64_t(t) * ldm + d));
    part[warp * D + d] = acc;
  }
  __syncthreads();
  for (int d = threadIdx.x; d < D; d += blockDim.x) {
    float acc = part[d];
    for (int w = 1; w < kXWarps; ++w) acc += part[w * D + d];
    put(d, acc);
  }
}

// Shared: the block's query (or dO) row [D], partials [kXWarps][D], reductions [kXWarps].
size_t xattn_smem(int D) { return size_t(D + kXWarps * D + kXWarps) * sizeof(float); }

template <bool Round, class In, class Out>
__global__ void __launch_bounds__(kXThreads)
    k_xattn_fwd(Out* out, float* att, const In* q, const In* k, const In* v, XGeom g, bool causal) {
  extern __shared__ float sm[];
  const int D = g.C / g.H, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = blockIdx.x, bh = row / g.Tq, b = bh / g.H;  // row = (b * H + h) * Tq + i
  const int i = int(row % g.Tq), h = int(bh % g.H);
  float* qs = sm;
  float* part = qs + D;
  float* red = part + kXWarps * D;
  const In* kh = k + b * g.Tk * g.ldk + int64_t(h) * D;
  float* P = att + row * g.Tk;
  for (int d = threadIdx.x; d < D; d += blockDim.x)
    qs[d] = op<Round>(ld(q, (b * g.Tq + i) * g.ldq + int64_t(h) * D + d));
  __syncthreads();
  const float scale = 1.0f / sqrtf(float(D));
  const int n = causal ? i + 1 : g.Tk;  // keys t < n are visible (causal: Tq == Tk)
  float mx = -INFINITY;
  for (int t = warp; t < n; t += kXWarps) {
    float s = 0.0f;
    for (int d = lane; d < D; d += 32) s += qs[d] * op<Round>(ld(kh, int64_t(t) * g.ldk + d));
    s = warp_sum(s) * scale;  // the same value in every lane
    if (lane == 0) P[t] = s;
    mx = nan_max(mx, s);
  }
  mx = warps_max(mx, red);  // also orders the score writes before the reads below
  float sum = 0.0f;
  for (int t = threadIdx.x; t < n; t += blockDim.x) {
    const float e = expf(P[t] - mx);
    P[t] = e;
    sum += e;
  }
  sum = warps_sum(warp_sum(sum), red);
  for (int t = threadIdx.x; t < g.Tk; t += blockDim.x) P[t] = t < n ? P[t] / sum : 0.0f;
  __syncthreads();
  const int64_t o = (b * g.Tq + i) * g.C + int64_t(h) * D;
  rows_times<Round, Round>(P, v + b * g.Tk * g.ldv + int64_t(h) * D, g.ldv, g.Tk, D, part,
                           [&](int d, float acc) { st(out, o + d, acc); });
}

// dS row of (b, h, i) into S (scratch, rounded when Round: both its products round it) and dQ.
template <bool Round, class In>
__global__ void __launch_bounds__(kXThreads)
    k_xattn_bwd_rows(float* dq, float* dS, const In* dout, const In* k, const In* v, const float* att, XGeom g) {
  extern __shared__ float sm[];
  const int D = g.C / g.H, warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int64_t row = blockIdx.x, bh = row / g.Tq, b = bh / g.H;
  const int i = int(row % g.Tq), h = int(bh % g.H);
  float* gs = sm;
  float* part = gs + D;
  float* red = part + kXWarps * D;
  const In* vh = v + b * g.Tk * g.ldv + int64_t(h) * D;
  const float* P = att + row * g.Tk;
  float* S = dS + row * g.Tk;
  for (int d = threadIdx.x; d < D; d += blockDim.x)
    gs[d] = op<Round>(ld(dout, (b * g.Tq + i) * g.C + int64_t(h) * D + d));
  __syncthreads();
  float dot = 0.0f;  // warp-uniform: sum over this warp's keys of dP * P
  for (int t = warp; t < g.Tk; t += kXWarps) {
    float dp = 0.0f;
    for (int d = lane; d < D; d += 32) dp += gs[d] * op<Round>(ld(vh, int64_t(t) * g.ldv + d));
    dp = warp_sum(dp);
    if (lane == 0) S[t] = dp;
    dot += dp * P[t];
  }
  dot = warps_sum(dot, red);  // also orders the dP writes before the reads below
  const float scale = 1.0f / sqrtf(float(D));
  for (int t = threadIdx.x; t < g.Tk; t += blockDim.x) S[t] = op<Round>(scale * P[t] * (S[t] - dot));
  __syncthreads();
  const int64_t o = (b * g.Tq + i) * g.ldq + int64_t(h) * D;
  rows_times<Round, false>(S, k + b * g.Tk * g.ldk + int64_t(h) * D, g.ldk, g.Tk, D, part,
                           [&](int d, float acc) { dq[o + d] = acc; });
}

// dK[b, t, c] = sum_i dS[b, h, i, t] q[b, i, c], dV[b, t, c] = sum_i P[b, h, i, t] dO[b, i, c].
template <bool Round, class In>
__global__ void k_xattn_bwd_kv(float* dk, float* dv, const float* dS, const In* dout, const In* q, const float* att,
                               int64_t B, XGeom g) {
  const int D = g.C / g.H;
  GRID_STRIDE(e, B * g.Tk * g.C) {
    const int64_t c = e % g.C, t = (e / g.C) % g.Tk, b = e / (int64_t(g.C) * g.Tk);
    const int64_t base = ((b * g.H + c / D) * g.Tq) * g.Tk + t;  // (b, h, i = 0, t)
    float ak = 0.0f, av = 0.0f;
    for (int i = 0; i < g.Tq; ++i) {
      const int64_t qi = b * g.Tq + i;
      ak += dS[base + int64_t(i) * g.Tk] * op<Round>(ld(q, qi * g.ldq + c));
      av += op<Round>(att[base + int64_t(i) * g.Tk]) * op<Round>(ld(dout, qi * g.C + c));
    }
    dk[(b * g.Tk + t) * g.ldk + c] = ak;
    dv[(b * g.Tk + t) * g.ldv + c] = av;
  }
}

template <bool Round, class In, class Out>
cudaError_t forward(Out* out, float* att, const In* q, const In* k, const In* v, int64_t B, XGeom g, bool causal,
                    cudaStream_t s) {
  k_xattn_fwd<Round, In, Out>
      <<<unsigned(B * g.H * g.Tq), kXThreads, xattn_smem(g.C / g.H), s>>>(out, att, q, k, v, g, causal);
  return cudaGetLastError();
}

template <bool Round, class In>
cudaError_t backward(float* dq, float* dk, float* dv, float* dS, const In* dout, const In* q, const In* k, const In* v,
                     const float* att, int64_t B, XGeom g, cudaStream_t s) {
  k_xattn_bwd_rows<Round, In>
      <<<unsigned(B * g.H * g.Tq), kXThreads, xattn_smem(g.C / g.H), s>>>(dq, dS, dout, k, v, att, g);
  if (cudaError_t e = cudaGetLastError(); e != cudaSuccess) return e;
  k_xattn_bwd_kv<Round, In><<<blocks_for(B * g.Tk * g.C), kThreads, 0, s>>>(dk, dv, dS, dout, q, att, B, g);
  return cudaGetLastError();
}

XGeom geom(const XAttnShape& x) { return {x.ldq, x.ldk, x.ldv, int(x.Tq), int(x.Tk), int(x.C), int(x.H)}; }

}  // namespace

int64_t xattn_max_head_dim() { return 1024; }  // xattn_smem(1024) = 36 KiB, under the 48 KiB default

cudaError_t xattn_forward(float* out, float* att, const float* q, const float* k, const float* v, const XAttnShape& x,
                          bool causal, bool round_bf16, cudaStream_t s) {
  if (x.B * x.H * x.Tq == 0 || x.Tk == 0) return cudaSuccess;
  return round_bf16 ? forward<true>(out, att, q, k, v, x.B, geom(x), causal, s)
                    : forward<false>(out, att, q, k, v, x.B, geom(x), causal, s);
}
cudaError_t xattn_forward_bf16(bf16_t* out, float* att, const bf16_t* q, const bf16_t* k, const bf16_t* v,
                               const XAttnShape& x, bool causal, cudaStream_t s) {
  if (x.B * x.H * x.Tq == 0 || x.Tk == 0) return cudaSuccess;
  return forward<true>(out, att, q, k, v, x.B, geom(x), causal, s);
}
cudaError_t xattn_backward(float* dq, float* dk, float* dv, float* dS, const float* dout, const float* q,
                           const float* k, const float* v, const float* att, const XAttnShape& x, bool round_bf16,
                           cudaStream_t s) {
  if (x.B * x.H * x.Tq == 0 || x.Tk == 0) return cudaSuccess;
  return round_bf16 ? backward<true>(dq, dk, dv, dS, dout, q, k, v, att, x.B, geom(x), s)
                    : backward<false>(dq, dk, dv, dS, dout, q, k, v, att, x.B, geom(x), s);
}
cudaError_t xattn_backward_bf16(float* dq, float* dk, float* dv, float* dS, const bf16_t* dout, const bf16_t* q,
                                const bf16_t* k, const bf16_t* v, const float* att, const XAttnShape& x,
                                cudaStream_t s) {
  if (x.B * x.H * x.Tq == 0 || x.Tk == 0) return cudaSuccess;
  return backward<true>(dq, dk, dv, dS, dout, q, k, v, att, x.B, geom(x), s);
}

}  // namespace oc::ops::cuda
