// Helpers of the mpirun tests (dist_test.cpp, multihost_long_test.cpp): the mpirun command,
// a small reproducible training command, the logged losses and the weight difference of
// two checkpoints.
#pragma once
#include <gtest/gtest.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "dist/comm.h"
#include "test_util.h"

namespace oc::test::dist {

inline bool have_mpi() {
  return ::oc::dist::mpi_built() && std::system("mpirun --version >/dev/null 2>&1") == 0;
}
inline std::string mpirun(int np) {
  std::string cmd = "mpirun --allow-run-as-root --oversubscribe --bind-to none -np " + std::to_string(np) + " ";
#ifdef OPENCLIP_SANITIZED
  // Open MPI dlcloses its plugins in MPI_Finalize, so their one-time allocations are reported as
  // leaks in "<unknown module>" frames that no suppression can name. Leak checking stays on for
  // every single-process test of the same code; ASan's other checks stay on here.
  cmd += "-x ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ";
#endif
  return cmd;
}

// Same data on both layouts: the sample order is one permutation per epoch and rank r takes [r::2], so the 2 ranks' batch k together hold the
// single process's batch k of 2B. RandomResizedCrop is seeded per rank and slot, so
// augmentation is pinned to the identity (scale and ratio 1) to make samples equal.
// --eps 1e-3 (about the gradients' size) makes AdamW's update depend on the gradient's
// scale: a gradient off by the world size (OpenCLIP's default-mode convention) then fails
// both checks (measured: 4.6e-3 relative loss, 1.5e-3 weights) instead of hiding in
// AdamW's scale invariance.
inline std::string train_cmd(const std::string& dir, const std::string& name, int batch, const std::string& extra = "",
                             const std::string& model = "test-tiny") {
  return "cd '" + dir + "' && " + test::openclip() +
         " train --dataset-type synthetic-learnable --train-num-samples 64 --model '" + model +
         "' --warmup 2 --lr 2e-3"
         " --wd 0.1 --eps 1e-3 --workers 1 --precision fp32 --seed 3 --epochs 1 --threads 1 --log-every-n-steps 1"
         " --report-to tensorboard --aug-cfg 'scale=(1,1)' 'ratio=(1,1)' --batch-size " +
         std::to_string(batch) + " --name " + name + " " + extra;
}

inline std::vector<double> losses(const std::string& run_dir) {
  test::Run r = run(test::openclip() + " logs export '" + run_dir + "' --tag train/loss");
  EXPECT_EQ(r.status, 0) << r.out;
  std::vector<double> v;
  std::istringstream in(r.out);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) v.push_back(std::stod(line.substr(line.rfind(',', line.rfind(',') - 1) + 1)));
  return v;
}

// Max |a - b| over the state_dicts of two checkpoints (module. stripped from both), except the key
// third of attn.in_proj_bias: its gradient is zero analytically (softmax ignores a shift of
// every key by one vector), so both runs hold rounding noise there, which AdamW normalizes
// to steps of about lr: it differs by up to a few lr whatever the summation order.
inline double weight_diff(const std::string& a, const std::string& b) {
  const std::string py =
      "import torch,sys\n"
      "L=lambda f:{k[7:] if k.startswith('module.') else k:v for k,v in torch.load(f,map_location='cpu')['state_dict'].items()}\n"
      "A=L(sys.argv[1])\n"
      "B=L(sys.argv[2])\n"
      "assert A.keys()==B.keys()\n"
      "m=0.0\n"
      "for k in A:\n"
      "  d=(A[k]-B[k]).abs()\n"
      "  if k.endswith('attn.in_proj_bias'):\n"
      "    w=d.numel()//3; d=torch.cat([d[:w],d[2*w:]])\n"
      "  m=max(m,float(d.max()))\n"
      "print('MAXDIFF',m)\n";
  const std::string script = ::testing::TempDir() + "/dist_wdiff.py";
  FILE* f = std::fopen(script.c_str(), "w");
  std::fputs(py.c_str(), f);
  std::fclose(f);
  test::Run r = run("/usr/bin/python3 '" + script + "' '" + a + "' '" + b + "'");
  EXPECT_EQ(r.status, 0) << r.out;
  size_t p = r.out.find("MAXDIFF ");
  return p == std::string::npos ? 1e9 : std::stod(r.out.substr(p + 8));
}

}  // namespace oc::test::dist
