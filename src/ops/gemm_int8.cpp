#include "ops/gemm_int8.h"

#include "core/check.h"
#include "ops/backend.h"
#include "ops/cpu/gemm_int8.h"
#include "ops/dnnl_info.h"

namespace oc::ops {

namespace {
bool is_cpu(const Backend& be) { return be.name() == "cpu"; }
}  // namespace

bool has_int8(const Backend& be) { return is_cpu(be) && int8_native(); }

std::unique_ptr<Int8Weight> quantize_weight_int8(Backend& be, const QuantizeWeightInt8Args& a) {
  if (!is_cpu(be))
    OC_USER_ERROR("--precision int8: the {} backend has no int8 GEMMs (weight {}); use --device cpu", be.name(),
                  a.name);
  return cpu::quantize_weight_int8(a);
}

void gemm_int8(Backend& be, const GemmInt8Args& a) {
  if (!is_cpu(be)) OC_USER_ERROR("--precision int8: the {} backend has no int8 GEMMs; use --device cpu", be.name());
  cpu::gemm_int8(a);
}

void layernorm_int8(Backend& be, const LayerNormInt8Args& a) {
  if (!is_cpu(be)) OC_USER_ERROR("--precision int8: the {} backend has no int8 kernels; use --device cpu", be.name());
  cpu::layernorm_int8(a);
}

void attention_int8(Backend& be, const AttentionInt8Args& a) {
  if (!is_cpu(be)) OC_USER_ERROR("--precision int8: the {} backend has no int8 kernels; use --device cpu", be.name());
  cpu::attention_int8(a);
}

}  // namespace oc::ops
