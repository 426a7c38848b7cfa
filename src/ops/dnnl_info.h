// Which oneDNN runs the CPU GEMMs, and which path bf16 GEMMs take (ops/cpu/dnnl_info.cpp,
// ops/cpu/gemm.cpp).
#pragma once
#include <string>

namespace oc::ops {

// Whether bf16 GEMMs (gemm_bf16, gemm<float> with Prec::BF16) take oneDNN's bf16 matmul (true)
// or widen their operands to fp32 for sgemm (the same products, fp32 accumulation); the
// convolutions with Prec::BF16 take oneDNN's bf16 primitives or fp32 ones the same way.
// OPENCLIP_BF16_GEMM=native|widened|auto overrides the choice (auto: native on AMX only, where
// it was measured faster; without AMX oneDNN's bf16 kernels were slower than its fp32 sgemm).
bool bf16_gemm_native();
// The oneDNN library loaded at run time ("3.2.0").
std::string dnnl_version();
// The ISA oneDNN dispatches to on this machine ("avx2", "avx512_core_amx", ...), and
// whether bf16 matmuls run natively.
std::string dnnl_isa();
bool native_bf16();
// The int8 path oneDNN's s8 matmul takes here: "AMX-INT8", "AVX512-VNNI", "AVX-VNNI" or
// "none" (no VNNI: --precision int8 warns and runs amp_bf16/fp32 instead). int8_native() is
// whether it is not "none"; OPENCLIP_INT8=off makes it "none" (tests of the fallback).
std::string int8_path();
bool int8_native();
// The CPU backend's amp_bf16 / int8 attention kernel here: "amx", "avx512" or "sgemm"
// (ops/cpu/attention.h; not oneDNN, reported beside its paths by `openclip info`).
std::string attention_kernel();

}  // namespace oc::ops
