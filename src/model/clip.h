// CLIP = vision tower + text tower + logit_scale, with parameters (and, for training,
// gradients) in arenas laid out by OpenCLIP's state_dict. The loss lives outside the model
// (ops/loss.h; the Loss implementations and step plans in step/) so data-parallel and
// accumulation variants can reuse the towers.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "model/config.h"
#include "model/image_tower.h"
#include "model/params.h"
#include "model/precision.h"
#include "model/text_tower.h"
#include "model/weights_bf16.h"
#include "model/weights_int8.h"

namespace oc {

class Clip {
 public:
  // Parameters allocated from `be`, zero: call init() or load weights. Every op of the model
  // runs on `be` (--device), which must outlive the model.
  explicit Clip(ModelCfg cfg, ops::Backend& be = ops::default_backend());
  Clip(const Clip&) = delete;
  Clip& operator=(const Clip&) = delete;
  ~Clip() { release_f32(); }

  const ModelCfg& cfg() const { return cfg_; }
  ops::Backend& backend() const { return *be_; }
  const ParamTable& table() const { return table_; }
  // Writers go through params() (which marks the bf16 weight copies stale).
  float* params() {
    w16_stale_vision_ = w16_stale_text_ = true;
    w8_stale_vision_ = w8_stale_text_ = true;
    release_f32();  // the prepared fp32 copies would outlive what is written now
    if (vision_) vision_->weights_changed();
    return params_.data();
  }
  const float* params() const { return params_.data(); }
  const ClipParams& p() const { return p_; }
  void init(uint64_t seed);

  // Training: allocates gradients and activation memory for batches up to B_max.
  // checkpoint: --grad-checkpointing (keep block inputs only, recompute in backward).
  void plan_training(int64_t B_max, bool checkpoint = false);
  // Inference: activation memory for chunks of up to B_max (one layer's worth).
  void plan_inference(int64_t B_max);
  bool training() const { return training_; }
  float* grads() { return grads_.data(); }
  const ClipParams& g() const { return g_; }
  void zero_grads() { grads_.zero(); }

  // Re-plans the activation memory when the bf16-ness changes after planning. Int8 (inference
  // only) is refused for an image tower that cannot run it (int8_refusal), and on a backend without int8
  // GEMMs; on a CPU without VNNI it warns and runs amp_bf16 (native bf16) or fp32 instead.
  void set_precision(Precision p);
  Precision precision() const { return prec_; }
  // Static activation scales for int8 (model/int8_scales.h; null: dynamic, per row). Checked
  // against this model: its config name, and exactly one scale per int8 GEMM (an error names
  // the file and the first tensor missing or not this model's).
  void set_int8_scales(std::shared_ptr<const Int8Scales> s);
  const Int8Scales* int8_scales() const { return scales_.get(); }
  // The precision that runs, for logs: "int8 static (FILE)", "int8 dynamic", or its name.
  std::string precision_label() const;

  // Forward of both towers on one batch; returns L2-normalized features [B,E] (valid until
  // the next forward). Keeps the activations backward needs.
  struct Features {
    const float* image;
    const float* text;
  };
  // `in`: where the images are (ImagesIn::Backend: a Backend::prefetch the caller awaited;
  // only where takes_backend_images()). The token ids are host memory.
  Features forward(const float* images, const int32_t* tokens, int64_t B, ImagesIn in = ImagesIn::Host);
  // Whether forward takes images in backend memory (the image tower's input().backend_images).
  bool takes_backend_images() const { return vision_->input().backend_images; }
  // The layout of images in backend memory (the tower's compute layout: no transpose there).
  ImageInput::Layout backend_image_layout() const { return vision_->input().compute_layout; }
  // Accumulates parameter gradients from d(loss)/d(normalized features) of the last forward.
  void backward(const float* d_image, const float* d_text);

  // Inference in chunks of the planned batch: out [B,E].
  void encode_image(const float* images, int64_t B, float* out, bool normalize = true);
  void encode_text(const int32_t* tokens, int64_t B, float* out, bool normalize = true);

  float logit_scale() const { return be_->read_scalar(p_.logit_scale); }
  // BatchNorm in eval mode in the training forward too, for a tower that has BatchNorms
  // (OpenCLIP's lock(freeze_bn_stats=True), --lock-image-freeze-bn-stats).
  void set_freeze_bn_stats(bool frozen) { vision_->set_freeze_bn_stats(frozen); }
  TextTower& text_tower() { return *text_; }
  ImageTower& vision_tower() { return *vision_; }
  const ImageTower& vision_tower() const { return *vision_; }
  // MiB of each arena (parameters, gradients, activations), for the start-up log.
  struct Memory {
    double params, grads, activations;
  };
  Memory memory() const;

 private:
  ModelCfg cfg_;
  ops::Backend* be_;
  ParamTable table_;
  ops::FloatArena params_, grads_;
  ClipParams p_, g_;
  std::unique_ptr<ImageTower> vision_;  // make_image_tower: the config's family
  std::unique_ptr<TextTower> text_;
  Precision prec_ = Precision::Fp32;
  bool training_ = false, checkpoint_ = false;
  // amp_bf16: the GEMM weights in bf16. Training refreshes them on every forward (the
  // optimizer has just stepped); inference when params() was handed out since.
  Bf16Weights w16_;
  bool w16_stale_vision_ = true, w16_stale_text_ = true;
  bool bf16_acts() const { return prec_ != Precision::Fp32; }
  void refresh_bf16(bool vision, bool text);
  // fp32 inference: the towers' GEMM weights handed to the backend's prepare_weight_f32 once
  // (ops/cpu/linear_packed.cpp: 2-3x the GEMM speed at a few rows); released before anything
  // writes the parameters (params(), training) and with the model.
  bool f32_prepared_vision_ = false, f32_prepared_text_ = false;
  // int8: the blocks' weights quantized when first encoded with (and after params() was handed out).
  Int8Weights w8_;
  std::shared_ptr<const Int8Scales> scales_;
  bool w8_stale_vision_ = true, w8_stale_text_ = true;
  Int8Sources int8_sources() const;
  void refresh_int8(bool vision, bool text);
  Precision checked_int8() const;  // set_precision's Int8: the precision that runs
  void prepare_f32(bool vision, bool text);
  void plan(int64_t B_max, bool training, bool checkpoint);
  void release_f32();
  int64_t B_max_ = 0;
};

}  // namespace oc
