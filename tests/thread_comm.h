// Ranks as threads of one process: a communicator whose collectives are rendezvous on one
// barrier, so tests of the distributed step need no mpirun and see every rank's result.
#pragma once
#include <algorithm>
#include <barrier>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/check.h"
#include "dist/comm.h"

namespace oc::test {

// Every collective is a rendezvous of all ranks on one barrier; buffers are exchanged by
// pointer, and nobody writes its output before everyone has read the inputs.
class ThreadComm : public dist::Communicator {
 public:
  struct Shared {
    explicit Shared(int w) : world(w), bar(w), ptr(size_t(w)), dest(size_t(w)) {}
    int world;
    std::barrier<> bar;
    std::vector<const void*> ptr;
    std::vector<int> dest;
  };
  ThreadComm(std::shared_ptr<Shared> s, int rank) : s_(std::move(s)), rank_(rank) {}
  int rank() const override { return rank_; }
  int size() const override { return s_->world; }
  const char* backend() const override { return "threads"; }
  void broadcast(void* x, int64_t bytes, int root) override {
    post(x);
    if (rank_ != root) std::memcpy(x, s_->ptr[size_t(root)], size_t(bytes));
    s_->bar.arrive_and_wait();
  }
  void allreduce_sum(float* x, int64_t n) override { allreduce(x, n); }
  void allreduce_sum(double* x, int64_t n) override { allreduce(x, n); }
  void allgather(const float* in, float* out, int64_t n) override {
    post(in);
    for (int r = 0; r < s_->world; ++r) std::copy_n(at<float>(r), n, out + r * n);
    s_->bar.arrive_and_wait();
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override {
    post(in);
    for (int64_t i = 0; i < n; ++i) {
      float sum = 0;
      for (int r = 0; r < s_->world; ++r) sum += at<float>(r)[rank_ * n + i];
      out[i] = sum;
    }
    s_->bar.arrive_and_wait();
  }
  void barrier(const char*) override { s_->bar.arrive_and_wait(); }
  void sendrecv(const float* send, int dest, float* recv, int src, int64_t n) override {
    s_->dest[size_t(rank_)] = dest;
    post(send);
    OC_CHECK(s_->dest[size_t(src)] == rank_, "rank {} receives from {}, which sends to {}", rank_, src,
             s_->dest[size_t(src)]);
    std::copy_n(at<float>(src), n, recv);
    s_->bar.arrive_and_wait();
  }
  // Synchronous: every rank starts the buckets in the same order.
  void start_allreduce_sum(float* x, int64_t n) override { allreduce(x, n); }
  void wait_all(const char*) override {}
  [[noreturn]] void abort(const std::string& why, int) override { OC_FAIL("ThreadComm abort: {}", why); }

 private:
  void post(const void* p) {
    s_->ptr[size_t(rank_)] = p;
    s_->bar.arrive_and_wait();
  }
  template <class T>
  const T* at(int r) const {
    return static_cast<const T*>(s_->ptr[size_t(r)]);
  }
  template <class T>
  void allreduce(T* x, int64_t n) {
    post(x);
    std::vector<T> sum(size_t(n), T(0));
    for (int r = 0; r < s_->world; ++r)
      for (int64_t i = 0; i < n; ++i) sum[size_t(i)] += at<T>(r)[i];
    s_->bar.arrive_and_wait();  // everyone has read every x
    std::copy(sum.begin(), sum.end(), x);
    s_->bar.arrive_and_wait();
  }
  std::shared_ptr<Shared> s_;
  int rank_;
};

}  // namespace oc::test
