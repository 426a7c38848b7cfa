// The NCCL communicator: the same collectives on device buffers (every pointer passed to it
// is CUDA device memory), on one stream, bootstrapped through MPI (rank 0's ncclUniqueId is
// broadcast with MPI_Bcast). Waiting polls the stream and ncclCommGetAsyncError against the
// deadline (--dist-timeout) and aborts the communicator and the job on expiry, so a dead or
// hung peer never leaves a rank blocked forever. Built only with OPENCLIP_WITH_CUDA (and
// MPI); not exercised on machines without a GPU.
#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "core/check.h"
#include "dist/comm.h"

#if OPENCLIP_HAVE_MPI
#include <mpi.h>
#endif

namespace oc::dist {

namespace {

#define OC_CUDA(x)                                                                        \
  do {                                                                                    \
    cudaError_t e_ = (x);                                                                 \
    OC_CHECK(e_ == cudaSuccess, "{} failed: {}", #x, cudaGetErrorString(e_));             \
  } while (0)
#define OC_NCCL(x)                                                                        \
  do {                                                                                    \
    ncclResult_t r_ = (x);                                                                \
    OC_CHECK(r_ == ncclSuccess || r_ == ncclInProgress, "{} failed: {}", #x, ncclGetErrorString(r_)); \
  } while (0)

class NcclComm final : public Communicator {
 public:
  NcclComm(const World& w, double timeout_s) : rank_(w.rank), size_(w.size), timeout_s_(timeout_s) {
#if OPENCLIP_HAVE_MPI
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited) {
      int provided = 0;
      MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
      owns_mpi_ = true;
    }
    ncclUniqueId id;
    if (rank_ == 0) OC_NCCL(ncclGetUniqueId(&id));
    MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, MPI_COMM_WORLD);
#else
    OC_USER_ERROR("the NCCL communicator is bootstrapped through MPI: rebuild with MPI");
    ncclUniqueId id{};
#endif
    int devices = 0;
    OC_CUDA(cudaGetDeviceCount(&devices));
    if (devices == 0) OC_USER_ERROR("rank {}: no CUDA device", rank_);
    OC_CUDA(cudaSetDevice(w.local_rank % devices));
    OC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    // Non-blocking init so that a missing peer hits the deadline instead of blocking.
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    OC_NCCL(ncclCommInitRankConfig(&comm_, size_, id, rank_, &cfg));
    wait_comm("NCCL communicator initialization");
  }
  ~NcclComm() override {
    if (comm_) ncclCommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
#if OPENCLIP_HAVE_MPI
    int fin = 0;
    MPI_Finalized(&fin);
    if (owns_mpi_ && !fin) MPI_Finalize();
#endif
  }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  const char* backend() const override { return "nccl"; }
  bool device_memory() const override { return true; }

  void broadcast(void* x, int64_t bytes, int root) override {
    OC_NCCL(ncclBroadcast(x, x, size_t(bytes), ncclChar, root, comm_, stream_));
    wait_all("broadcast");
  }
  void allreduce_sum(float* x, int64_t n) override {
    start_allreduce_sum(x, n);
    wait_all("all-reduce");
  }
  void allreduce_sum(double* x, int64_t n) override {
    OC_NCCL(ncclAllReduce(x, x, size_t(n), ncclFloat64, ncclSum, comm_, stream_));
    wait_all("all-reduce");
  }
  void allgather(const float* in, float* out, int64_t n) override {
    OC_NCCL(ncclAllGather(in, out, size_t(n), ncclFloat32, comm_, stream_));
    wait_all("all-gather");
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override {
    OC_NCCL(ncclReduceScatter(in, out, size_t(n), ncclFloat32, ncclSum, comm_, stream_));
    wait_all("reduce-scatter");
  }
  void barrier(const char* what) override {
    // NCCL has no barrier: an all-reduce of one value is one.
    if (!one_) OC_CUDA(cudaMalloc(&one_, sizeof(float)));
    OC_NCCL(ncclAllReduce(one_, one_, 1, ncclFloat32, ncclSum, comm_, stream_));
    wait_all(what);
  }
  void start_allreduce_sum(float* x, int64_t n) override {
    // Queued on the stream in order: buckets overlap with the compute streams.
    OC_NCCL(ncclAllReduce(x, x, size_t(n), ncclFloat32, ncclSum, comm_, stream_));
  }
  void wait_all(const char* what) override {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s_);
    for (;;) {
      cudaError_t q = cudaStreamQuery(stream_);
      if (q == cudaSuccess) return;
      OC_CHECK(q == cudaErrorNotReady, "rank {}: {}: {}", rank_, what, cudaGetErrorString(q));
      ncclResult_t async = ncclSuccess;
      ncclCommGetAsyncError(comm_, &async);
      if (async != ncclSuccess && async != ncclInProgress)
        abort(fmt::format("openclip: rank {} of {}: {} at step {} failed: {}", rank_, size_, what, step_,
                          ncclGetErrorString(async)),
              3);
      if (clock::now() > deadline) timeout(what);
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  [[noreturn]] void abort(const std::string& why, int code) override {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::fflush(stderr);
    if (comm_) ncclCommAbort(comm_), comm_ = nullptr;
#if OPENCLIP_HAVE_MPI
    MPI_Abort(MPI_COMM_WORLD, code);
#endif
    std::_Exit(code);
  }

 private:
  [[noreturn]] void timeout(const char* what) {
    abort(fmt::format("openclip: rank {} of {}: {} at step {} did not complete within {:g} s (--dist-timeout): "
                      "another rank died or hangs. Aborting the job; the last checkpoint is intact.",
                      rank_, size_, what, step_, timeout_s_),
          3);
  }
  void wait_comm(const char* what) {
    using clock = std::chrono::steady_clock;
    const auto deadline = clock::now() + std::chrono::duration<double>(timeout_s_);
    for (;;) {
      ncclResult_t st = ncclInProgress;
      ncclCommGetAsyncError(comm_, &st);
      if (st == ncclSuccess) return;
      if (st != ncclInProgress) abort(fmt::format("rank {}: {}: {}", rank_, what, ncclGetErrorString(st)), 3);
      if (clock::now() > deadline) timeout(what);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
  }

  int rank_, size_;
  double timeout_s_;
  bool owns_mpi_ = false;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  float* one_ = nullptr;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl(const World& w, double timeout_s) {
  return std::make_unique<NcclComm>(w, timeout_s);
}

int nccl_version() {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

}  // namespace oc::dist
