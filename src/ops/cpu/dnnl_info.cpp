// What oneDNN will run on this machine, and which oneDNN it is.
#include <fmt/format.h>

#include <cstdlib>
#include <dnnl.hpp>

#include "core/check.h"
#include "core/machine.h"
#include "ops/dnnl_info.h"
#include "ops/cpu/attention.h"
#include "ops/cpu/gemm.h"

namespace oc::ops {

std::string dnnl_isa() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::sse41: return "sse41";
    case dnnl::cpu_isa::avx: return "avx";
    case dnnl::cpu_isa::avx2: return "avx2";
    case dnnl::cpu_isa::avx2_vnni: return "avx2_vnni";
    case dnnl::cpu_isa::avx2_vnni_2: return "avx2_vnni_2";
    case dnnl::cpu_isa::avx512_core: return "avx512_core";
    case dnnl::cpu_isa::avx512_core_vnni: return "avx512_core_vnni";
    case dnnl::cpu_isa::avx512_core_bf16: return "avx512_core_bf16";
    case dnnl::cpu_isa::avx512_core_fp16: return "avx512_core_fp16";
    case dnnl::cpu_isa::avx512_core_amx: return "avx512_core_amx";
    case dnnl::cpu_isa::avx512_core_amx_fp16: return "avx512_core_amx_fp16";
    default: return "other";
  }
}

// Every ISA from AVX512-BF16 up has bf16 dot products (AVX512-FP16 CPUs have AVX512-BF16 too).
bool native_bf16() {
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_fp16:
    case dnnl::cpu_isa::avx512_core_amx:
    case dnnl::cpu_isa::avx512_core_amx_fp16: return true;
    default: return false;
  }
}

std::string int8_path() {
  const char* env = std::getenv("OPENCLIP_INT8");
  if (env && std::string(env) == "off") return "none";
  switch (dnnl::get_effective_cpu_isa()) {
    case dnnl::cpu_isa::avx2_vnni:
    case dnnl::cpu_isa::avx2_vnni_2:
      return "AVX-VNNI";
    case dnnl::cpu_isa::avx512_core_vnni:
    case dnnl::cpu_isa::avx512_core_bf16:
    case dnnl::cpu_isa::avx512_core_fp16:
      return "AVX512-VNNI";
    case dnnl::cpu_isa::avx512_core_amx:
    case dnnl::cpu_isa::avx512_core_amx_fp16:
      return "AMX-INT8";
    default:
      return "none";
  }
}

bool int8_native() { return int8_path() != "none"; }

std::string attention_kernel() { return cpu::attention_bf16_kernel(); }

bool bf16_gemm_native() {
  static const bool native = [] {
    const char* env = std::getenv("OPENCLIP_BF16_GEMM");
    const std::string want = env && *env ? env : "auto";
    OC_CHECK(want == "auto" || want == "native" || want == "widened",
             "OPENCLIP_BF16_GEMM={}: expected auto, native or widened", want);
    if (want == "widened") return false;
    if (want == "native") return native_bf16();
    // auto, by measurement (docs/BENCHMARKS.md, "GEMM shapes"): native with AMX, and with
    // AVX512-BF16 on AMD (Zen 5, 2026-12-02: oneDNN 3.2's bf16 matmul 0.42-0.78 TFLOP/s on 2
    // cores, sgemm on the widened operands 0.15-0.40; amp_bf16 ViT-B-32 training at batch 64
    // 15.0 samples/s native, 8.2 widened). Widened on Intel's AVX512-BF16 without AMX (an
    // Emerald Rapids with AMX hidden, 2026-12-02: bf16 matmul 0.06-0.08 TFLOP/s per core,
    // widened sgemm 0.10-0.15).
    const dnnl::cpu_isa isa = dnnl::get_effective_cpu_isa();
    if (isa == dnnl::cpu_isa::avx512_core_amx || isa == dnnl::cpu_isa::avx512_core_amx_fp16) return true;
    return native_bf16() && machine_info().vendor == "AuthenticAMD";
  }();
  return native;
}

std::string dnnl_version() {
  const dnnl_version_t* v = dnnl::version();
  return fmt::format("{}.{}.{}", v->major, v->minor, v->patch);
}

}  // namespace oc::ops
