// Threading: OpenMP underneath. Static schedules only, so a given thread count always
// splits work the same way (bitwise determinism).
#pragma once
#include <cstdint>

namespace oc {

int num_threads();
void set_num_threads(int n);  // also what oneDNN uses (it shares the OpenMP runtime)

}  // namespace oc
