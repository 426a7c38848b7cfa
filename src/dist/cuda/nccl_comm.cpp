// The NCCL communicator: the same collectives on device buffers, on its own communication
// stream, bootstrapped through MPI (rank 0's ncclUniqueId is broadcast with MPI_Bcast).
// Ordering: every collective first waits (cudaStreamWaitEvent) for the work queued so far on
// the compute stream it was given (the cuda backend's), so gradient buckets are reduced after
// backward wrote them and while backward goes on; wait_all returns once the communication
// stream is done, so what the host queues next on the compute stream sees the results.
// Host pointers (the trainer's few host collectives: the run's start time, the agreed loss
// and stop signal, loader positions, barriers) are staged through a device buffer.
// Waiting polls the stream and ncclCommGetAsyncError against the deadline (--dist-timeout)
// and aborts the communicator and the job on expiry, so a dead or hung peer never leaves a
// rank blocked forever. Built with CUDA, NCCL and MPI; NOT YET RUN: the first GPU run had one card, where two ranks use
// MPI (docs/CUDA.md).
#include <cuda_runtime.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
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

// Whether p is device (or managed) memory; host and unregistered pointers are not.
bool on_device(const void* p) {
  cudaPointerAttributes at{};
  if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
    cudaGetLastError();  // older runtimes report unregistered host memory as an error
    return false;
  }
  return at.type == cudaMemoryTypeDevice || at.type == cudaMemoryTypeManaged;
}

class NcclComm final : public Communicator {
 public:
  NcclComm(const World& w, double timeout_s, void* compute_stream)
      : rank_(w.rank), size_(w.size), timeout_s_(timeout_s), compute_(static_cast<cudaStream_t>(compute_stream)) {
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
    // The backend already made its GPU current on this thread; without one, the local rank's.
    if (!compute_) OC_CUDA(cudaSetDevice(w.local_rank % devices));
    OC_CUDA(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    OC_CUDA(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    // Non-blocking init so that a missing peer hits the deadline instead of blocking.
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    OC_NCCL(ncclCommInitRankConfig(&comm_, size_, id, rank_, &cfg));
    wait_comm("NCCL communicator initialization");
  }
  ~NcclComm() override {
    if (comm_) ncclCommDestroy(comm_);
    for (void* p : stage_)
      if (p) cudaFree(p);
    if (one_) cudaFree(one_);
    if (ready_) cudaEventDestroy(ready_);
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
    staged(x, size_t(bytes), x, size_t(bytes), "broadcast", [&](const void* in, void* out) {
      OC_NCCL(ncclBroadcast(in, out, size_t(bytes), ncclChar, root, comm_, stream_));
    });
  }
  void allreduce_sum(float* x, int64_t n) override {
    staged(x, sizeof(float) * size_t(n), x, sizeof(float) * size_t(n), "all-reduce", [&](const void* in, void* out) {
      OC_NCCL(ncclAllReduce(in, out, size_t(n), ncclFloat32, ncclSum, comm_, stream_));
    });
  }
  void allreduce_sum(double* x, int64_t n) override {
    staged(x, sizeof(double) * size_t(n), x, sizeof(double) * size_t(n), "all-reduce", [&](const void* in, void* out) {
      OC_NCCL(ncclAllReduce(in, out, size_t(n), ncclFloat64, ncclSum, comm_, stream_));
    });
  }
  void allgather(const float* in, float* out, int64_t n) override {
    const size_t b = sizeof(float) * size_t(n);
    staged(in, b, out, b * size_t(size_), "all-gather", [&](const void* i, void* o) {
      OC_NCCL(ncclAllGather(i, o, size_t(n), ncclFloat32, comm_, stream_));
    });
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override {
    const size_t b = sizeof(float) * size_t(n);
    staged(in, b * size_t(size_), out, b, "reduce-scatter", [&](const void* i, void* o) {
      OC_NCCL(ncclReduceScatter(i, o, size_t(n), ncclFloat32, ncclSum, comm_, stream_));
    });
  }
  // SigLIP's neighbour exchange: one send and one receive in a group (no deadlock in a ring).
  void sendrecv(const float* send, int dest, float* recv, int src, int64_t n) override {
    const size_t b = sizeof(float) * size_t(n);
    staged(send, b, recv, b, "send/receive", [&](const void* i, void* o) {
      OC_NCCL(ncclGroupStart());
      OC_NCCL(ncclSend(i, size_t(n), ncclFloat32, dest, comm_, stream_));
      OC_NCCL(ncclRecv(o, size_t(n), ncclFloat32, src, comm_, stream_));
      OC_NCCL(ncclGroupEnd());
    });
  }
  void barrier(const char* what) override {
    // NCCL has no barrier: an all-reduce of one value is one.
    if (!one_) OC_CUDA(cudaMalloc(&one_, sizeof(float)));
    follow_compute();
    OC_NCCL(ncclAllReduce(one_, one_, 1, ncclFloat32, ncclSum, comm_, stream_));
    wait_all(what);
  }
  void start_allreduce_sum(float* x, int64_t n) override {
    if (!on_device(x)) return allreduce_sum(x, n);  // a host buffer: staged, blocking
    // Queued on the communication stream after the compute stream's work so far: the bucket
    // is complete, and backward goes on while it is summed.
    follow_compute();
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

  // The communication stream waits for everything queued so far on the compute stream.
  void follow_compute() {
    if (!compute_) return;
    OC_CUDA(cudaEventRecord(ready_, compute_));
    OC_CUDA(cudaStreamWaitEvent(stream_, ready_, 0));
  }
  // Device buffer k (0: input, 1: output) of at least `bytes`, grown on demand.
  void* stage(int k, size_t bytes) {
    if (stage_bytes_[k] < bytes) {
      if (stage_[k]) OC_CUDA(cudaFree(stage_[k]));
      stage_[k] = nullptr;
      OC_CUDA(cudaMalloc(&stage_[k], bytes));
      stage_bytes_[k] = bytes;
    }
    return stage_[k];
  }
  // Runs `collective(in, out)` on device memory and waits for it: host buffers are copied
  // to a device buffer first (input) and back after (output); in == out stays in place.
  template <class F>
  void staged(const void* in, size_t in_bytes, void* out, size_t out_bytes, const char* what, F collective) {
    const bool same = in == out;
    const bool in_dev = on_device(in), out_dev = same ? in_dev : on_device(out);
    const void* din = in;
    void* dout = out;
    follow_compute();
    if (!in_dev) {
      void* d = stage(0, same ? std::max(in_bytes, out_bytes) : in_bytes);
      OC_CUDA(cudaMemcpyAsync(d, in, in_bytes, cudaMemcpyHostToDevice, stream_));
      din = d;
      if (same) dout = d;
    }
    if (!out_dev && !same) dout = stage(1, out_bytes);
    collective(din, dout);
    wait_all(what);
    if (!out_dev) {
      OC_CUDA(cudaMemcpyAsync(out, dout, out_bytes, cudaMemcpyDeviceToHost, stream_));
      wait_all(what);
    }
  }

  int rank_, size_;
  double timeout_s_;
  bool owns_mpi_ = false;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaStream_t compute_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  float* one_ = nullptr;
  void* stage_[2] = {nullptr, nullptr};
  size_t stage_bytes_[2] = {0, 0};
};

}  // namespace

std::unique_ptr<Communicator> make_nccl(const World& w, double timeout_s, void* compute_stream) {
  return std::make_unique<NcclComm>(w, timeout_s, compute_stream);
}

int nccl_version() {
  int v = 0;
  return ncclGetVersion(&v) == ncclSuccess ? v : 0;
}

}  // namespace oc::dist
