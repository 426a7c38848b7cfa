// GEMMs whose operands are already bfloat16 (amp_bf16: weights converted once per step,
// activations written in bf16 by the op that produces them), with the epilogue fused:
// bias, the sum with the old C, GELU/QuickGELU, and the output stored in fp32 or bf16.
// Products are accumulated in fp32 (bf16 values are exact in fp32), so on CPUs without
// native bf16 the operands are widened to fp32 and run through sgemm: the same math.
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/activation.h"

namespace oc::ops {

struct Epilogue {
  const float* bias = nullptr;  // [N], added to every row
  float beta = 0.0f;            // C = acc + bias + beta * C (fp32 output only)
  bool act = false;             // then C = act_fn(C)
  Act act_fn = Act::Gelu;
};

// C[M,N] = epilogue(op(A) @ op(B)), row-major, fp32; A is [M,K] (or [K,M] when ta), B is
// [K,N] (or [N,K] when tb); lda/ldb/ldc are row strides in elements.
struct GemmBf16Args {
  bool ta, tb;
  int64_t M, N, K;
  const bf16* A;
  int64_t lda;
  const bf16* B;
  int64_t ldb;
  float* C;
  int64_t ldc;
  Epilogue e = {};
};

// Same, the fp32 result rounded to bf16 (round to nearest even) when stored. e.beta must be 0.
struct GemmBf16ToBf16Args {
  bool ta, tb;
  int64_t M, N, K;
  const bf16* A;
  int64_t lda;
  const bf16* B;
  int64_t ldb;
  bf16* C;
  int64_t ldc;
  Epilogue e = {};
};

}  // namespace oc::ops
