#include "train/freeze.h"

#include <cstring>
#include <string>

#include "core/check.h"

namespace oc {

namespace {
// Group index of a text tower parameter with L blocks: 0 = embeddings, 1..L-1 = blocks 0..L-2,
// L = [last block, ln_final], L+1 = projection. -1: not the text tower's. (The image tower
// numbers its own: ImageTower::lock_group.)
int text_group(const std::string& name, int L) {
  // CustomTextCLIP (custom_text: the SigLIP configs) keeps the text tower under text.*.
  const std::string n = name.rfind("text.", 0) == 0 ? name.substr(5) : name;
  const std::string blocks = "transformer.resblocks.";
  if (n.rfind(blocks, 0) == 0) {
    int b = std::stoi(n.substr(blocks.size()));
    return b == L - 1 ? L : b + 1;
  }
  if (n == "token_embedding.weight" || n == "positional_embedding" || n == "cls_emb") return 0;
  if (n.rfind("ln_final.", 0) == 0) return L;
  if (n == "text_projection" || n.rfind("text_projection.", 0) == 0) return L + 1;  // Parameter or Linear
  return -1;
}
}  // namespace

std::vector<bool> trainable_mask(const Clip& model, const TrainArgs& a) {
  const auto& ps = model.table().params;
  std::vector<bool> mask(ps.size(), true);
  // OpenCLIP 3.x (lock_text_tower); 2.24 cannot lock a built-in CLIP text tower at all (no
  // lock_text_tower method: AttributeError).
  if (a.lock_text && !a.lock_text_freeze_layer_norm)
    OC_USER_ERROR("--lock-text needs --lock-text-freeze-layer-norm (OpenCLIP 3.x asserts it: 'Unfreezing LayerNorm "
                  "is not supported. LayerNorm treated like other weights.')");
  const ImageTower& image = model.vision_tower();
  if (a.lock_image) image.check_unlocked_groups(a.lock_image_unlocked_groups);
  const int Lt = model.cfg().text.layers;
  const int nv = image.lock_groups(), nt = Lt + 2;  // number of groups
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::string& n = ps[i].name;
    if (a.lock_image) {
      int g = image.lock_group(n);
      if (g >= 0) mask[i] = a.lock_image_unlocked_groups > 0 && g >= nv - a.lock_image_unlocked_groups;
    }
    if (a.lock_text) {
      int g = text_group(n, Lt);
      // Unlocked groups are trainable whole, LayerNorms included (3.x's _unlock).
      if (g >= 0) mask[i] = a.lock_text_unlocked_layers > 0 && g >= nt - a.lock_text_unlocked_layers;
    }
  }
  return mask;
}

void mask_frozen_grads(Clip& model, const std::vector<bool>& trainable) {
  const auto& ps = model.table().params;
  for (size_t i = 0; i < ps.size() && i < trainable.size(); ++i)
    if (!trainable[i]) model.backend().zero(model.grads() + ps[i].offset, sizeof(float) * ps[i].numel);
}

}  // namespace oc
