// World layout from the launcher's environment, the single-process communicator and the
// pieces every backend shares.
#include "dist/comm.h"

#include <cstdlib>
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "core/check.h"

namespace oc::dist {

namespace {

const char* sys_env(const char* name) { return std::getenv(name); }

// The first of `names` that is set: its value and name.
template <class Names>
bool first_set(const char* (*env)(const char*), const Names& names, int* out, std::string* which) {
  for (const char* n : names) {
    const char* v = env(n);
    if (v && *v) {
      char* end = nullptr;
      long x = std::strtol(v, &end, 10);
      if (*end != '\0' || x < 0) OC_USER_ERROR("environment variable {}={} is not a non-negative integer", n, v);
      *out = int(x);
      *which = n;
      return true;
    }
  }
  return false;
}

class SingleComm final : public Communicator {
 public:
  int rank() const override { return 0; }
  int size() const override { return 1; }
  const char* backend() const override { return "single"; }
  void broadcast(void*, int64_t, int) override {}
  void allreduce_sum(float*, int64_t) override {}
  void allreduce_sum(double*, int64_t) override {}
  void allgather(const float* in, float* out, int64_t n) override {
    if (in != out) std::memmove(out, in, sizeof(float) * size_t(n));
  }
  void reduce_scatter_sum(const float* in, float* out, int64_t n) override {
    if (in != out) std::memmove(out, in, sizeof(float) * size_t(n));
  }
  void barrier(const char*) override {}
  void sendrecv(const float* send, int dest, float* recv, int src, int64_t n) override {
    OC_CHECK(dest == 0 && src == 0, "single process: send to {} / receive from {}", dest, src);
    if (send != recv) std::memmove(recv, send, sizeof(float) * size_t(n));
  }
  void start_allreduce_sum(float*, int64_t) override {}
  void wait_all(const char*) override {}
  [[noreturn]] void abort(const std::string& why, int code) override {
    std::fprintf(stderr, "%s\n", why.c_str());
    std::_Exit(code);
  }
};

}  // namespace

void Communicator::sendrecv(const float*, int, float*, int, int64_t) {
  OC_FAIL("the {} communicator has no point-to-point exchange", backend());
}

World world_from_env(const char* (*env)(const char*)) {
  if (!env) env = sys_env;
  World w;
  std::string a, b, c;
  using Names = std::initializer_list<const char*>;
  first_set(env, kLocalRankVars, &w.local_rank, &a);
  const bool has_rank = first_set(env, Names{"RANK", "PMI_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK"}, &w.rank, &b);
  const bool has_size =
      first_set(env, Names{"WORLD_SIZE", "PMI_SIZE", "SLURM_NTASKS", "OMPI_COMM_WORLD_SIZE"}, &w.size, &c);
  if (!has_size || w.size <= 1) return World{};
  if (!has_rank) OC_USER_ERROR("{}={} is set but no rank variable (RANK, PMI_RANK, SLURM_PROCID, OMPI_COMM_WORLD_RANK)", c, w.size);
  if (w.rank >= w.size) OC_USER_ERROR("{}={} is not below {}={}", b, w.rank, c, w.size);
  w.source = fmt::format("{}/{}{}", b, c, a.empty() ? "" : "/" + a);
  return w;
}

std::vector<std::string> Communicator::allgather_strings(const std::string& mine) {
  const int W = size();
  std::vector<float> len(static_cast<size_t>(W));
  const float my_len = float(mine.size());  // exact below 2^24 bytes: positions are small JSON
  OC_CHECK(mine.size() < (1u << 24), "string of {} bytes is too long to gather", mine.size());
  allgather(&my_len, len.data(), 1);
  size_t mx = 0;
  for (float l : len) mx = std::max(mx, size_t(l));
  const size_t words = (mx + 3) / 4;  // bytes travel as float words (bit copies, no arithmetic)
  std::vector<float> in(words + 1, 0.0f), out((words + 1) * size_t(W));
  std::memcpy(in.data(), mine.data(), mine.size());
  allgather(in.data(), out.data(), int64_t(words + 1));
  std::vector<std::string> r(static_cast<size_t>(W));
  for (int i = 0; i < W; ++i)
    r[size_t(i)].assign(reinterpret_cast<const char*>(out.data() + size_t(i) * (words + 1)), size_t(len[size_t(i)]));
  return r;
}

std::unique_ptr<Communicator> make_single() { return std::make_unique<SingleComm>(); }

std::unique_ptr<Communicator> make_communicator(const World& w, double timeout_s, void* device_stream) {
  if (w.size <= 1) return make_single();
  const char* force = std::getenv("OPENCLIP_COMM");
  const std::string choice = force ? force : "";
  if (!choice.empty() && choice != "mpi" && choice != "nccl")
    OC_USER_ERROR("OPENCLIP_COMM={}: choose mpi or nccl (or leave it unset)", choice);
#if OPENCLIP_HAVE_NCCL
  if (device_stream && choice != "mpi") return make_nccl(w, timeout_s, device_stream);
#endif
  if (choice == "nccl")
    OC_USER_ERROR("OPENCLIP_COMM=nccl: {}", device_stream ? "this build has no NCCL (docs/CUDA.md)"
                                                          : "NCCL needs --device cuda (device memory)");
  return make_mpi(w, timeout_s);
}

}  // namespace oc::dist
