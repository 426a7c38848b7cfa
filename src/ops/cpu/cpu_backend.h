// The fast CPU backend: the free functions of ops/*.h as implemented in ops/cpu/.
#pragma once
#include <memory>

#include "ops/backend.h"

namespace oc::ops {
std::unique_ptr<Backend> make_cpu_backend();
}  // namespace oc::ops
