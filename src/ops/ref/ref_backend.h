// The reference backend: plain loops, one readable function per op (ops/ref/*.cpp).
#pragma once
#include <memory>

#include "ops/backend.h"

namespace oc::ops {
std::unique_ptr<Backend> make_ref_backend();
}  // namespace oc::ops
