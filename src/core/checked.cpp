#include "core/checked.h"

#include <fmt/format.h>

#include "core/check.h"

namespace oc {
namespace {
std::string list(std::initializer_list<int64_t> v, const char* sep) {
  std::string s;
  for (int64_t x : v) s += (s.empty() ? "" : sep) + std::to_string(x);
  return s;
}

// r = init, then r = op(r, x) for each operand; a negative operand or an overflow throws.
template <class Op>
int64_t fold(std::string_view what, std::initializer_list<int64_t> v, int64_t init, const char* sep, Op op) {
  for (int64_t x : v)
    if (x < 0) OC_USER_ERROR("{}: size {} has a negative operand", what, list(v, sep));
  int64_t r = init;
  for (int64_t x : v)
    if (op(r, x, &r)) OC_USER_ERROR("{}: size {} overflows 64 bits", what, list(v, sep));
  return r;
}
}  // namespace

int64_t checked_mul(std::string_view what, std::initializer_list<int64_t> factors) {
  return fold(what, factors, 1, " x ",
              [](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); });
}

int64_t checked_add(std::string_view what, std::initializer_list<int64_t> terms) {
  return fold(what, terms, 0, " + ", [](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); });
}

int64_t checked_round_up(std::string_view what, int64_t n, int64_t align) {
  OC_CHECK(align > 0, "alignment {}", align);
  return checked_mul(what, {checked_add(what, {n, align - 1}) / align, align});
}

}  // namespace oc
