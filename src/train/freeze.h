// Parameter freezing for --lock-image / --lock-text (LiT; OpenCLIP calls it "locking" a tower,
// unrelated to file locks, core/folder_lock.h): which parameters train. Groups as OpenCLIP's
// VisionTransformer.lock and CLIP.lock_text_tower define them; the last N groups stay
// trainable with --lock-image-unlocked-groups / --lock-text-unlocked-layers.
#pragma once
#include <vector>

#include "model/clip.h"
#include "train/args.h"

namespace oc {

// One flag per ParamTable entry (true = trainable). Frozen parameters are left out of the
// optimizer, as OpenCLIP builds its groups from requires_grad parameters only.
std::vector<bool> trainable_mask(const Clip& model, const TrainArgs& a);
// Zeroes the gradients of frozen parameters (they also stay out of the gradient norm).
void mask_frozen_grads(Clip& model, const std::vector<bool>& trainable);

}  // namespace oc
