#include "model/eva/rope_table.h"

#include <cmath>

#include "core/check.h"

namespace oc {

std::vector<float> eva_rope_table(int grid, int head_dim, int ref_grid) {
  OC_CHECK(grid > 0 && head_dim > 0 && head_dim % 4 == 0 && ref_grid > 0, "rope table: grid {} head width {} ref {}",
           grid, head_dim, ref_grid);
  const int nb = head_dim / 4;
  std::vector<float> bands(static_cast<size_t>(nb)), t(static_cast<size_t>(grid));
  for (int k = 0; k < nb; ++k) bands[size_t(k)] = 1.0f / std::pow(10000.0f, float(k) / float(nb));
  for (int i = 0; i < grid; ++i) t[size_t(i)] = float(i) / float(grid) * float(ref_grid);
  const size_t D = size_t(head_dim);
  std::vector<float> table(size_t(grid) * size_t(grid) * 2 * D);
  for (int i = 0; i < grid; ++i)
    for (int j = 0; j < grid; ++j) {
      float* row = table.data() + (size_t(i) * size_t(grid) + size_t(j)) * 2 * D;
      for (int axis = 0; axis < 2; ++axis)
        for (int k = 0; k < nb; ++k) {
          const float a = t[size_t(axis ? j : i)] * bands[size_t(k)];
          const size_t c = 2 * (size_t(axis) * size_t(nb) + size_t(k));
          row[c] = row[c + 1] = std::sin(a);
          row[D + c] = row[D + c + 1] = std::cos(a);
        }
    }
  return table;
}

}  // namespace oc
