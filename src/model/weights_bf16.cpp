#include "model/weights_bf16.h"

#include "core/check.h"

namespace oc {

void Bf16Weights::plan(const ParamTable& table, const std::vector<BlockParams>& vision,
                       const std::vector<BlockParams>& text, const float* base, ops::Backend& be) {
  release_prepared();
  be_ = &be;
  arena_ = be.alloc(table.total * sizeof(bf16), "the bf16 copy of the weights (amp_bf16)");
  v_spans_.clear(), t_spans_.clear(), v_.clear(), t_.clear();
  auto bind = [&](const std::vector<BlockParams>& blocks, std::vector<Span>& spans, std::vector<BlockWeights16>& out) {
    for (const BlockParams& b : blocks) {
      BlockWeights16 w{};
      auto one = [&](const float* src, const bf16** dst) {
        const ptrdiff_t off = src - base;
        const ParamInfo* info = nullptr;
        for (const ParamInfo& pi : table.params)
          if (ptrdiff_t(pi.offset) == off) info = &pi;
        OC_CHECK(info, "bf16 weights: no parameter at offset {}", off);
        OC_CHECK(info->shape.size() == 2, "bf16 weights: {} is not a matrix", info->name);
        spans.push_back({src, arena_.b16() + off, int64_t(info->shape[0]), int64_t(info->shape[1])});
        *dst = arena_.b16() + off;
      };
      one(b.in_w, &w.in_w), one(b.out_w, &w.out_w), one(b.fc_w, &w.fc_w), one(b.proj_w, &w.proj_w);
      out.push_back(w);
    }
  };
  bind(vision, v_spans_, v_);
  bind(text, t_spans_, t_);
}

void Bf16Weights::refresh(bool vision, bool text, bool prepare) {
  OC_CHECK(planned(), "bf16 weights used before plan()");
  if (!prepare) release_prepared();  // before the copies change under them
  auto convert = [&](const std::vector<Span>& spans) {
    for (const Span& s : spans) {
      be_->run(ops::CastToBf16Args{.dst = s.dst, .src = s.src, .n = s.rows * s.cols});
      if (prepare) be_->prepare_weight_bf16(s.dst, s.rows, s.cols);
    }
  };
  if (vision) convert(v_spans_);
  if (text) convert(t_spans_);
  prepared_ = prepared_ || prepare;
}

void Bf16Weights::release_prepared() {
  if (!prepared_) return;
  for (const Span& s : v_spans_) be_->release_weight_bf16(s.dst);
  for (const Span& s : t_spans_) be_->release_weight_bf16(s.dst);
  prepared_ = false;
}

double Bf16Weights::mib() const {
  double n = 0;
  for (const Span& s : v_spans_) n += double(s.rows * s.cols);
  for (const Span& s : t_spans_) n += double(s.rows * s.cols);
  return n * sizeof(bf16) / (1 << 20);
}

}  // namespace oc
