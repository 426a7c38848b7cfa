// The CPU kind every figure is recorded with (core/machine.h): microarchitecture from CPUID.
#include <gtest/gtest.h>

#include "core/machine.h"

namespace oc {
namespace {

TEST(Machine, MicroarchitectureFromVendorFamilyModel) {
  // The three kinds this project's machines come in, and their neighbours.
  EXPECT_EQ(cpu_uarch("AuthenticAMD", 0x19, 0x01), "Zen 3");  // EPYC Milan
  EXPECT_EQ(cpu_uarch("AuthenticAMD", 0x19, 0x11), "Zen 4");  // EPYC Genoa
  EXPECT_EQ(cpu_uarch("AuthenticAMD", 0x19, 0xa0), "Zen 4");  // EPYC Bergamo
  EXPECT_EQ(cpu_uarch("AuthenticAMD", 0x19, 0x21), "Zen 3");  // Ryzen 5000
  EXPECT_EQ(cpu_uarch("AuthenticAMD", 0x1a, 0x02), "Zen 5");  // EPYC Turin
  EXPECT_EQ(cpu_uarch("AuthenticAMD", 0x17, 0x31), "Zen 2");  // EPYC Rome
  EXPECT_EQ(cpu_uarch("GenuineIntel", 6, 0x8f), "Sapphire Rapids");
  EXPECT_EQ(cpu_uarch("GenuineIntel", 6, 0xcf), "Emerald Rapids");
  EXPECT_EQ(cpu_uarch("GenuineIntel", 6, 0x01), "");  // not in the table: the kind shows the numbers
  EXPECT_EQ(cpu_uarch("HygonGenuine", 0x18, 0x01), "");
}

TEST(Machine, KindNamesModelMicroarchitectureAndMatrixIsa) {
  MachineInfo m;
  m.cpu_model = "AMD EPYC";
  m.vendor = "AuthenticAMD", m.family = 0x1a, m.model = 2, m.uarch = "Zen 5";
  m.avx2 = m.avx512f = m.avx512_bf16 = true;
  EXPECT_EQ(cpu_kind(m), "AMD EPYC (Zen 5, family 26 model 2; AVX512-BF16, no AMX)");
  m.uarch = "", m.avx512f = m.avx512_bf16 = false;
  EXPECT_EQ(cpu_kind(m), "AMD EPYC (family 26 model 2; AVX2 only)");
}

TEST(Machine, ThisMachineHasAVendorAndFamily) {
  const MachineInfo m = machine_info();
  EXPECT_FALSE(m.vendor.empty());
  EXPECT_GT(m.family, 0);
  EXPECT_EQ(m.uarch, cpu_uarch(m.vendor, m.family, m.model));
  EXPECT_NE(cpu_kind(m).find(m.cpu_model), std::string::npos);
}

}  // namespace
}  // namespace oc
