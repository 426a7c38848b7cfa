// The ops of OpenCLIP's VisionTransformer / ResidualAttentionBlock options: LayerScale
// (ls_init_value), the mean over patch tokens (pool_type "avg") and the token gather of
// PatchDropout.
#pragma once
#include <cstdint>

namespace oc::ops {

// LayerScale: x[N,C] *= gamma[C] (in place).
template <typename T>
void layer_scale_forward(T* x, const T* gamma, int64_t N, int64_t C);
// o_dx[N,C] holds the unscaled branch output o on entry and gamma * dy on return (one
// buffer serves both); dgamma[C] += sum_n dy[n] * o[n].
template <typename T>
void layer_scale_backward(T* dgamma, T* o_dx, const T* dy, const T* gamma, int64_t N, int64_t C);

// out[b] = mean over t in [first, Tn) of inp[b, t] for inp[B,Tn,C].
template <typename T>
void mean_tokens_forward(T* out, const T* inp, int64_t B, int64_t Tn, int64_t first, int64_t C);
// dinp[b, t] += dout[b] / (Tn - first) for t >= first (ACCUMULATES).
template <typename T>
void mean_tokens_backward(T* dinp, const T* dout, int64_t B, int64_t Tn, int64_t first, int64_t C);

// out[b, k] = inp[b, idx[b*K + k]] for inp[B,Tn,C], out[B,K,C].
template <typename T>
void gather_tokens_forward(T* out, const T* inp, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C);
// dinp[b, idx[b*K + k]] += dout[b, k] (ACCUMULATES; rows not gathered are left as they are).
template <typename T>
void gather_tokens_backward(T* dinp, const T* dout, const int32_t* idx, int64_t B, int64_t Tn, int64_t K, int64_t C);

}  // namespace oc::ops
