// The fast CPU backend: the kernels of ops/cpu/ (oneDNN GEMMs, AVX2/AVX-512 kernels, OpenMP),
// each op's entry point `cpu::run(const XArgs&)` defined beside its kernel (ops/cpu/<family>.cpp).
#pragma once
#include <memory>

#include "ops/backend.h"

namespace oc::ops {
std::unique_ptr<Backend> make_cpu_backend();

namespace cpu {
OC_OPS(OC_DECLARE_KERNEL)
}  // namespace cpu
}  // namespace oc::ops
