// Where torch.argsort(row, descending=True) puts an index on the CPU, equal values included.
//
// OpenCLIP's get_clip_metrics ranks with torch.argsort(logits, descending=True) and takes the
// ground truth's position. torch's CPU sort_kernel (torch 1.13 to 2.3, and any build without
// x86-simd-sort) runs std::sort with stable=false over (value, index) pairs, comparing values
// only (KeyValueCompDesc: NaN first, then larger first): libstdc++'s introsort (median-of-3
// quicksort down to 16-element runs, heapsort past 2*floor(log2 n) levels, one final
// insertion sort). Equal values come out in the order that algorithm leaves them: not by
// index, and not stable once a row is longer than 16. This file runs the same algorithm step
// by step (not std::sort, whose tie order is the standard library's choice), so the positions
// match torch built with GCC on any machine. Checked against torch by tests/eval/torch_sort_test.cpp.
#pragma once
#include <cstdint>
#include <span>
#include <utility>
#include <vector>

namespace oc {

// (value, index) pairs of `row`, permuted as torch's CPU argsort(descending=True) permutes them.
void torch_argsort_desc(std::span<const float> row, std::vector<std::pair<float, int64_t>>* out);

// The position (0-based) of index `target` in torch.argsort(row, descending=True). Without a
// value equal to row[target] (or a NaN) that is the count of larger values; otherwise the row is
// sorted as torch sorts it (into *scratch).
int64_t torch_argsort_desc_position(std::span<const float> row, int64_t target,
                                    std::vector<std::pair<float, int64_t>>* scratch);

}  // namespace oc
