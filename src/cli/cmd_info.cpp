// openclip info [--json]: the machine and its devices, as npu-smi/nvidia-smi are for
// accelerators: CPU, ISA extensions, the ISA oneDNN dispatches to, memory, build features.
#include <fmt/format.h>

#include <cstdio>

#include <nlohmann/json.hpp>

#include "cli/args.h"
#include "cli/command.h"
#include "core/machine.h"
#include "core/flags.h"
#include "ops/registry.h"
#include "ops/dnnl_info.h"
#include "ops/gemm.h"
#ifdef OPENCLIP_HAVE_CUDA
#include "ops/cuda/cuda_backend.h"
#endif
#if OPENCLIP_HAVE_NCCL
#include "dist/comm.h"
#endif

namespace oc::cli {
namespace {

nlohmann::json info_json() {
  MachineInfo m = machine_info();
  nlohmann::json j;
  j["version"] = OPENCLIP_VERSION;
  j["hostname"] = m.hostname;
  j["cpu"] = {{"model", m.cpu_model},   {"vendor", m.vendor},         {"family", m.family},
              {"model_id", m.model},     {"uarch", m.uarch},           {"kind", cpu_kind(m)},
              {"logical_cpus", m.logical_cpus}, {"threads", m.usable_threads}};
  j["isa"] = {{"avx2", m.avx2},         {"fma", m.fma},           {"avx512f", m.avx512f},
              {"avx512bw", m.avx512bw}, {"avx512_vnni", m.avx512_vnni}, {"avx512_bf16", m.avx512_bf16},
              {"amx_tile", m.amx_tile}, {"amx_bf16", m.amx_bf16}, {"amx_int8", m.amx_int8},
              {"avx_vnni", m.avx_vnni}};
  j["onednn"] = {{"version", ops::dnnl_version()},
                 {"isa", ops::dnnl_isa()},
                 {"native_bf16_matmul", ops::native_bf16()},
                 {"bf16_gemm", ops::bf16_gemm_native() ? "native" : "widened"},
                 {"int8_gemm", ops::int8_path()}};
  j["kernels"] = {{"attention_bf16", ops::attention_kernel()}};
  j["memory"] = {{"total_bytes", m.mem_total_bytes}, {"available_bytes", m.mem_available_bytes}};
#ifdef OPENCLIP_HAVE_MPI
  j["build"]["mpi"] = true;
#else
  j["build"]["mpi"] = false;
#endif
#ifdef OPENCLIP_HAVE_CUDA
  j["build"]["cuda"] = true;
#else
  j["build"]["cuda"] = false;
#endif
  j["backends"] = nlohmann::json::array();
  for (const ops::BackendInfo& b : ops::backend_list())
    j["backends"].push_back({{"name", b.name}, {"available", b.available}, {"description", b.description}});
  j["devices"] = nlohmann::json::array();
  j["devices"].push_back({{"index", 0}, {"kind", "cpu"}, {"name", m.cpu_model}, {"threads", m.usable_threads}});
  j["gpu_error"] = "this build has no CUDA (-DOPENCLIP_CUDA=ON)";
#ifdef OPENCLIP_HAVE_CUDA
  const ops::CudaRuntimeInfo cu = ops::cuda_runtime_info();
  j["cuda"] = {{"driver_version", cu.driver_version}, {"runtime_version", cu.runtime_version}};
#if OPENCLIP_HAVE_NCCL
  j["cuda"]["nccl_version"] = dist::nccl_version();
#endif
  j["gpu_error"] = cu.error;
  for (const ops::CudaDeviceInfo& d : cu.devices)
    j["devices"].push_back({{"index", d.index}, {"kind", "cuda"}, {"name", d.name}, {"total_bytes", d.total_bytes},
                            {"free_bytes", d.free_bytes}, {"compute_capability", fmt::format("{}.{}", d.cc_major, d.cc_minor)},
                            {"sm_count", d.sm_count}});
#endif
  std::string vocab = find_data_file("bpe_simple_vocab_16e6.txt.gz");
  j["vocab"] = vocab.empty() ? nlohmann::json(nullptr) : nlohmann::json(vocab);
  return j;
}

int run(const std::vector<std::string>& args) {
  RunToolArgs opt;
  if (!parse_flags("info", args, &opt)) return 0;
  nlohmann::json j = info_json();
  if (opt.json) {
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  auto yn = [](bool b) { return b ? "yes" : "no"; };
  auto& isa = j["isa"];
  std::printf("openclip %s on %s\n", OPENCLIP_VERSION, j["hostname"].get<std::string>().c_str());
  std::printf("+------------------------------------------------------------------------------+\n");
  std::printf("| CPU      %-68.68s|\n", j["cpu"]["kind"].get<std::string>().c_str());
  std::printf("| cores    %-3d logical, %-3d threads in use%-37s|\n", j["cpu"]["logical_cpus"].get<int>(),
              j["cpu"]["threads"].get<int>(), "");
  std::printf("| ISA      AVX2 %-3s FMA %-3s AVX-512 %-3s AVX512-BF16 %-3s AMX-BF16 %-3s VNNI %-3s  |\n",
              yn(isa["avx2"]), yn(isa["fma"]), yn(isa["avx512f"]), yn(isa["avx512_bf16"]), yn(isa["amx_bf16"]),
              yn(isa["avx_vnni"]));
  std::printf("| oneDNN   %-8s dispatches to %-20s bf16 GEMMs: %-12s|\n",
              j["onednn"]["version"].get<std::string>().c_str(), j["onednn"]["isa"].get<std::string>().c_str(),
              j["onednn"]["bf16_gemm"].get<std::string>().c_str());
  std::printf("| int8     --precision int8 GEMMs: %-44.44s|\n",
              (j["onednn"]["int8_gemm"].get<std::string>() == "none"
                   ? std::string("none (no VNNI: falls back to amp_bf16/fp32)")
                   : j["onednn"]["int8_gemm"].get<std::string>() + " (oneDNN s8 matmul)")
                  .c_str());
  std::printf("| attn     amp_bf16 / int8 attention kernel: %-34.34s|\n",
              j["kernels"]["attention_bf16"].get<std::string>().c_str());
  std::printf("| memory   %6.1f GiB total, %6.1f GiB available%-30s|\n",
              j["memory"]["total_bytes"].get<double>() / (1 << 30),
              j["memory"]["available_bytes"].get<double>() / (1 << 30), "");
  std::printf("| build    MPI %-3s CUDA %-3s%-52s|\n", yn(j["build"]["mpi"]), yn(j["build"]["cuda"]), "");
  auto ver = [](int v) { return fmt::format("{}.{}", v / 1000, (v % 1000) / 10); };
  if (j.contains("cuda")) {
    std::string line = "driver " + ver(j["cuda"]["driver_version"].get<int>()) + ", runtime " +
                       ver(j["cuda"]["runtime_version"].get<int>());
    if (j["cuda"].contains("nccl_version")) {
      const int n = j["cuda"]["nccl_version"].get<int>();
      line += fmt::format(", NCCL {}.{}.{}", n / 10000, (n % 10000) / 100, n % 100);
    }
    std::printf("| CUDA     %-68s|\n", line.c_str());
  }
  std::printf("| devices  %-68s|\n", "cpu:0");
  bool gpu = false;
  for (const auto& d : j["devices"]) {
    if (d["kind"] != "cuda") continue;
    gpu = true;
    std::string line = fmt::format("cuda:{} {}, {:.1f} GiB ({:.1f} free), sm_{}, {} SMs", d["index"].get<int>(),
                                   d["name"].get<std::string>(), d["total_bytes"].get<double>() / (1 << 30),
                                   d["free_bytes"].get<double>() / (1 << 30), d["compute_capability"].get<std::string>(),
                                   d["sm_count"].get<int>());
    if (line.size() > 68) line = line.substr(0, 65) + "...";
    std::printf("| %-8s %-68s|\n", "", line.c_str());
  }
  if (!gpu) {
    const std::string err = j["gpu_error"].get<std::string>();
    std::string line = err.rfind("no visible GPU", 0) == 0 ? err : "no visible GPU: " + err;
    if (line.size() > 68) line = line.substr(0, 65) + "...";
    std::printf("| %-8s %-68s|\n", "", line.c_str());
  }
  for (const auto& b : j["backends"]) {
    std::string line = b["name"].get<std::string>() + (b["available"].get<bool>() ? "" : " (not available)") + ": " +
                       b["description"].get<std::string>();
    if (line.size() > 68) line = line.substr(0, 65) + "...";
    std::printf("| %-8s %-68s|\n", &b == &j["backends"][0] ? "--device" : "", line.c_str());
  }
  std::printf("| vocab    %-68s|\n", j["vocab"].is_null() ? "not installed (run scripts/setup.sh)"
                                                          : j["vocab"].get<std::string>().c_str());
  std::printf("+------------------------------------------------------------------------------+\n");
  return 0;
}

OC_REGISTER_COMMAND("info", "the machine and its devices (CPU, ISA, oneDNN, memory, build)", run);

}  // namespace
}  // namespace oc::cli
