// What every op's argument struct (ops/<family>.h) shares. An op is one aggregate, filled at
// the call site with designated initialisers (`be.run(GemmArgs{.ta = false, ...})`), whose
// comment is the op's contract: shapes (row-major, innermost last), which outputs are assigned
// and which accumulate, the precision. Conventions (ops/README.md): parameter gradients
// accumulate (+=), activation gradients are assigned unless the struct says "accumulates".
//
// Memory: every raw pointer in an args struct is memory of the backend that runs the op (from
// its alloc(); null where the contract says it may be). Host values are typed as such:
// std::span for host arrays (token ids, gather indices, the optimizer's spans) and Host<T> for
// a host scalar an op adds into (a loss's d logit_scale). tests/guarded_backend.h checks both
// on every call (ops/op_fields.h walks the fields).
#pragma once
#include <type_traits>

namespace oc::ops {

// A host scalar in an op's arguments (never memory of the backend). Reads like the pointer it
// wraps: *h, if (h), h.get().
template <class T>
struct Host {
  T* p = nullptr;
  T& operator*() const { return *p; }
  T* get() const { return p; }
  explicit operator bool() const { return p != nullptr; }
};

// The value Backend::run returns for an op: its args struct's `Result` (a loss, a norm, a
// flag), void when it declares none.
template <class A>
struct OpResult {
  using type = void;
};
template <class A>
requires requires { typename A::Result; }
struct OpResult<A> {
  using type = typename A::Result;
};
template <class A>
using op_result_t = typename OpResult<A>::type;

}  // namespace oc::ops
