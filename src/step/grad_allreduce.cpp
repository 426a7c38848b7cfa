#include "step/grad_allreduce.h"

#include <algorithm>

#include "core/check.h"
#include "core/profile.h"

namespace oc {

namespace {
// [min offset, max end) of the parameters whose name starts with prefix.
bool prefix_range(const ParamTable& t, const std::string& prefix, size_t* b, size_t* e) {
  bool any = false;
  for (const ParamInfo& p : t.params)
    if (p.name.compare(0, prefix.size(), prefix) == 0) {
      *b = any ? std::min(*b, p.offset) : p.offset;
      *e = any ? std::max(*e, p.offset + p.numel) : p.offset + p.numel;
      any = true;
    }
  return any;
}
}  // namespace

GradAllReduce::GradAllReduce(Clip& model, dist::Communicator& comm) : model_(model), comm_(model.backend(), comm) {
  const ParamTable& t = model.table();
  std::vector<Range> blocks;
  for (int64_t l = 0; l < model.vision_tower().hooked_blocks(); ++l) {
    Range r{};
    OC_CHECK(prefix_range(t, model.vision_tower().block_prefix(int(l)), &r.begin, &r.end), "vision block {}", l);
    vision_.push_back(r), blocks.push_back(r);
  }
  for (int64_t l = 0; l < model.cfg().text.layers; ++l) {
    Range r{};
    OC_CHECK(prefix_range(t, text_block_prefix(model.cfg(), int(l)), &r.begin, &r.end), "text block {}", l);
    text_.push_back(r), blocks.push_back(r);
  }
  // The rest: the complement of the blocks in the arena (padding included, harmlessly).
  std::sort(blocks.begin(), blocks.end(), [](const Range& a, const Range& b) { return a.begin < b.begin; });
  size_t at = 0;
  for (const Range& r : blocks) {
    OC_CHECK(r.begin >= at, "block parameter ranges overlap at {}", r.begin);
    if (r.begin > at) rest_.push_back({at, r.begin});
    at = r.end;
  }
  if (at < t.total) rest_.push_back({at, t.total});
  started_v_.assign(vision_.size(), 0), started_t_.assign(text_.size(), 0);
  model_.vision_tower().set_block_hook([this](int64_t l) {
    if (overlap_) start(vision_[size_t(l)]), started_v_[size_t(l)] = 1;
  });
  model_.text_tower().set_block_hook([this](int64_t l) {
    if (overlap_) start(text_[size_t(l)]), started_t_[size_t(l)] = 1;
  });
}

GradAllReduce::~GradAllReduce() {
  model_.vision_tower().set_block_hook(nullptr);
  model_.text_tower().set_block_hook(nullptr);
}

void GradAllReduce::start(const Range& r) { comm_.start_allreduce_sum(model_.grads() + r.begin, int64_t(r.end - r.begin)); }

void GradAllReduce::finish() {
  OC_PROFILE("step.allreduce");
  for (size_t i = 0; i < vision_.size(); ++i)
    if (!started_v_[i]) start(vision_[i]);
  for (size_t i = 0; i < text_.size(); ++i)
    if (!started_t_[i]) start(text_[i]);
  for (const Range& r : rest_) start(r);
  comm_.wait_all("gradient all-reduce");
  std::fill(started_v_.begin(), started_v_.end(), 0);
  std::fill(started_t_.begin(), started_t_.end(), 0);
  // DDP's average: sum * (1/world), the same on every rank (the sums are identical).
  const float inv = 1.0f / float(comm_.comm().size());
  model_.backend().run(ops::ScaleInplaceArgs{.x = model_.grads(), .n = int64_t(model_.table().total), .s = inv});
}

double GradAllReduce::bucket_mib_max() const {
  size_t m = 0;
  for (const auto* v : {&vision_, &text_, &rest_})
    for (const Range& r : *v) m = std::max(m, r.end - r.begin);
  return double(m) * 4.0 / (1024.0 * 1024.0);
}

}  // namespace oc
