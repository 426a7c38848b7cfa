// OpenCLIP's resize_pos_embed / resize_text_pos_embed (model.py, 2.24 and 3.x alike), which
// its load_checkpoint applies to pretrained weights whose positional embeddings do not fit the
// model (--force-image-size, --force-context-length):
//  - image: the class token's row kept, the g x g grid of rows resized to the model's grid by
//    F.interpolate(mode='bicubic', antialias=True, align_corners=False) -- resize_pos_embed's
//    defaults, which load_checkpoint does not override: torch's separable antialiased filter
//    (PIL's: cubic a = -0.5, support 2 * max(1, in/out), weights normalised inside the
//    input) in both directions, also when enlarging;
//  - text: the [L, W] rows resized to the model's L by F.interpolate(mode='linear',
//    antialias=False, align_corners=False).
#pragma once
#include "core/tensor.h"

namespace oc {

// `old` is [1 + g*g, D] (any float dtype); the result is fp32 [1 + grid*grid, D].
HostTensor resize_pos_embed(const HostTensor& old, int grid, const char* name);
// `old` is [L, W]; the result is fp32 [num_pos, W].
HostTensor resize_text_pos_embed(const HostTensor& old, int num_pos);

}  // namespace oc
