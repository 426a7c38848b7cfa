#include "model/precision.h"

#include "core/check.h"

namespace oc {

Precision parse_precision(const std::string& name, std::string* note) {
  if (note) note->clear();
  if (name == "fp32") return Precision::Fp32;
  if (name == "amp_bf16" || name == "amp_bfloat16") return Precision::AmpBf16;
  if (name == "amp") {
    if (note) *note = "precision 'amp' means fp16 autocast with a GradScaler on CUDA; on the CPU it runs as bf16 autocast (amp_bf16)";
    return Precision::AmpBf16;
  }
  if (name == "bf16" || name == "pure_bf16") return Precision::PureBf16;
  if (name == "fp16" || name == "pure_fp16")
    OC_USER_ERROR("--precision {}: fp16 weights are not supported on the CPU backend; use amp_bf16 or fp32", name);
  OC_USER_ERROR("--precision {}: unknown; choose one of amp, amp_bf16, amp_bfloat16, bf16, pure_bf16, fp32", name);
}

const char* precision_name(Precision p) {
  switch (p) {
    case Precision::Fp32: return "fp32";
    case Precision::AmpBf16: return "amp_bf16";
    case Precision::PureBf16: return "pure_bf16";
  }
  return "?";
}

}  // namespace oc
