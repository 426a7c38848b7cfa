// Whether the cuda backend runs here, and why not: the tests labelled `cuda` skip with it.
#pragma once
#include <string>

#include "ops/registry.h"

namespace oc::test {

// "" when cuda is registered and available; else the reason ("built without CUDA", "no visible GPU ...").
inline std::string cuda_missing() {
  for (const ops::BackendInfo& b : ops::backend_list())
    if (b.name == "cuda") return b.available ? "" : b.description;
  return "this build has no CUDA";
}

}  // namespace oc::test
