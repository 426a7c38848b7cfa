#include "model/weights_bf16.h"

#include <cstdlib>
#include <new>

#include "core/check.h"
#include "ops/bf16_ops.h"

namespace oc {

void Bf16Weights::Free::operator()(bf16* p) const { std::free(p); }

void Bf16Weights::plan(const ParamTable& table, const ClipParams& p, const float* base) {
  const size_t bytes = (table.total * sizeof(bf16) + 63) / 64 * 64;
  void* mem = std::aligned_alloc(64, bytes);
  if (!mem) throw std::bad_alloc();
  arena_.reset(static_cast<bf16*>(mem));
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
        spans.push_back({src, arena_.get() + off, int64_t(info->numel)});
        *dst = arena_.get() + off;
      };
      one(b.in_w, &w.in_w), one(b.out_w, &w.out_w), one(b.fc_w, &w.fc_w), one(b.proj_w, &w.proj_w);
      out.push_back(w);
    }
  };
  bind(p.v_blocks, v_spans_, v_);
  bind(p.t_blocks, t_spans_, t_);
}

void Bf16Weights::refresh(bool vision, bool text) {
  OC_CHECK(planned(), "bf16 weights used before plan()");
  if (vision)
    for (const Span& s : v_spans_) ops::cast_to_bf16(s.dst, s.src, s.n);
  if (text)
    for (const Span& s : t_spans_) ops::cast_to_bf16(s.dst, s.src, s.n);
}

double Bf16Weights::mib() const {
  double n = 0;
  for (const Span& s : v_spans_) n += double(s.n);
  for (const Span& s : t_spans_) n += double(s.n);
  return n * sizeof(bf16) / (1 << 20);
}

}  // namespace oc
