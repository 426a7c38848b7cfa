// webdataset's shuffle buffer (filters._shuffle, v0.2.x), as a pull iterator: fill up to
// `bufsize` taking two items per step, start yielding once `initial` are buffered, pick a
// random slot, move the last item into it. Random choices come from R (oc::Rng by default;
// oc::PyRandom reproduces Python's random.Random draw for draw), so the order is a pure
// function of the seed and the input sequence.
#pragma once
#include <cstddef>
#include <functional>
#include <optional>
#include <utility>
#include <vector>

#include "core/py_random.h"
#include "core/rng.h"

namespace oc::data {

template <class T, class R = Rng>
class ShuffleBuffer {
 public:
  using Source = std::function<std::optional<T>()>;
  // bufsize <= 1 disables shuffling (items pass straight through).
  ShuffleBuffer(Source src, size_t bufsize, size_t initial, uint64_t seed)
      : src_(std::move(src)), bufsize_(bufsize), initial_(std::min(initial, bufsize)), rng_(seed) {}

  std::optional<T> next() {
    if (bufsize_ <= 1) return src_();
    while (!src_done_) {
      auto s = src_();
      if (!s) {
        src_done_ = true;
        break;
      }
      buf_.push_back(std::move(*s));
      if (buf_.size() < bufsize_) {
        auto s2 = src_();
        if (s2) buf_.push_back(std::move(*s2));
        else src_done_ = true;
      }
      if (buf_.size() >= initial_) return pick();
    }
    if (buf_.empty()) return std::nullopt;
    return pick();
  }

 private:
  T pick() {
    size_t k = size_t(rng_.below(buf_.size()));
    T out = std::move(buf_[k]);
    if (k + 1 != buf_.size()) buf_[k] = std::move(buf_.back());
    buf_.pop_back();
    return out;
  }
  Source src_;
  size_t bufsize_, initial_;
  R rng_;
  std::vector<T> buf_;
  bool src_done_ = false;
};

// Shuffles a finite list through a ShuffleBuffer (webdataset's detshuffle on a shard list).
template <class T, class R = Rng>
std::vector<T> shuffle_list(const std::vector<T>& in, size_t bufsize, size_t initial, uint64_t seed) {
  size_t i = 0;
  ShuffleBuffer<T, R> sb([&]() -> std::optional<T> { return i < in.size() ? std::optional<T>(in[i++]) : std::nullopt; },
                      bufsize, initial, seed);
  std::vector<T> out;
  out.reserve(in.size());
  while (auto x = sb.next()) out.push_back(std::move(*x));
  return out;
}

}  // namespace oc::data
