// Calibration of static int8 scales (`openclip quantize`, model/calibrate.h): while an
// ActRanges::Scope is alive on a thread, the fp32 forward on that thread reports the input of
// each GEMM that int8 quantizes (the blocks' in_proj, out_proj, c_fc, c_proj and the ViT's
// patch embedding) with observe_gemm_input, keyed by the GEMM's weight. One hook per GEMM
// rather than an observer threaded through both towers' plans: calibration is the only user,
// and without a scope the hook is one thread_local load.
#pragma once
#include <cstdint>
#include <map>

namespace oc {

class ActRanges {
 public:
  // max|x| over every input seen by the GEMM of `weight` (NaN ignored: calibration data
  // with NaN would be refused by the caller before).
  const std::map<const float*, float>& amax() const { return amax_; }
  void observe(const float* weight, const float* x, int64_t n);

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
  std::map<const float*, float> amax_;
};

// Reports x [n] (host memory: calibration runs on the cpu backend) as the input of the GEMM
// whose weight is `weight`; nothing without a scope on this thread.
void observe_gemm_input(const float* weight, const float* x, int64_t n);

}  // namespace oc
