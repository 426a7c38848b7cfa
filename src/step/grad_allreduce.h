// DDP's gradient averaging across ranks, bucketed per transformer block and overlapped with
// backward (the towers' block hooks).
#pragma once
#include <cstddef>
#include <vector>

#include "dist/comm.h"
#include "model/clip.h"
#include "step/comm_io.h"

namespace oc {

// DDP's gradient averaging, in buckets of one transformer block each: a block's all-reduce
// starts as soon as backward has finished it (hooks in the towers), the rest (embeddings,
// projections, LayerNorms outside the blocks, logit_scale) when backward returns; finish()
// waits for all and scales by 1/world, so every rank holds the same averaged gradient.
class GradAllReduce {
 public:
  GradAllReduce(Clip& model, dist::Communicator& comm);
  ~GradAllReduce();  // removes the hooks
  void set_overlap(bool on) { overlap_ = on; }  // off: everything after backward
  void finish();
  double bucket_mib_max() const;

 private:
  struct Range {
    size_t begin, end;  // floats in the gradient arena
  };
  void start(const Range& r);
  Clip& model_;
  CommIO comm_;  // gradients are memory of the model's backend
  std::vector<Range> vision_, text_, rest_;
  std::vector<char> started_v_, started_t_;
  bool overlap_ = true;
};

}  // namespace oc
