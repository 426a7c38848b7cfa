// The rotary table of timm 0.9.16's RotaryEmbeddingCat(dim, in_pixels=False, feat_shape=(G, G),
// ref_feat_shape=(R, R)), its cached pos_embed buffer, in timm's float32 arithmetic:
//   bands[k] = 1 / 10000^(k / (dim/4)), k < dim/4;  t[i] = i / G * R
//   row (i, j) of the grid: angles (t[i] * bands, t[j] * bands), each repeated twice -> dim
//   table[(i, j)] = [sin(angles), cos(angles)]          -> [G*G, 2 dim]
#pragma once
#include <vector>

namespace oc {

std::vector<float> eva_rope_table(int grid, int head_dim, int ref_grid);

}  // namespace oc
