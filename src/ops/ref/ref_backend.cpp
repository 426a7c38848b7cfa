// The reference backend: host memory and the loops of ops/ref/*.cpp (ref::run of each op).
#include "ops/ref/ref_backend.h"

#include "ops/host_backend.h"
#include "ops/ref/ref_ops.h"

namespace oc::ops {
namespace {

struct RefKernels {
  template <class A>
  static op_result_t<A> run(const A& a) {
    return ref::run(a);
  }
};

class RefBackend final : public KernelBackend<RefKernels> {
 public:
  std::string_view name() const override { return "ref"; }
};

}  // namespace

std::unique_ptr<Backend> make_ref_backend() { return std::make_unique<RefBackend>(); }

}  // namespace oc::ops
