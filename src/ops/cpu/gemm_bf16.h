// The CPU kernels of the bf16-operand GEMMs (contract: GemmBf16Args, GemmBf16ToBf16Args in
// ops/gemm_bf16.h): oneDNN's bf16 matmul primitives, cached per shape, where the CPU has
// AVX512-BF16/AMX; elsewhere the operands widened to fp32 for sgemm (the same math).
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/gemm_bf16.h"

namespace oc::ops {

void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda,
               const bf16* B, int64_t ldb, float* C, int64_t ldc, const Epilogue& e = {});
void gemm_bf16(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K, const bf16* A, int64_t lda,
               const bf16* B, int64_t ldb, bf16* C, int64_t ldc, const Epilogue& e = {});

// Weights read many times between updates (amp_bf16's per-step copies, inference): W is
// [N, K] row-major (nn.Linear's layout), read by gemm_bf16 as B with trans_b and ldb == K.
// prepare_weight_bf16 keeps a copy of W in the layout the native kernel reads fastest
// (oneDNN's blocked AMX layout), used by every such gemm_bf16 call on W until it is
// prepared again or released; call it again after W changes, and release it before W's
// memory is written by anything else or freed. Without native bf16 it does nothing.
void prepare_weight_bf16(const bf16* W, int64_t N, int64_t K);
void release_weight_bf16(const bf16* W);

namespace cpu {
// The number of weights prepared (tests).
int64_t prepared_weight_count();
// Force the widen-to-fp32 + sgemm path even where native bf16 exists (tests run both).
void set_bf16_gemm_fallback(bool on);
// Force oneDNN's bf16 matmul where the CPU has native bf16, also where the automatic choice
// (ops/dnnl_info.h, bf16_gemm_native) is the widened path.
void set_bf16_gemm_native(bool on);
// Whether the amp_bf16 kernels run oneDNN's bf16 primitives now: the automatic choice, or the
// path forced by the two hooks above (the convolutions follow it too, ops/cpu/conv.cpp).
bool bf16_native_selected();
}  // namespace cpu

}  // namespace oc::ops
