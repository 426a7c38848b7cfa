#include "train/freeze.h"

#include <cstring>
#include <string>

#include "core/check.h"

namespace oc {

namespace {
// Group index of a parameter in a tower with L blocks: 0 = embeddings (+ln_pre), 1..L-1 =
// blocks 0..L-2, L = [last block, final LayerNorm], L+1 = projection. -1: not this tower.
int group_of(const std::string& name, bool vision, int L) {
  // CustomTextCLIP (custom_text: the SigLIP configs) keeps the text tower under text.*.
  const std::string n = !vision && name.rfind("text.", 0) == 0 ? name.substr(5) : name;
  const std::string pre = vision ? "visual." : "";
  if (vision && n.rfind("visual.", 0) != 0) return -1;
  if (vision && n.rfind("visual.trunk.", 0) == 0) return 0;  // a timm tower: locked whole (trainable_mask)
  const std::string blocks = pre + "transformer.resblocks.";
  if (n.rfind(blocks, 0) == 0) {
    int b = std::stoi(n.substr(blocks.size()));
    return b == L - 1 ? L : b + 1;
  }
  if (vision) {
    if (n == "visual.conv1.weight" || n == "visual.class_embedding" || n == "visual.positional_embedding" ||
        n.rfind("visual.ln_pre.", 0) == 0)
      return 0;
    if (n.rfind("visual.ln_post.", 0) == 0) return L;
    if (n == "visual.proj") return L + 1;
    return -1;
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
  if (a.lock_image && a.lock_image_unlocked_groups > 0 && model.cfg().vision.timm())
    OC_USER_ERROR("--lock-image-unlocked-groups with the timm image tower of {} is not implemented (OpenCLIP groups "
                  "its parameters with timm's group_matcher); --lock-image alone locks the whole tower",
                  model.cfg().name);
  const int Lv = model.cfg().vision.layers, Lt = model.cfg().text.layers;
  const int nv = Lv + 2, nt = Lt + 2;  // number of groups
  for (size_t i = 0; i < ps.size(); ++i) {
    const std::string& n = ps[i].name;
    if (a.lock_image && model.cfg().vision.resnet()) {
      // ModifiedResNet.lock: every parameter frozen; partial locking is refused (asserted).
      if (a.lock_image_unlocked_groups != 0)
        OC_USER_ERROR("--lock-image-unlocked-groups {}: a ResNet image tower ({}) can only be locked whole (OpenCLIP's "
                      "ModifiedResNet.lock asserts unlocked_groups == 0)",
                      a.lock_image_unlocked_groups, model.cfg().name);
      if (n.rfind("visual.", 0) == 0) mask[i] = false;
    } else if (a.lock_image) {
      int g = group_of(n, true, Lv);
      if (g >= 0) mask[i] = a.lock_image_unlocked_groups > 0 && g >= nv - a.lock_image_unlocked_groups;
    }
    if (a.lock_text) {
      int g = group_of(n, false, Lt);
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
