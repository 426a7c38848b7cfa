// The collectives of training over backend memory. The communicator takes host memory (MPI,
// single process) or device memory (NCCL); when that is the memory the backend's buffers
// are (a host backend with MPI, a device backend with NCCL) the pointers go straight
// through, as before backends existed (zero cost). Otherwise (a device backend with MPI)
// each call stages through host buffers: copy_to_host, the collective, copy_from_host.
#pragma once
#include <cstdint>
#include <vector>

#include "dist/comm.h"
#include "ops/backend.h"

namespace oc {

class CommIO {
 public:
  CommIO(ops::Backend& be, dist::Communicator& comm);
  bool direct() const { return direct_; }
  dist::Communicator& comm() const { return comm_; }

  // The communicator's calls of the same name; every pointer is memory of the backend.
  void broadcast(float* x, int64_t n, int root);
  void allgather(const float* in, float* out, int64_t n);
  void reduce_scatter_sum(const float* in, float* out, int64_t n);
  void sendrecv(const float* send, int dest, float* recv, int src, int64_t n);
  // Non-blocking sum in place; staged buffers are copied back by wait_all.
  void start_allreduce_sum(float* x, int64_t n);
  void wait_all(const char* what);

 private:
  const std::vector<float>& to_host(std::vector<float>& h, const float* x, int64_t n);
  ops::Backend& be_;
  dist::Communicator& comm_;
  bool direct_;
  std::vector<float> in_, out_;  // staging, reused
  struct Pending {
    float* dst;               // backend memory
    std::vector<float> host;  // the buffer the communicator sums in
  };
  std::vector<Pending> pending_;
};

}  // namespace oc
