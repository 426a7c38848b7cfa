#include "core/parallel.h"

#include <omp.h>

namespace oc {

int num_threads() { return omp_get_max_threads(); }
void set_num_threads(int n) {
  if (n > 0) omp_set_num_threads(n);
}

}  // namespace oc
