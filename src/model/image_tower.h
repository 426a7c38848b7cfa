// The seam between CLIP and its image tower: one interface that every family implements in
// its own folder (src/model/vit/: OpenCLIP's VisionTransformer; src/model/timm_vit/: timm's
// VisionTransformer as OpenCLIP's TimmModel wraps it, the SigLIP configs; src/model/resnet/:
// OpenCLIP's ModifiedResNet, the RN configs; src/model/convnext/: timm's ConvNeXt, the
// convnext_* configs), chosen once from the config by
// make_image_tower (image_tower.cpp, the one place that knows the families). `Clip` holds one
// and never asks which family it is.
//
// A tower owns its part of the parameter table (OpenCLIP's state_dict names and order, the
// binding of its pointers into the arenas, OpenCLIP's initialisation, the groups
// --lock-image-unlocked-groups counts), its activation memory (planned once for a maximum
// batch) and its forward (images -> features [B, E]) and backward (d features -> parameter
// gradients, accumulated).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "model/config.h"
#include "model/params.h"
#include "model/weights_bf16.h"
#include "model/weights_int8.h"
#include "ops/backend.h"
#include "ops/gemm.h"

namespace oc {

// Where a forward's image batch is: host memory (the tower uploads it), or already in the
// backend's memory (Backend::prefetch, awaited by the caller).
enum class ImagesIn { Host, Backend };

// What a tower's activation memory is planned for.
struct TowerPlan {
  int64_t B_max = 0;
  bool training = false;
  bool checkpoint = false;  // --grad-checkpointing: keep block inputs only, recompute in backward
  bool bf16_acts = false;   // amp_bf16 / int8 with bf16 activations (then bf16 or int8 weights are set)
};

// One forward's options.
struct ImageForward {
  bool normalize = true;  // L2-normalize the features
  // The training step's forward (OpenCLIP's module in train mode): patch dropout for the ViT,
  // BatchNorm on batch statistics for ModifiedResNet (unless set_freeze_bn_stats).
  bool train = false;
  ImagesIn in = ImagesIn::Host;  // Backend only where input().backend_images
};

// The image batch a tower takes.
struct ImageInput {
  enum class Layout { NCHW, NHWC };
  // What forward reads with ImagesIn::Host: every tower takes [B, 3, S, S] fp32 (inference,
  // the evals, serve, the tests write that).
  Layout host_layout = Layout::NCHW;
  // What the tower computes in, and the layout of its ImagesIn::Backend images: ModifiedResNet's
  // convolutions run channels-last, so the trainer's loader writes its batches [B, S, S, 3]
  // (data/loader.h BatchMemory::channels_last) and neither side transposes; host images are
  // transposed by the tower.
  Layout compute_layout = Layout::NCHW;
  // Whether forward takes ImagesIn::Backend: the batch (or its uint8 pixels) uploaded ahead by
  // the trainer (Backend::prefetch) and normalised on the backend (step/step_plan.h). A tower
  // may read such images again in backward: the caller keeps them until then.
  bool backend_images = false;
};

class ImageTower {
 public:
  virtual ~ImageTower() = default;
  // The family's name for people ("OpenCLIP ViT", "timm ViT", "ModifiedResNet").
  virtual const char* family() const = 0;
  // Its size in the family's own terms, for one line ("224 px, patch 32, 12 blocks of width 768").
  virtual std::string describe() const = 0;

  // ---- the config ------------------------------------------------------------------
  // OpenCLIP's vision_cfg JSON for this tower, from the ViT-shaped one `v` that
  // model_config_json wrote (image_size, layers, width, head_width, patch_size, mlp_ratio and
  // the ViT options): the family rewrites the keys it spells differently.
  virtual void write_vision_cfg(nlohmann::json*) const {}
  // The family's own bounds on the config's numbers (config_limits.cpp checked the shared ones:
  // sizes in range, the grid), naming the key; `where` names the vision_cfg.
  virtual void check_config(const std::string& where) const = 0;

  // ---- parameters ------------------------------------------------------------------
  // Appends the tower's parameters (and buffers) to `t` under OpenCLIP's state_dict names
  // (visual.*), in state_dict order.
  virtual void add_params(ParamTable& t) const = 0;
  // OpenCLIP's initialisation of parameter `p` (one of the tower's) into `out`, drawing from
  // `rng` (every parameter of the model draws from one stream in table order). False when `p`
  // is not the tower's.
  virtual bool init_param(const ParamInfo& p, const ParamTable& t, std::span<float> out, Rng& rng) const = 0;
  // Binds the tower's parameters into `params` and, when not null, their gradients into
  // `grads` (arenas laid out by `t`). Before plan() and forward().
  virtual void bind(const ParamTable& t, float* params, float* grads) = 0;
  // The transformer blocks (their GEMM weights get the bf16, int8 and prepared fp32 copies),
  // bound by bind(); empty for a tower without any.
  virtual const std::vector<BlockParams>& blocks() const = 0;
  // The state_dict prefix of block i < blocks().size() ("visual.transformer.resblocks.i.").
  virtual std::string block_prefix(int i) const = 0;
  // What OpenCLIP's load_checkpoint does to pretrained weights for this tower before loading
  // them (the ViT's resize_pos_embed to the model's grid); `sd` as model/weights.h's NamedTensors.
  virtual void adapt_pretrained(std::vector<std::pair<std::string, HostTensor>>&) const {}

  // ---- freezing (--lock-image, --lock-image-unlocked-groups) ---------------------------
  // Throws the user error when the tower cannot keep `unlocked` groups trainable.
  virtual void check_unlocked_groups(int unlocked) const = 0;
  // The tower's parameter groups for locking (OpenCLIP's lock: embeddings, blocks, final norm,
  // projection); group_of(name) in [0, groups()), or -1 for a parameter not the tower's. The
  // last `unlocked` groups stay trainable.
  virtual int lock_groups() const = 0;
  virtual int lock_group(const std::string& name) const = 0;
  // OpenCLIP's lock(freeze_bn_stats=True): BatchNorm in eval mode in the training forward too
  // (a tower without BatchNorm ignores it).
  virtual void set_freeze_bn_stats(bool) {}

  // ---- precision -----------------------------------------------------------------------
  // Why --precision int8 cannot run this tower ("" when it can), after "{model} ".
  virtual std::string int8_refusal() const { return {}; }
  // The blocks' bf16 weight copies (amp_bf16), in blocks() order; null: none.
  virtual void set_bf16_weights(const std::vector<BlockWeights16>*) {}
  // --precision int8 inference: the int8 weights (vision()'s blocks, the patch GEMM); null: none.
  virtual void set_int8_weights(const Int8Weights*) {}
  // The weight of the tower's patch embedding GEMM ([W, 3 P P]) that int8 quantizes, or null.
  virtual const float* int8_patch_weight() const { return nullptr; }

  // ---- running -----------------------------------------------------------------------
  // The parameters were written (Clip::params()): whatever the tower prepared from them for
  // inference (ModifiedResNet's folded BatchNorm) is rebuilt before its next forward.
  virtual void weights_changed() {}
  virtual void plan(const TowerPlan& plan) = 0;
  virtual ImageInput input() const = 0;
  // images [B, 3, S, S] (host memory unless opts.in says otherwise; uploaded here) -> features
  // [B, E], valid until the next forward. Keeps what backward needs when planned for training.
  virtual const float* forward(const float* images, int64_t B, ops::Prec prec, const ImageForward& opts) = 0;
  // d_feat [B, E]: gradient w.r.t. the (normalized) features of the last forward; parameter
  // gradients accumulate.
  virtual void backward(const float* d_feat, ops::Prec prec) = 0;
  virtual double mib() const = 0;  // activation memory
  // Forward multiply-accumulates per image (1 MAC = 2 FLOPs, as OpenCLIP's profile).
  virtual double forward_macs() const = 0;
  // f(l) when block l's parameter gradients are final in backward (data-parallel buckets,
  // step/grad_allreduce.cpp); null clears it. A tower whose gradients all complete at the end
  // of backward never calls it.
  virtual void set_block_hook(std::function<void(int64_t)> f) = 0;
  // How many blocks call the hook (their gradients form one bucket each); every other
  // parameter's gradient is complete only when backward returns.
  virtual int64_t hooked_blocks() const { return 0; }

  // ---- patch dropout (OpenCLIP's ViT; the others have none and draw nothing) -------------
  using PatchKeepFn = std::function<void(int64_t B, int64_t Np, int64_t K, int32_t* idx)>;
  // Why a vision_cfg patch_dropout > 0 cannot run ("" where it runs or, as for ModifiedResNet
  // in OpenCLIP, is ignored), after "model {name} ".
  virtual std::string patch_dropout_refusal() const { return {}; }
  virtual void set_patch_dropout_seed(uint64_t) {}
  // How many dropout draws the stream has made (a checkpoint keeps it: exact resume).
  virtual uint64_t patch_dropout_draws() const { return 0; }
  virtual void set_patch_dropout_draws(uint64_t) {}
  // Tests: which patches each sample keeps (K distinct indices in [0, Np) per sample).
  virtual void set_patch_keep(PatchKeepFn);
  // Tokens the block stack ran on in the last forward (0 for a tower without one).
  virtual int64_t tokens_used() const { return 0; }
};

// The model's image tower, chosen from cfg.vision; allocates nothing until plan(). `be` runs
// every op and must outlive the tower.
std::unique_ptr<ImageTower> make_image_tower(const ModelCfg& cfg, ops::Backend& be = ops::default_backend());

}  // namespace oc
