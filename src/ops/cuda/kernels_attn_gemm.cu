// The memory passes of self-attention as batched GEMMs (attention_gemm.cpp): rows [B, T, parts*C]
// to head-major [parts][B*H][T][D] operands and back, the row softmax over the GEMM's scores
// and its backward. One warp per score row; the max is NaN-sticky and masked keys get P = 0
// exactly as kernels_attention.cu and ops/ref/attention.cpp, so NaN/Inf reach the same outputs.
// Float arithmetic in the order of kernels_attention.cu: s * scale comes from the GEMM's alpha,
// P = exp(s - max) / sum, dS = scale * P * (dP - sum_j dP P).
#include "ops/cuda/attn_common.cuh"
#include "ops/cuda/kernels_fused.h"
#include "ops/cuda/launch.cuh"

namespace oc::ops::cuda {
namespace {

constexpr int kRowsPerBlock = kThreads / 32;  // one warp per score row

// Which head-major element the row-major element i of [B, T, parts*C] is.
struct HeadIndex {
  int64_t part, bh, t, d;
};
__device__ inline HeadIndex head_index(int64_t i, int64_t T, int64_t C, int64_t H, int parts) {
  const int64_t D = C / H, w = int64_t(parts) * C, bt = i / w, c3 = i % w, c = c3 % C;
  return {c3 / C, (bt / T) * H + c / D, bt % T, c % D};
}
__device__ inline int64_t head_offset(const HeadIndex& x, int64_t BH, int64_t T, int64_t D) {
  return ((x.part * BH + x.bh) * T + x.t) * D + x.d;
}

// Reads in the rows' order (coalesced), writes D-long runs of the head-major layout.
template <class Op, class In>
__global__ void k_pack(Op* dst, const In* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts) {
  GRID_STRIDE(i, B * T * parts * C) {
    const HeadIndex x = head_index(i, T, C, H, parts);
    st(dst, head_offset(x, B * H, T, C / H), ld(src, i));  // st to bf16 rounds to nearest even
  }
}
template <class Out>
__global__ void k_unpack(Out* dst, const float* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts) {
  GRID_STRIDE(i, B * T * parts * C) {
    const HeadIndex x = head_index(i, T, C, H, parts);
    st(dst, i, src[head_offset(x, B * H, T, C / H)]);
  }
}

// att[r, :T] = P (fp32), pop[r, :T] = P as the P@V operand (when non-null). Row r is query
// r % T of its head; causal rows see keys j <= i.
template <class Op>
__global__ void k_softmax(float* att, Op* pop, const float* S, int64_t rows, int T, int64_t lds, bool causal) {
  const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const int i = int(r % T), n = causal ? i + 1 : T;
  const float* s = S + r * lds;
  float mx = -INFINITY;
  for (int j = lane; j < n; j += 32) mx = nan_max(mx, s[j]);
  mx = warp_max(mx);
  float sum = 0.0f;
  for (int j = lane; j < n; j += 32) sum += expf(s[j] - mx);
  sum = warp_sum(sum);
  for (int j = lane; j < T; j += 32) {
    const float p = j < n ? expf(s[j] - mx) / sum : 0.0f;
    att[r * T + j] = p;
    if (pop) st(pop, r * lds + j, p);
  }
}

// ds[r, :T] = scale * P * (dP - sum_j dP P) (rounded to bf16 when Op is), pop[r, :T] = P as an
// operand (when non-null). ds may be dP itself (fp32): each lane reads its elements before
// writing them.
template <class Op>
__global__ void k_softmax_bwd(Op* ds, Op* pop, const float* dP, const float* att, int64_t rows, int T, int64_t lds,
                              float scale) {
  const int64_t r = int64_t(blockIdx.x) * kRowsPerBlock + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (r >= rows) return;
  const float* g = dP + r * lds;
  const float* P = att + r * T;
  float dot = 0.0f;
  for (int j = lane; j < T; j += 32) dot += g[j] * P[j];
  dot = warp_sum(dot);
  for (int j = lane; j < T; j += 32) {
    const float p = P[j];
    st(ds, r * lds + j, scale * p * (g[j] - dot));
    if (pop) st(pop, r * lds + j, p);
  }
}

unsigned row_blocks(int64_t rows) { return unsigned((rows + kRowsPerBlock - 1) / kRowsPerBlock); }

}  // namespace

#define OC_PACK(OP, IN)                                                                                           \
  void attn_pack(OP* dst, const IN* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts, cudaStream_t s) { \
    if (B * T * C > 0) k_pack<<<blocks_for(B* T* parts* C), kThreads, 0, s>>>(dst, src, B, T, C, H, parts);       \
  }
OC_PACK(float, float)
OC_PACK(bf16_t, float)
OC_PACK(bf16_t, bf16_t)
#undef OC_PACK

#define OC_UNPACK(OUT)                                                                                        \
  void attn_unpack(OUT* dst, const float* src, int64_t B, int64_t T, int64_t C, int64_t H, int parts,         \
                   cudaStream_t s) {                                                                          \
    if (B * T * C > 0) k_unpack<<<blocks_for(B* T* parts* C), kThreads, 0, s>>>(dst, src, B, T, C, H, parts); \
  }
OC_UNPACK(float)
OC_UNPACK(bf16_t)
#undef OC_UNPACK

void attn_softmax(float* att, float* pop, const float* S, int64_t rows, int64_t T, int64_t lds, bool causal,
                  cudaStream_t s) {
  if (rows > 0) k_softmax<<<row_blocks(rows), kThreads, 0, s>>>(att, pop, S, rows, int(T), lds, causal);
}
void attn_softmax(float* att, bf16_t* pop, const float* S, int64_t rows, int64_t T, int64_t lds, bool causal,
                  cudaStream_t s) {
  if (rows > 0) k_softmax<<<row_blocks(rows), kThreads, 0, s>>>(att, pop, S, rows, int(T), lds, causal);
}
void attn_softmax_backward(float* ds, float* pop, const float* dP, const float* att, int64_t rows, int64_t T,
                           int64_t ld, float scale, cudaStream_t s) {
  if (rows > 0) k_softmax_bwd<<<row_blocks(rows), kThreads, 0, s>>>(ds, pop, dP, att, rows, int(T), ld, scale);
}
void attn_softmax_backward(bf16_t* ds, bf16_t* pop, const float* dP, const float* att, int64_t rows, int64_t T,
                           int64_t ld, float scale, cudaStream_t s) {
  if (rows > 0) k_softmax_bwd<<<row_blocks(rows), kThreads, 0, s>>>(ds, pop, dP, att, rows, int(T), ld, scale);
}

}  // namespace oc::ops::cuda
