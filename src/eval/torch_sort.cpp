#include "eval/torch_sort.h"

#include <bit>
#include <cmath>

namespace oc {

namespace {
using Pair = std::pair<float, int64_t>;
using It = Pair*;
constexpr int64_t kThreshold = 16;  // libstdc++'s _S_threshold

// KeyValueCompDesc: NaN before numbers, then larger first; indices never compared.
bool before(const Pair& a, const Pair& b) {
  return (std::isnan(a.first) && !std::isnan(b.first)) || a.first > b.first;
}

// Moves the median of *a, *b, *c (by `before`) to *result.
void median_to_first(It result, It a, It b, It c) {
  if (before(*a, *b)) {
    if (before(*b, *c)) std::swap(*result, *b);
    else if (before(*a, *c)) std::swap(*result, *c);
    else std::swap(*result, *a);
  } else if (before(*a, *c)) {
    std::swap(*result, *a);
  } else if (before(*b, *c)) {
    std::swap(*result, *c);
  } else {
    std::swap(*result, *b);
  }
}

// Hoare partition of [first, last) around *pivot, with no bounds checks (the median-of-3
// guarantees sentinels on both sides).
It unguarded_partition(It first, It last, It pivot) {
  for (;;) {
    while (before(*first, *pivot)) ++first;
    --last;
    while (before(*pivot, *last)) --last;
    if (!(first < last)) return first;
    std::swap(*first, *last);
    ++first;
  }
}

// Heap helpers of the depth-limit fallback (libstdc++'s __adjust_heap / __push_heap).
void push_heap(It first, int64_t hole, int64_t top, Pair value) {
  int64_t parent = (hole - 1) / 2;
  while (hole > top && before(first[parent], value)) {
    first[hole] = first[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  first[hole] = value;
}

void adjust_heap(It first, int64_t hole, int64_t len, Pair value) {
  const int64_t top = hole;
  int64_t child = hole;
  while (child < (len - 1) / 2) {
    child = 2 * (child + 1);
    if (before(first[child], first[child - 1])) --child;
    first[hole] = first[child];
    hole = child;
  }
  if ((len & 1) == 0 && child == (len - 2) / 2) {
    child = 2 * (child + 1);
    first[hole] = first[child - 1];
    hole = child - 1;
  }
  push_heap(first, hole, top, value);
}

// libstdc++'s __partial_sort(first, last, last): make_heap, then sort_heap.
void heap_sort(It first, It last) {
  const int64_t len = last - first;
  if (len >= 2)
    for (int64_t parent = (len - 2) / 2;; --parent) {
      adjust_heap(first, parent, len, first[parent]);
      if (parent == 0) break;
    }
  while (last - first > 1) {
    --last;
    const Pair value = *last;
    *last = *first;
    adjust_heap(first, 0, last - first, value);
  }
}

void introsort_loop(It first, It last, int64_t depth) {
  while (last - first > kThreshold) {
    if (depth == 0) {
      heap_sort(first, last);
      return;
    }
    --depth;
    median_to_first(first, first + 1, first + (last - first) / 2, last - 1);
    It cut = unguarded_partition(first + 1, last, first);
    introsort_loop(cut, last, depth);
    last = cut;
  }
}

void unguarded_linear_insert(It last) {
  const Pair value = *last;
  It next = last - 1;
  while (before(value, *next)) {
    *last = *next;
    last = next;
    --next;
  }
  *last = value;
}

void insertion_sort(It first, It last) {
  if (first == last) return;
  for (It i = first + 1; i != last; ++i) {
    if (before(*i, *first)) {
      const Pair value = *i;
      for (It j = i; j != first; --j) *j = *(j - 1);
      *first = value;
    } else {
      unguarded_linear_insert(i);
    }
  }
}
}  // namespace

void torch_argsort_desc(std::span<const float> row, std::vector<Pair>* out) {
  const int64_t n = int64_t(row.size());
  out->resize(row.size());
  for (int64_t i = 0; i < n; ++i) (*out)[size_t(i)] = {row[size_t(i)], i};
  if (n == 0) return;
  It first = out->data(), last = first + n;
  introsort_loop(first, last, 2 * (std::bit_width(uint64_t(n)) - 1));
  if (n > kThreshold) {
    insertion_sort(first, first + kThreshold);
    for (It i = first + kThreshold; i != last; ++i) unguarded_linear_insert(i);
  } else {
    insertion_sort(first, last);
  }
}

int64_t torch_argsort_desc_position(std::span<const float> row, int64_t target, std::vector<Pair>* scratch) {
  const float t = row[size_t(target)];
  int64_t larger = 0;
  bool tie = std::isnan(t);
  for (size_t k = 0; k < row.size(); ++k) {
    larger += row[k] > t;
    tie |= (row[k] == t && int64_t(k) != target) || std::isnan(row[k]);
  }
  if (!tie) return larger;
  torch_argsort_desc(row, scratch);
  for (size_t p = 0; p < scratch->size(); ++p)
    if ((*scratch)[p].second == target) return int64_t(p);
  return -1;  // unreachable: every index is in the permutation
}

}  // namespace oc
