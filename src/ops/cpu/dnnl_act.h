// The oneDNN eltwise post-op of each activation (the fused GEMM epilogues of gemm_bf16.cpp and
// gemm_int8.cpp): GELU erf, QuickGELU as swish(1.702), GELU's tanh approximation.
#pragma once
#include <dnnl.hpp>

#include "core/check.h"
#include "ops/activation.h"

namespace oc::ops::cpu {

inline void append_act_post_op(dnnl::post_ops& po, Act act) {
  switch (act) {
    case Act::Gelu:
      return po.append_eltwise(dnnl::algorithm::eltwise_gelu_erf, 0.0f, 0.0f);
    case Act::QuickGelu:
      return po.append_eltwise(dnnl::algorithm::eltwise_swish, 1.702f, 0.0f);  // x sigmoid(1.702 x)
    case Act::GeluTanh:
      return po.append_eltwise(dnnl::algorithm::eltwise_gelu_tanh, 0.0f, 0.0f);
  }
  OC_FAIL("unknown activation {}", int(act));
}

}  // namespace oc::ops::cpu
