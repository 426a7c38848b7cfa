// Data-parallel communication: where this process sits in the job (rank, world, local rank,
// read from the launcher's environment as OpenCLIP does) and a communicator with the few
// collectives training needs. Three implementations: single process (no-ops), MPI (host
// buffers, OpenMPI/MPICH) and NCCL (device buffers, bootstrapped through MPI; CUDA builds),
// picked by make_communicator. Every collective is bounded by a timeout:
// a rank that dies or hangs makes the others abort the job with a message, never hang.
// This header has no MPI types so that optim/ and model/ can use the interface freely.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/launcher_env.h"

namespace oc::dist {

struct World {
  int rank = 0, size = 1, local_rank = 0;
  std::string source = "single process";  // which variables gave the layout
};

// The variables that give a process's local rank: core/launcher_env.h (the CUDA backend reads
// them too, to pick this process's GPU).
using ::oc::kLocalRankVars;

// OpenCLIP's order (distributed.py world_info_from_env): LOCAL_RANK, MPI_LOCALRANKID,
// SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK; RANK, PMI_RANK, SLURM_PROCID,
// OMPI_COMM_WORLD_RANK; WORLD_SIZE, PMI_SIZE, SLURM_NTASKS, OMPI_COMM_WORLD_SIZE.
// `env` looks a name up (getenv by default; tests pass their own).
World world_from_env(const char* (*env)(const char*) = nullptr);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual const char* backend() const = 0;
  // Whether the collectives take device memory (NCCL) rather than host memory (MPI, single).
  virtual bool device_memory() const { return false; }
  // Step shown in timeout messages.
  void set_step(int64_t s) { step_ = s; }

  virtual void broadcast(void* x, int64_t bytes, int root) = 0;
  virtual void allreduce_sum(float* x, int64_t n) = 0;
  virtual void allreduce_sum(double* x, int64_t n) = 0;
  // out[size*n] = the n values of every rank, in rank order.
  virtual void allgather(const float* in, float* out, int64_t n) = 0;
  // out[n] = sum over ranks of in[rank*n .. rank*n+n) (the backward of allgather).
  virtual void reduce_scatter_sum(const float* in, float* out, int64_t n) = 0;
  virtual void barrier(const char* what) = 0;
  // Non-blocking sum in place (gradient buckets while backward continues); wait_all ends
  // every started one.
  virtual void start_allreduce_sum(float* x, int64_t n) = 0;
  virtual void wait_all(const char* what) = 0;
  // Point to point, every rank at once (a ring shift when dest/src are neighbours): sends
  // n floats to `dest` and receives n floats from `src`. SigLIP's neighbour exchange.
  virtual void sendrecv(const float* send, int dest, float* recv, int src, int64_t n);
  // Ends every rank of the job with exit status `code` after printing `why` (from this rank).
  [[noreturn]] virtual void abort(const std::string& why, int code) = 0;

  // Byte strings of varying length from every rank (checkpointed loader positions).
  std::vector<std::string> allgather_strings(const std::string& mine);

 protected:
  int64_t step_ = -1;
};

std::unique_ptr<Communicator> make_single();
bool mpi_built();
// MPI_Init_thread (funneled) and a world communicator; timeout_s bounds every collective.
// Throws oc::Error when MPI is not built or the launcher's layout disagrees with MPI's.
std::unique_ptr<Communicator> make_mpi(const World& w, double timeout_s);
// NCCL on device buffers (CUDA builds where NCCL was found: OPENCLIP_HAVE_NCCL is then
// defined; bootstrapped through MPI). compute_stream: the cuda backend's stream
// (Backend::device_stream()), which every collective waits for; host pointers are staged.
// NCCL refuses two ranks on one GPU ("Duplicate GPU"): one process per GPU.
std::unique_ptr<Communicator> make_nccl(const World& w, double timeout_s, void* compute_stream);
#if OPENCLIP_HAVE_NCCL
int nccl_version();  // ncclGetVersion: 22704 = 2.27.4
#endif
// The communicator for this process: single when the world has one rank; with several, NCCL
// when the backend is a device backend (device_stream non-null) and NCCL is built, else MPI
// (a device backend then stages every collective through host memory: step/comm_io.h).
// OPENCLIP_COMM=mpi forces MPI (several ranks sharing one GPU, where NCCL cannot run).
std::unique_ptr<Communicator> make_communicator(const World& w, double timeout_s, void* device_stream = nullptr);

}  // namespace oc::dist
