#include "step/comm_io.h"

#include "core/check.h"

namespace oc {

CommIO::CommIO(ops::Backend& be, dist::Communicator& comm)
    : be_(be), comm_(comm), direct_(be.host_memory() != comm.device_memory()) {
  OC_CHECK(!(be.host_memory() && comm.device_memory()),
           "the {} communicator needs device memory, but backend {} keeps its buffers on the host", comm.backend(),
           be.name());
}

const std::vector<float>& CommIO::to_host(std::vector<float>& h, const float* x, int64_t n) {
  h.resize(size_t(n));
  be_.copy_to_host(h.data(), x, sizeof(float) * size_t(n));
  return h;
}

void CommIO::broadcast(float* x, int64_t n, int root) {
  if (direct_) return comm_.broadcast(x, int64_t(sizeof(float)) * n, root);
  to_host(in_, x, n);
  comm_.broadcast(in_.data(), int64_t(sizeof(float)) * n, root);
  be_.copy_from_host(x, in_.data(), sizeof(float) * size_t(n));
}

void CommIO::allgather(const float* in, float* out, int64_t n) {
  if (direct_) return comm_.allgather(in, out, n);
  to_host(in_, in, n);
  out_.resize(size_t(n) * size_t(comm_.size()));
  comm_.allgather(in_.data(), out_.data(), n);
  be_.copy_from_host(out, out_.data(), sizeof(float) * out_.size());
}

void CommIO::reduce_scatter_sum(const float* in, float* out, int64_t n) {
  if (direct_) return comm_.reduce_scatter_sum(in, out, n);
  to_host(in_, in, n * comm_.size());
  out_.resize(size_t(n));
  comm_.reduce_scatter_sum(in_.data(), out_.data(), n);
  be_.copy_from_host(out, out_.data(), sizeof(float) * size_t(n));
}

void CommIO::sendrecv(const float* send, int dest, float* recv, int src, int64_t n) {
  if (direct_) return comm_.sendrecv(send, dest, recv, src, n);
  to_host(in_, send, n);
  out_.resize(size_t(n));
  comm_.sendrecv(in_.data(), dest, out_.data(), src, n);
  be_.copy_from_host(recv, out_.data(), sizeof(float) * size_t(n));
}

void CommIO::start_allreduce_sum(float* x, int64_t n) {
  if (direct_) return comm_.start_allreduce_sum(x, n);
  Pending p{x, {}};
  to_host(p.host, x, n);
  pending_.push_back(std::move(p));  // moving the vector keeps its data where the sum runs
  comm_.start_allreduce_sum(pending_.back().host.data(), n);
}

void CommIO::wait_all(const char* what) {
  comm_.wait_all(what);
  for (Pending& p : pending_) be_.copy_from_host(p.dst, p.host.data(), sizeof(float) * p.host.size());
  pending_.clear();
}

}  // namespace oc
