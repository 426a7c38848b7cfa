// The fast CPU backend: host memory and the ops/cpu kernels (cpu::run of each op, which calls
// the same kernels the model called before backends existed, so results are bitwise those).
#include "ops/cpu/cpu_backend.h"

#include "ops/cpu/conv.h"
#include "ops/cpu/gemm_bf16.h"
#include "ops/cpu/linear_packed.h"
#include "ops/host_backend.h"

namespace oc::ops {
namespace {

struct CpuKernels {
  template <class A>
  static op_result_t<A> run(const A& a) {
    return cpu::run(a);
  }
};

class CpuBackend final : public KernelBackend<CpuKernels> {
 public:
  std::string_view name() const override { return "cpu"; }
  void prepare_weight_bf16(const bf16* W, int64_t N, int64_t K) override { ops::prepare_weight_bf16(W, N, K); }
  void release_weight_bf16(const bf16* W) override { ops::release_weight_bf16(W); }
  void prepare_weight_f32(const float* W, int64_t N, int64_t K) override { ops::prepare_weight_f32(W, N, K); }
  void release_weight_f32(const float* W) override { ops::release_weight_f32(W); }
  void prepare_conv_weight(const float* W, int64_t size) override { ops::prepare_conv_weight(W, size); }
  void release_conv_weight(const float* W) override { ops::release_conv_weight(W); }
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend() { return std::make_unique<CpuBackend>(); }

}  // namespace oc::ops
