// The batches of a run's steps, taken one step ahead (docs/CUDA.md, "Batches"): once step k's
// backward is queued, step k+1's batches are taken from the loader and, for a model that takes
// its images in backend memory, their uploads started (Backend::prefetch: on cuda a copy on a
// second stream from the loader's pinned buffers, which the step's first op waits for instead
// of the host). On a backend whose memory is not the host's, those batches carry uint8 pixels
// (a quarter of the bytes), which the plan normalises on the backend into the floats the
// loader would have made (ops/pixels.h); the host backends read the loader's floats in place,
// normalised by its worker threads, as before. A tower computing channels-last (ModifiedResNet)
// gets its floats in that layout from the loader (BatchMemory::channels_last), fp32 on every
// backend for now. The batches and their order are the loader's,
// whatever the timing; position() is the loader's position after the last batch a step took,
// so a checkpoint saved between steps resumes at the first batch not trained on (the group
// taken ahead is read again).
#pragma once
#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "data/loader.h"
#include "model/clip.h"
#include "ops/backend.h"
#include "step/step_plan.h"

namespace oc {

class StepBatches {
 public:
  // per_step: batches per optimizer step (--accum-freq). When the images are prefetched, sets
  // the loader's batch memory: the backend's host allocator (pinned on cuda), pixels.
  StepBatches(data::DataLoader& loader, Clip& model, int per_step);
  StepBatches(const StepBatches&) = delete;
  StepBatches& operator=(const StepBatches&) = delete;

  // The loader has just started (or resumed) an epoch: drops what was taken ahead.
  void restart();
  // Makes the next step's batches current (taken ahead, or taken now); false when the epoch
  // has fewer than per_step batches left (those are dropped, as OpenCLIP drops them).
  bool next_step();
  // The current step's batches, as the plan takes them.
  std::span<const HostBatch> step() const { return cur_.view; }
  // Takes the next step's batches and starts their uploads: call once the current step's
  // work is queued (after its backward). At the end of the epoch it takes what is left.
  void take_ahead();
  // Hands the current step's batches back to the loader (their uploads released first).
  void recycle_step();
  // The loader's position after the current step's batches.
  const data::LoaderPosition& position() const { return pos_; }
  bool prefetching() const { return prefetch_; }
  bool pixels() const { return pixels_; }

 private:
  struct Group {
    std::vector<data::Batch> batches;
    std::vector<ops::Prefetch> uploads;  // one per batch when prefetching
    std::vector<HostBatch> view;
    data::LoaderPosition pos;  // the loader's position after the group
    bool complete = false;     // per_step batches (the epoch did not end first)
    bool taken = false;
  };
  void take(Group* g);
  void drop(Group* g);
  data::DataLoader& loader_;
  ops::Backend& be_;
  int per_step_;
  bool prefetch_, channels_last_, pixels_;  // channels_last_: the loader writes HWC floats
  int64_t image_bytes_;                  // of one sample's images (pixels when prefetching)
  std::array<float, 3> mean_{}, std_{};  // the loader's Normalize
  Group cur_, ahead_;
  data::LoaderPosition pos_;
};

}  // namespace oc
