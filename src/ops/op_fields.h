// The fields of an op's args struct (an aggregate), visited in declaration order without a
// per-op list: for_each_field(args, f) calls f(field) for each. Generic code over all ops (the
// guarded test backend's memory checks) uses it, so a new op needs no line there.
// How: the field count is the largest N for which S{any x N} compiles (aggregate
// initialisation from a value convertible to anything), then a structured binding of N names.
#pragma once
#include <cstddef>

namespace oc::ops {

namespace fields_detail {
struct Any {
  template <class T>
  operator T() const;  // never defined: only used in unevaluated requires-expressions
};
template <class S, class... A>
constexpr size_t count() {
  if constexpr (requires { S{A{}..., Any{}}; }) return count<S, A..., Any>();
  else return sizeof...(A);
}
template <class F, class... X>
void each(F& f, const X&... x) {
  (f(x), ...);
}
}  // namespace fields_detail

template <class S>
inline constexpr size_t field_count = fields_detail::count<S>();

#define OC_FIELDS_CASE(n, ...)                    \
  else if constexpr (field_count<S> == n) {       \
    const auto& [__VA_ARGS__] = s;                \
    fields_detail::each(f, __VA_ARGS__);          \
  }
template <class S, class F>
void for_each_field(const S& s, F&& f) {
  if constexpr (field_count<S> == 0) {
  }
  OC_FIELDS_CASE(1, a)
  OC_FIELDS_CASE(2, a, b)
  OC_FIELDS_CASE(3, a, b, c)
  OC_FIELDS_CASE(4, a, b, c, d)
  OC_FIELDS_CASE(5, a, b, c, d, e)
  OC_FIELDS_CASE(6, a, b, c, d, e, g)
  OC_FIELDS_CASE(7, a, b, c, d, e, g, h)
  OC_FIELDS_CASE(8, a, b, c, d, e, g, h, i)
  OC_FIELDS_CASE(9, a, b, c, d, e, g, h, i, j)
  OC_FIELDS_CASE(10, a, b, c, d, e, g, h, i, j, k)
  OC_FIELDS_CASE(11, a, b, c, d, e, g, h, i, j, k, l)
  OC_FIELDS_CASE(12, a, b, c, d, e, g, h, i, j, k, l, m)
  OC_FIELDS_CASE(13, a, b, c, d, e, g, h, i, j, k, l, m, n)
  OC_FIELDS_CASE(14, a, b, c, d, e, g, h, i, j, k, l, m, n, o)
  OC_FIELDS_CASE(15, a, b, c, d, e, g, h, i, j, k, l, m, n, o, p)
  OC_FIELDS_CASE(16, a, b, c, d, e, g, h, i, j, k, l, m, n, o, p, q)
  OC_FIELDS_CASE(17, a, b, c, d, e, g, h, i, j, k, l, m, n, o, p, q, r)
  OC_FIELDS_CASE(18, a, b, c, d, e, g, h, i, j, k, l, m, n, o, p, q, r, t)
  OC_FIELDS_CASE(19, a, b, c, d, e, g, h, i, j, k, l, m, n, o, p, q, r, t, u)
  OC_FIELDS_CASE(20, a, b, c, d, e, g, h, i, j, k, l, m, n, o, p, q, r, t, u, v)
  else static_assert(field_count<S> <= 20, "for_each_field: more than 20 fields; add a case above");
}
#undef OC_FIELDS_CASE

}  // namespace oc::ops
