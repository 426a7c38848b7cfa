// amp_bf16: bf16 copies of the GEMM weights (every block's in_proj, out_proj, c_fc, c_proj),
// made once per step from the fp32 master weights, so no GEMM converts a weight itself.
// The copy lives in an arena laid out like the parameters (same offsets); only the GEMM
// weights are written, so the rest of it is never touched (and never resident).
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/bf16.h"
#include "model/params.h"
#include "ops/backend.h"

namespace oc {

struct BlockWeights16 {
  const bf16* in_w;    // [3W, W]
  const bf16* out_w;   // [W, W]
  const bf16* fc_w;    // [F, W]
  const bf16* proj_w;  // [W, F]
};

class Bf16Weights {
 public:
  Bf16Weights() = default;
  Bf16Weights(const Bf16Weights&) = delete;
  Bf16Weights& operator=(const Bf16Weights&) = delete;
  ~Bf16Weights() { release_prepared(); }
  // Binds to the parameter arena `base` laid out by `table`, with the image and text towers'
  // blocks bound to it; the copy is allocated from (and converted by) `be`, the backend that
  // owns `base`.
  void plan(const ParamTable& table, const std::vector<BlockParams>& vision, const std::vector<BlockParams>& text,
            const float* base, ops::Backend& be);
  // Converts the vision and/or text GEMM weights from the fp32 masters (threaded). With
  // `prepare`, hands each to the backend's prepare_weight_bf16 (a faster layout for the GEMMs
  // that read it, one more copy of the weights); without, releases what was prepared.
  void refresh(bool vision, bool text, bool prepare);
  const std::vector<BlockWeights16>& vision() const { return v_; }
  const std::vector<BlockWeights16>& text() const { return t_; }
  bool planned() const { return arena_.data() != nullptr; }
  double mib() const;

 private:
  struct Span {
    const float* src;
    bf16* dst;
    int64_t rows, cols;  // the weight [rows, cols]: a GEMM's B with N = rows, K = cols
  };
  void release_prepared();
  ops::Buffer arena_;  // not zeroed: only the GEMM weights' pages are ever touched
  ops::Backend* be_ = nullptr;
  bool prepared_ = false;  // some weights were handed to prepare_weight_bf16
  std::vector<Span> v_spans_, t_spans_;
  std::vector<BlockWeights16> v_, t_;
};

}  // namespace oc
