// Calibration of static int8 scales (`openclip quantize`, model/calibrate.h): while an
// ActRanges::Scope is alive on a thread, the fp32 forward on that thread reports the input of
// each GEMM that int8 quantizes (the blocks' in_proj, out_proj, c_fc, c_proj and the ViT's
// patch embedding) with observe_gemm_input, keyed by the GEMM's weight. One hook per GEMM
// rather than an observer threaded through both towers' plans: calibration is the only user,
// and without a scope the hook is one thread_local load.
#pragma once
#include <cstdint>
#include <map>
#include <vector>

namespace oc {

class ActRanges {
 public:
  // tail: the fraction of |x| values a range may leave above it (0: the max; 1e-4: the 99.99th
  // percentile of every value the GEMM saw).
  explicit ActRanges(double tail = 0.0) : tail_(tail) {}
  void observe(const float* weight, const float* x, int64_t n);
  // The range of each GEMM's input, by weight: max|x| (NaN ignored), or with a tail the
  // (tail * count)-th largest |x|, from the largest 2 * tail * n values of each call (exact
  // unless one call holds over twice its share of the tensor's largest values).
  std::map<const float*, float> ranges() const;

  class Scope {
   public:
    explicit Scope(ActRanges& r);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    ActRanges* prev_;
  };

 private:
  struct Seen {
    float amax = 0.0f;
    int64_t count = 0;
    std::vector<float> top;  // the largest |x| of each call (tail > 0)
  };
  double tail_;
  std::map<const float*, Seen> seen_;
};

// Reports x [n] (host memory: calibration runs on the cpu backend) as the input of the GEMM
// whose weight is `weight`; nothing without a scope on this thread.
void observe_gemm_input(const float* weight, const float* x, int64_t n);

}  // namespace oc
