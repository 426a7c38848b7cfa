// --precision int8: every block's GEMM weights (in_proj, out_proj, c_fc, c_proj) and the ViT's
// patch embedding (conv1, a GEMM on the patches) quantized
// once, per output channel, into the backend's int8 layout (Backend::quantize_weight_int8,
// ops/gemm_int8.h), for inference only. Made from the fp32 weights when the model is first
// encoded with, again after anything writes the parameters.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "model/int8_scales.h"
#include "model/params.h"
#include "ops/backend.h"
#include "ops/gemm_int8.h"

namespace oc {

struct BlockWeightsInt8 {
  const ops::Int8Weight* in_w;    // [3W, W]
  const ops::Int8Weight* out_w;   // [W, W]
  const ops::Int8Weight* fc_w;    // [F, W]
  const ops::Int8Weight* proj_w;  // [W, F]
};

// The weights int8 quantizes, bound into one parameter arena.
struct Int8Sources {
  const std::vector<BlockParams>* vision = nullptr;  // the image tower's blocks
  const float* vision_patch = nullptr;               // its patch embedding GEMM weight [W, 3 P P], or null
  const std::vector<BlockParams>* text = nullptr;    // the text tower's blocks
};

// The state_dict names of the weights `w` holds (the int8 GEMMs: what a scales file covers).
std::vector<std::string> int8_weight_names(const ParamTable& table, const Int8Sources& w, const float* base);

class Int8Weights {
 public:
  // Quantizes the vision and/or text weights of `w` (bound to `base`, laid out by `table`) on
  // `be`; the others are released. With `scales`, each weight carries its input's static
  // scale (an error naming the tensor and file where one is missing).
  void build(const ParamTable& table, const Int8Sources& w, const float* base, ops::Backend& be, bool vision, bool text,
             const Int8Scales* scales = nullptr);
  void clear();
  const std::vector<BlockWeightsInt8>& vision() const { return v_; }
  const std::vector<BlockWeightsInt8>& text() const { return t_; }
  // OpenCLIP ViT's conv1 as a [W, 3 P P] matrix (the patches' GEMM), null without vision.
  const ops::Int8Weight* vision_patch() const { return patch_.get(); }
  bool has_vision() const { return !v_.empty(); }
  bool has_text() const { return !t_.empty(); }
  double mib() const;

 private:
  std::vector<std::unique_ptr<ops::Int8Weight>> own_v_, own_t_;
  std::unique_ptr<ops::Int8Weight> patch_;
  std::vector<BlockWeightsInt8> v_, t_;
};

}  // namespace oc
