// The one place that knows the image tower families: a family is a folder under src/model/
// and one line here.
#include "model/image_tower.h"

#include "core/check.h"
#include "model/eva/config_eva.h"
#include "model/eva/eva_tower.h"
#include "model/convnext/config_convnext.h"
#include "model/convnext/convnext_tower.h"
#include "model/resnet/modified_resnet.h"
#include "model/timm_vit/timm_vit_tower.h"
#include "model/vit/vit_tower.h"

namespace oc {

void ImageTower::set_patch_keep(PatchKeepFn) { OC_FAIL("this image tower has no patch dropout"); }

std::unique_ptr<ImageTower> make_image_tower(const ModelCfg& cfg, ops::Backend& be) {
  if (cfg.vision.resnet()) return std::make_unique<ResNetTower>(cfg, be);
  if (is_eva(cfg.vision)) return std::make_unique<EvaTower>(cfg, be);
  if (is_convnext(cfg.vision)) return std::make_unique<ConvNextTower>(cfg, be);
  if (cfg.vision.timm()) return std::make_unique<TimmVitTower>(cfg, be);
  return std::make_unique<VisionTower>(cfg, be);
}

}  // namespace oc
