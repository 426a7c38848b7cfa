#include "model/tower_util.h"

#include "core/check.h"
#include "core/checked.h"
#include "ops/embed.h"

namespace oc {

namespace {
size_t up16(size_t n) { return (n + 15) / 16 * 16; }
}  // namespace

void BufferPlan::allocate(ops::FloatArena& arena) {
  int64_t total = 0;
  for (const Item& it : items_) total = checked_add("tower buffers", {total, int64_t(up16(it.n))});
  arena.resize(size_t(total), false);
  float* p = arena.data();
  for (const Item& it : items_) *it.slot = p, p += up16(it.n);
}

StackDims stack_dims(int64_t B, int64_t T, const StackShape& s, ops::Prec prec, const StackMemory& mem,
                     const std::vector<BlockWeights16>* w16, const std::vector<BlockWeightsInt8>* w8,
                     ops::Backend* be) {
  StackDims d;
  d.be = be;
  d.B = B, d.T = T, d.W = s.W, d.H = s.H, d.F = s.F, d.layers = s.L, d.causal = s.causal;
  d.act = s.act;
  d.eps = s.eps;
  d.prec = prec;
  if (mem.bf16_acts()) {
    OC_CHECK(prec == ops::Prec::BF16 && (w16 || w8),
             "tower planned with bf16 activations runs only in bf16 with bf16 or int8 weights");
    if (w8)
      d.w8 = w8;  // int8 inference
    else
      d.w16 = w16;
  }
  return d;
}

void images_to_patches(ops::Backend& be, float* patches, float* upload, const float* images, bool in_backend, int64_t B,
                       int64_t S, int64_t P) {
  const float* img = images;
  if (!in_backend && !be.host_memory()) {  // the host backends read it in place
    be.copy_from_host(upload, img, sizeof(float) * size_t(B * 3 * S * S));
    img = upload;
  }
  be.run(ops::Im2PatchesArgs{.patches = patches, .img = img, .B = B, .S = S, .P = P});
}

}  // namespace oc
