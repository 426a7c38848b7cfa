// Checked size arithmetic for element and byte counts derived from numbers that a config
// or a file sets (model widths, layer counts, batch sizes, tensor shapes). Every product
// and sum that sizes a buffer goes through here, so a size never wraps: a negative factor
// or a result over 2^63 - 1 is an oc::Error naming `what` and the operands, e.g.
// "ViT-x parameters: 1000000000 x 3000000000 overflows 64 bits".
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string_view>

namespace oc {

// The product of `factors` (each >= 0).
int64_t checked_mul(std::string_view what, std::initializer_list<int64_t> factors);
// The sum of `terms` (each >= 0).
int64_t checked_add(std::string_view what, std::initializer_list<int64_t> terms);
// n rounded up to a multiple of `align` (> 0), checked the same way.
int64_t checked_round_up(std::string_view what, int64_t n, int64_t align);

}  // namespace oc
