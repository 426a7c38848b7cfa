// The CPU attention kernels (contract: ops/attention.h). The fp32 ones are templates for float
// and double (softmax in the op's type); the amp_bf16 ones run, on CPUs with AVX-512, one
// register-tiled kernel per (batch, head) with the fp32 softmax fused, its products on AMX
// tiles where the CPU has them (attention_bf16_avx512.cpp), elsewhere widened bf16 through sgemm per head.
#pragma once
#include <cstdint>

#include "core/bf16.h"
#include "ops/attention.h"

namespace oc::ops {

template <typename T>
void attention_forward(T* out, T* att, const T* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H, bool causal,
                       Prec prec = Prec::F32);
template <typename T>
void attention_backward(T* dqkv, T* scratch, const T* dout, const T* qkv, const T* att, int64_t B, int64_t Tn,
                        int64_t C, int64_t H, bool causal, Prec prec = Prec::F32);

void attention_forward_bf16(bf16* out, float* att, const bf16* qkv, int64_t B, int64_t Tn, int64_t C, int64_t H,
                            bool causal);
void attention_backward_bf16(float* dqkv, const bf16* dout, const bf16* qkv, const float* att, int64_t B, int64_t Tn,
                             int64_t C, int64_t H);

namespace cpu {
// The kernel attention_*_bf16 runs on this CPU: "amx" (the forward's two products on AMX-BF16
// tiles, the rest as "avx512"; where the CPU has AMX and Linux grants its tile state),
// "avx512" (register-tiled fp32 FMAs on widened bf16 with the softmax fused, where cpuid
// reports AVX-512 F/BW/VL/DQ) or "sgemm" (bf16 widened to fp32 in scratch, dnnl_sgemm per
// head, a separate softmax pass).
const char* attention_bf16_kernel();
// Force the sgemm kernel even where AVX-512 exists (tests run every kernel the CPU has).
void set_attention_bf16_fallback(bool on);
// Off: the avx512 kernel where the CPU has AMX (tests).
void set_attention_bf16_amx(bool on);
}  // namespace cpu

}  // namespace oc::ops
