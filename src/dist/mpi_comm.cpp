// The MPI communicator (host buffers). Every collective is non-blocking and waited for by
// polling MPI_Testall against a deadline (--dist-timeout): when a peer hangs, this rank
// prints what it was waiting for and calls MPI_Abort, which ends the whole job. A peer that
// dies is handled by the launcher (mpirun ends the job when a rank exits abnormally); the
// deadline covers the launchers that do not. Checkpoints are written atomically by rank 0,
// so an abort never leaves a partial one.
#include "dist/comm.h"

#include "core/check.h"

#if OPENCLIP_HAVE_MPI
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <cstdio>
#include <thread>
#endif

namespace oc::dist {

#if OPENCLIP_HAVE_MPI

namespace {

// Counts are int in MPI: split long buffers.
constexpr int64_t kMaxCount = int64_t(1) << 30;
constexpr int kExchangeTag = 17;  // point-to-point messages (SigLIP neighbour exchange)

class MpiComm final : public Communicator {
 public:
  MpiComm(const World& w, double timeout_s) : timeout_s_(timeout_s) {
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_ = true;
    }
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    if (size_ != w.size || rank_ != w.rank)
      OC_USER_ERROR("the launcher says rank {} of {} ({}) but MPI says rank {} of {}: start the job with mpirun or "
                    "srun --mpi=pmix (torchrun's variables alone cannot start MPI)",
                    w.rank, w.size, w.source, rank_, size_);
  }
  ~MpiComm() override {
    MPI_Comm_free(&comm_);
    int fin = 0;
    MPI_Finalized(&fin);
    if (owns_ && !fin) MPI_Finalize();
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "mpi"; }

  void broadcast(void* x, int64_t bytes, int root) override {
    char* p = static_cast<char*>(x);
    for (int64_t o = 0; o < bytes; o += kMaxCount) {
      pending_.emplace_back();
      MPI_Ibcast(p + o, int(std::min(kMaxCount, bytes - o)), MPI_BYTE, root, comm_, &pending_.back());
    }
    wait_all("broadcast");
  }
  void allreduce_sum(float* x, int64_t n) override {
    start_allreduce_sum(x, n);
    wait_all("all-reduce");
  }
  void allreduce_sum(double* x, int64_t n) override {
    OC_CHECK(n < kMaxCount, "{} doubles", n);
    pending_.emplace_back();
    MPI_Iallreduce(MPI_IN_PLACE, x, int(n), MPI_DOUBLE, MPI_SUM, comm_, &pending_.back());
    wait_all("all-reduce");
  }
  void allgather(const float* in, float* out, int64_t n) override {
    OC_CHECK(n < kMaxCount, "all-gather of {} floats per rank", n);
    pending_.emplace_back();
    MPI_Iallgather(in, int(n), MPI_FLOAT, out, int(n), MPI_FLOAT, comm_, &pending_.back());
    wait_all("all-gather");
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override {
    OC_CHECK(n < kMaxCount, "reduce-scatter of {} floats per rank", n);
    pending_.emplace_back();
    MPI_Ireduce_scatter_block(in, out, int(n), MPI_FLOAT, MPI_SUM, comm_, &pending_.back());
    wait_all("reduce-scatter");
  }
  void sendrecv(const float* send, int dest, float* recv, int src, int64_t n) override {
    OC_CHECK(n < kMaxCount, "exchange of {} floats", n);
    pending_.emplace_back();
    MPI_Irecv(recv, int(n), MPI_FLOAT, src, kExchangeTag, comm_, &pending_.back());
    pending_.emplace_back();
    MPI_Isend(send, int(n), MPI_FLOAT, dest, kExchangeTag, comm_, &pending_.back());
    wait_all("neighbour exchange");
  }
  void barrier(const char* what) override {
    pending_.emplace_back();
    MPI_Ibarrier(comm_, &pending_.back());
    wait_all(what);
  }
  void start_allreduce_sum(float* x, int64_t n) override {
    for (int64_t o = 0; o < n; o += kMaxCount) {
      pending_.emplace_back();
      MPI_Iallreduce(MPI_IN_PLACE, x + o, int(std::min(kMaxCount, n - o)), MPI_FLOAT, MPI_SUM, comm_,
                     &pending_.back());
    }
  }
  void wait_all(const char* what) override {
    if (pending_.empty()) return;
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s_);
    int done = 0;
    for (long spins = 0;; ++spins) {
      MPI_Testall(int(pending_.size()), pending_.data(), &done, MPI_STATUSES_IGNORE);
      if (done) break;
      if (clock::now() > deadline)
        abort(fmt::format("openclip: rank {} of {}: {} at step {} did not complete within {:g} s (--dist-timeout): "
                          "another rank died or hangs. Aborting the job; the last checkpoint is intact.",
                          rank_, size_, what, step_, timeout_s_),
              3);
      // Spin briefly (fast collectives), then yield the core: ranks may share CPUs.
      if (spins > 2000) std::this_thread::sleep_for(std::chrono::microseconds(spins > 20000 ? 500 : 20));
    }
    pending_.clear();
  }
  [[noreturn]] void abort(const std::string& why, int code) override {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, size_ = 1;
  bool owns_ = false;
  double timeout_s_;
  std::vector<MPI_Request> pending_;
};

}  // namespace

bool mpi_built() { return true; }
std::unique_ptr<Communicator> make_mpi(const World& w, double timeout_s) {
  return std::make_unique<MpiComm>(w, timeout_s);
}

#else

bool mpi_built() { return false; }
std::unique_ptr<Communicator> make_mpi(const World& w, double) {
  OC_USER_ERROR("{} ranks requested ({}) but this build has no MPI: rebuild with libopenmpi-dev installed and "
                "-DOPENCLIP_WITH_MPI=ON",
                w.size, w.source);
}

#endif

}  // namespace oc::dist
