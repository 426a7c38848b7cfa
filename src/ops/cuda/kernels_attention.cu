// Self-attention for CLIP's short sequences (ops/attention.h; T = 50/77 at ViT-B-32, 197/257 at
// ViT-B-16/L-14): one block per (batch, head), 8 warps, the head's K and V (forward) or K, V
// then Q, dO (backward) in shared memory as fp32 rows padded to D+1 floats (lanes reading
// row j = lane of one column hit 32 different banks). Each warp owns query rows i = warp,
// warp + 8, ...; its lanes split the keys for the scores and the head dimension for P@V.
// The softmax is fp32 (max-subtracted; the max is NaN-sticky as in ops/ref/attention.cpp so
// NaN/Inf propagate to the same outputs). P@V, dV = P^T dO, dQ and dK loop over every key,
// masked ones too (P = 0 there), exactly as the reference: 0 * NaN stays NaN.
// amp_bf16 rules (`Round`): q, k, v, dO rounded to bf16 where loaded, P and dS where they enter a
// product; bf16 inputs are already bf16 values. Deterministic: every sum has a fixed order.
// First ran on an H200 on 2026-12-04 (docs/CUDA.md).
#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/kernels_fused.h"

namespace oc::ops::cuda {
namespace {

constexpr int kWarps = 8, kAttThreads = kWarps * 32;

// Rows t of part `which` (0 = q, 1 = k, 2 = v) of head (b, h) into smem [T][D+1].
template <bool Round, class In>
__device__ void load_part(float* dst, const In* qkv, int64_t b, int h, int T, int C, int D, int which) {
  const int64_t base = int64_t(b) * T * 3 * C + int64_t(which) * C + int64_t(h) * D;
  for (int i = threadIdx.x; i < T * D; i += blockDim.x) {
    const int t = i / D, d = i % D;
    dst[t * (D + 1) + d] = op<Round>(ld(qkv, base + int64_t(t) * 3 * C + d));
  }
}

// out[b, i, h*D..] = P v, att[b, h, i, :] = P. Shared: K, V [T][D+1]; per warp q [D], p [T].
template <bool Round, class In, class Out>
__global__ void __launch_bounds__(kAttThreads)
    k_attention_forward(Out* out, float* att, const In* qkv, int T, int C, int H, bool causal) {
  extern __shared__ float sm[];
  const int D = C / H, b = blockIdx.x / H, h = blockIdx.x % H;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* K = sm;
  float* V = K + T * (D + 1);
  float* q = V + T * (D + 1) + warp * (D + T);
  float* p = q + D;
  load_part<Round>(K, qkv, b, h, T, C, D, 1);
  load_part<Round>(V, qkv, b, h, T, C, D, 2);
  __syncthreads();
  const float scale = 1.0f / sqrtf(float(D));
  const int64_t row0 = int64_t(b) * T;
  float* P = att + int64_t(blockIdx.x) * T * T;
  for (int i = warp; i < T; i += kWarps) {
    for (int d = lane; d < D; d += 32) q[d] = op<Round>(ld(qkv, (row0 + i) * 3 * C + int64_t(h) * D + d));
    __syncwarp();
    const int n = causal ? i + 1 : T;  // keys j < n are visible
    float mx = -INFINITY;
    for (int j = lane; j < n; j += 32) {
      float s = 0.0f;
      #pragma unroll 4
      for (int d = 0; d < D; ++d) s += q[d] * K[j * (D + 1) + d];
      s *= scale;
      p[j] = s;
      mx = nan_max(mx, s);
    }
    mx = warp_max(mx);
    float sum = 0.0f;
    for (int j = lane; j < n; j += 32) {
      const float e = expf(p[j] - mx);
      p[j] = e;
      sum += e;
    }
    sum = warp_sum(sum);
    for (int j = lane; j < T; j += 32) {
      const float pj = j < n ? p[j] / sum : 0.0f;
      P[int64_t(i) * T + j] = pj;
      p[j] = op<Round>(pj);
    }
    __syncwarp();
    for (int d = lane; d < D; d += 32) {
      float acc = 0.0f;
      #pragma unroll 4
      for (int j = 0; j < T; ++j) acc += p[j] * V[j * (D + 1) + d];
      st(out, (row0 + i) * C + int64_t(h) * D + d, acc);
    }
    __syncwarp();  // q and p are rewritten for the next row
  }
}

// dqkv[b, t, {q,k,v} h*D..] from dO, qkv and P (att, used as given). dS [T,T] per head goes
// through `dS` (global scratch): phase 1 (K, V in shared) writes dQ and dS row by row; phase 2
// (Q, dO in shared) writes dK and dV column by column.
template <bool Round, class In>
__global__ void __launch_bounds__(kAttThreads)
    k_attention_backward(float* dqkv, float* dS, const In* dout, const In* qkv, const float* att, int T, int C,
                         int H) {
  extern __shared__ float sm[];
  const int D = C / H, b = blockIdx.x / H, h = blockIdx.x % H;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float* A0 = sm;                    // K, then Q
  float* A1 = A0 + T * (D + 1);      // V, then dO
  float* g = A1 + T * (D + 1) + warp * (D + T);  // per warp: dO row [D]
  float* r = g + D;                              // per warp: dS row [T]
  const float scale = 1.0f / sqrtf(float(D));
  const int64_t row0 = int64_t(b) * T, col = int64_t(h) * D;
  const float* P = att + int64_t(blockIdx.x) * T * T;
  float* S = dS + int64_t(blockIdx.x) * T * T;
  load_part<Round>(A0, qkv, b, h, T, C, D, 1);
  load_part<Round>(A1, qkv, b, h, T, C, D, 2);
  __syncthreads();
  for (int i = warp; i < T; i += kWarps) {  // phase 1: dP = dO v^T, dS, dQ = dS k
    for (int d = lane; d < D; d += 32) g[d] = op<Round>(ld(dout, (row0 + i) * C + col + d));
    __syncwarp();
    float dot = 0.0f;
    for (int j = lane; j < T; j += 32) {
      float dp = 0.0f;
      #pragma unroll 4
      for (int d = 0; d < D; ++d) dp += g[d] * A1[j * (D + 1) + d];
      r[j] = dp;
      dot += dp * P[int64_t(i) * T + j];
    }
    dot = warp_sum(dot);
    for (int j = lane; j < T; j += 32) {
      const float ds = op<Round>(scale * P[int64_t(i) * T + j] * (r[j] - dot));
      r[j] = ds;
      S[int64_t(i) * T + j] = ds;
    }
    __syncwarp();
    for (int d = lane; d < D; d += 32) {
      float acc = 0.0f;
      #pragma unroll 4
      for (int j = 0; j < T; ++j) acc += r[j] * A0[j * (D + 1) + d];
      dqkv[(row0 + i) * 3 * C + col + d] = acc;
    }
    __syncwarp();
  }
  __syncthreads();  // every warp is done with K, V; dS is complete and visible to the block
  load_part<Round>(A0, qkv, b, h, T, C, D, 0);
  for (int i = threadIdx.x; i < T * D; i += blockDim.x)
    A1[(i / D) * (D + 1) + i % D] = op<Round>(ld(dout, (row0 + i / D) * C + col + i % D));
  __syncthreads();
  for (int j = warp; j < T; j += kWarps)  // phase 2: dK = dS^T q, dV = P^T dO
    for (int d = lane; d < D; d += 32) {
      float ak = 0.0f, av = 0.0f;
      #pragma unroll 4
      for (int i = 0; i < T; ++i) {
        ak += S[int64_t(i) * T + j] * A0[i * (D + 1) + d];
        av += op<Round>(P[int64_t(i) * T + j]) * A1[i * (D + 1) + d];
      }
      dqkv[(row0 + j) * 3 * C + C + col + d] = ak;
      dqkv[(row0 + j) * 3 * C + 2 * C + col + d] = av;
    }
}

// Opt in to more than 48 KiB of dynamic shared memory once per kernel instance.
template <class K>
cudaError_t allow_smem(K kernel, size_t bytes) {
  return bytes > 48 * 1024 ? cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes))
                           : cudaSuccess;
}

template <bool Round, class In, class Out>
cudaError_t forward(Out* out, float* att, const In* qkv, int64_t B, int64_t T, int64_t C, int64_t H, bool causal,
                    cudaStream_t s) {
  const size_t smem = attention_smem_bytes(T, C / H);
  auto kernel = k_attention_forward<Round, In, Out>;
  if (cudaError_t e = allow_smem(kernel, smem); e != cudaSuccess) return e;
  kernel<<<unsigned(B * H), kAttThreads, smem, s>>>(out, att, qkv, int(T), int(C), int(H), causal);
  return cudaGetLastError();
}

template <bool Round, class In>
cudaError_t backward(float* dqkv, float* dS, const In* dout, const In* qkv, const float* att, int64_t B, int64_t T,
                     int64_t C, int64_t H, cudaStream_t s) {
  const size_t smem = attention_smem_bytes(T, C / H);
  auto kernel = k_attention_backward<Round, In>;
  if (cudaError_t e = allow_smem(kernel, smem); e != cudaSuccess) return e;
  kernel<<<unsigned(B * H), kAttThreads, smem, s>>>(dqkv, dS, dout, qkv, att, int(T), int(C), int(H));
  return cudaGetLastError();
}

}  // namespace

size_t attention_smem_bytes(int64_t T, int64_t D) {
  return size_t(2 * T * (D + 1) + kWarps * (D + T)) * sizeof(float);
}

cudaError_t attention_forward(float* out, float* att, const float* qkv, int64_t B, int64_t T, int64_t C, int64_t H,
                              bool causal, bool round_bf16, cudaStream_t s) {
  if (B * H == 0 || T == 0) return cudaSuccess;
  return round_bf16 ? forward<true>(out, att, qkv, B, T, C, H, causal, s)
                    : forward<false>(out, att, qkv, B, T, C, H, causal, s);
}
cudaError_t attention_forward_bf16(bf16_t* out, float* att, const bf16_t* qkv, int64_t B, int64_t T, int64_t C,
                                   int64_t H, bool causal, cudaStream_t s) {
  if (B * H == 0 || T == 0) return cudaSuccess;
  return forward<true>(out, att, qkv, B, T, C, H, causal, s);
}
cudaError_t attention_backward(float* dqkv, float* dS, const float* dout, const float* qkv, const float* att, int64_t B,
                               int64_t T, int64_t C, int64_t H, bool round_bf16, cudaStream_t s) {
  if (B * H == 0 || T == 0) return cudaSuccess;
  return round_bf16 ? backward<true>(dqkv, dS, dout, qkv, att, B, T, C, H, s)
                    : backward<false>(dqkv, dS, dout, qkv, att, B, T, C, H, s);
}
cudaError_t attention_backward_bf16(float* dqkv, float* dS, const bf16_t* dout, const bf16_t* qkv, const float* att,
                                    int64_t B, int64_t T, int64_t C, int64_t H, cudaStream_t s) {
  if (B * H == 0 || T == 0) return cudaSuccess;
  return backward<true>(dqkv, dS, dout, qkv, att, B, T, C, H, s);
}

}  // namespace oc::ops::cuda
