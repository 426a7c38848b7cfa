// --device on the commands and the backend list of `openclip info`.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace oc::test {
namespace {

TEST(CliDevice, InfoListsRefAndCpu) {
  ::oc::test::Run r = run(openclip() + " info --json");
  ASSERT_EQ(r.status, 0) << r.out;
  auto j = nlohmann::json::parse(r.out);
  ASSERT_GE(j["backends"].size(), 2u) << r.out;
  EXPECT_EQ(j["backends"][0]["name"], "ref");
  EXPECT_EQ(j["backends"][1]["name"], "cpu");
  EXPECT_TRUE(j["backends"][1]["available"].get<bool>());
}

TEST(CliDevice, UnknownDeviceListsTheAvailableOnes) {
  for (const char* cmd : {" bench train --model test-tiny --batch-size 2 --steps 1 --device tpu",
                          " train --model test-tiny --train-data x.csv --device tpu"}) {
    ::oc::test::Run r = run(openclip() + cmd);
    EXPECT_NE(r.status, 0) << cmd;
    EXPECT_NE(r.out.find("unknown device 'tpu'; available: ref, cpu"), std::string::npos) << cmd << "\n" << r.out;
  }
}

TEST(CliDevice, BenchRunsOnRefAndCpuWithTheSameLoss) {
  double loss[2];
  const char* dev[2] = {"ref", "cpu"};
  for (int i = 0; i < 2; ++i) {
    ::oc::test::Run r =
        run(openclip() + " bench train --model test-tiny --precision fp32 --batch-size 4 --steps 1 --json --device " +
            dev[i]);
    ASSERT_EQ(r.status, 0) << r.out;
    loss[i] = nlohmann::json::parse(r.out.substr(r.out.find('{')))["loss"].get<double>();
  }
  // The same synthetic batch and weights; fp32 on both (see tests/model/backend_step_test.cpp).
  EXPECT_NEAR(loss[0], loss[1], 1e-5 * std::abs(loss[0]));
}

}  // namespace
}  // namespace oc::test
