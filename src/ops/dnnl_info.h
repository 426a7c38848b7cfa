// Which oneDNN runs the CPU GEMMs, and which path bf16 GEMMs take (ops/cpu/dnnl_info.cpp).
// dnnl_isa() and native_bf16() are declared in ops/gemm.h.
#pragma once
#include <string>

namespace oc::ops {

// Whether bf16 GEMMs (gemm_bf16, gemm<float> with Prec::BF16) take oneDNN's bf16 matmul (true)
// or widen their operands to fp32 for sgemm (the same products, fp32 accumulation).
// OPENCLIP_BF16_GEMM=native|widened|auto overrides the choice (auto: native on AMX only, where
// it was measured faster; without AMX oneDNN's bf16 kernels were slower than its fp32 sgemm).
bool bf16_gemm_native();
// The oneDNN library loaded at run time ("3.2.0").
std::string dnnl_version();

}  // namespace oc::ops
