// --precision as OpenCLIP names it, mapped to what the CPU backend computes.
#pragma once
#include <string>

#include "ops/gemm.h"

namespace oc {

enum class Precision {
  Fp32,     // fp32 everywhere
  AmpBf16,  // fp32 master weights; matmul inputs rounded to bf16, fp32 accumulation;
            // LayerNorm, softmax, loss and the optimizer in fp32 (autocast to bf16)
  PureBf16, // as AmpBf16, and the weights themselves are kept at bf16 values (rounded after
            // every optimizer step), as a model cast with .to(bfloat16)
};

// Accepts fp32, amp, amp_bf16, amp_bfloat16, bf16, pure_bf16. On a CPU, OpenCLIP's `amp`
// (fp16 autocast + GradScaler on CUDA) means bf16 autocast; `note` says so for the log.
// fp16/pure_fp16 are rejected with a reason.
Precision parse_precision(const std::string& name, std::string* note = nullptr);
const char* precision_name(Precision p);
inline ops::Prec matmul_prec(Precision p) { return p == Precision::Fp32 ? ops::Prec::F32 : ops::Prec::BF16; }

}  // namespace oc
