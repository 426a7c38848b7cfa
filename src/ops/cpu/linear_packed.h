// fp32 inference weights kept in oneDNN's own layout (Backend::prepare_weight_f32 on cpu).
#pragma once
#include <cstdint>

namespace oc::ops {

// W [N, K] (an nn.Linear weight, read as x @ W^T) reordered once into the blocked layout a
// oneDNN matmul on that shape wants; replaces an earlier copy of the same W. Release before W
// is written or freed.
void prepare_weight_f32(const float* W, int64_t N, int64_t K);
void release_weight_f32(const float* W);
// out[M,N] = inp[M,K] @ W^T + bias through the prepared copy of W; false (nothing done) when W
// was not prepared with this N and K.
bool linear_forward_prepared(float* out, const float* inp, const float* W, const float* bias, int64_t M, int64_t K,
                             int64_t N);
int64_t prepared_weight_f32_count();  // tests

}  // namespace oc::ops
