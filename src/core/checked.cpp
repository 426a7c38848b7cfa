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

void require_non_negative(std::string_view what, std::initializer_list<int64_t> v, const char* sep) {
  for (int64_t x : v)
    if (x < 0) OC_USER_ERROR("{}: size {} has a negative operand", what, list(v, sep));
}
}  // namespace

int64_t checked_mul(std::string_view what, std::initializer_list<int64_t> factors) {
  require_non_negative(what, factors, " x ");
  int64_t r = 1;
  for (int64_t x : factors)
    if (__builtin_mul_overflow(r, x, &r)) OC_USER_ERROR("{}: size {} overflows 64 bits", what, list(factors, " x "));
  return r;
}

int64_t checked_add(std::string_view what, std::initializer_list<int64_t> terms) {
  require_non_negative(what, terms, " + ");
  int64_t r = 0;
  for (int64_t x : terms)
    if (__builtin_add_overflow(r, x, &r)) OC_USER_ERROR("{}: size {} overflows 64 bits", what, list(terms, " + "));
  return r;
}

int64_t checked_round_up(std::string_view what, int64_t n, int64_t align) {
  OC_CHECK(align > 0, "alignment {}", align);
  return checked_mul(what, {checked_add(what, {n, align - 1}) / align, align});
}

}  // namespace oc
