// openclip bench infer --tower image|text|both (src/cli/cmd_bench.cpp): which encoders are timed,
// as bench/compare_peers.py reads them from --json; anything else is refused by name.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace oc::test {
namespace {

nlohmann::json infer_json(const std::string& tower) {
  const std::string cmd = openclip() +
                          " bench infer --model test-tiny --batch-size 2 --steps 1 --warmup-steps 0 --json" +
                          (tower.empty() ? "" : " --tower " + tower);
  ::oc::test::Run r = run(cmd + " 2>/dev/null");
  EXPECT_EQ(r.status, 0) << cmd << "\n" << r.out;
  const size_t nl = r.out.find_last_of('\n', r.out.size() - 2);
  return nlohmann::json::parse(nl == std::string::npos ? r.out : r.out.substr(nl + 1));
}

TEST(CliBenchInfer, TowerTimesOneEncoderOrBoth) {
  const char* image[] = {"encode_image_per_second", "encode_image_cpu_seconds_per_batch", "encode_image_profile"};
  const char* text[] = {"encode_text_per_second", "encode_text_cpu_seconds_per_batch", "text_tokens_computed"};
  for (const std::string tower : {"", "both", "image", "text"}) {
    const nlohmann::json j = infer_json(tower);
    for (const char* k : image) EXPECT_EQ(j.contains(k), tower != "text") << tower << " " << k << "\n" << j.dump();
    for (const char* k : text) EXPECT_EQ(j.contains(k), tower != "image") << tower << " " << k << "\n" << j.dump();
    const char* rate = tower == "text" ? "encode_text_per_second" : "encode_image_per_second";
    ASSERT_TRUE(j.contains(rate)) << tower;
    EXPECT_GT(j[rate].get<double>(), 0.0) << tower;
  }
}

TEST(CliBenchInfer, RefusesAnUnknownTower) {
  ::oc::test::Run r = run(openclip() + " bench infer --model test-tiny --batch-size 2 --steps 1 --tower vision");
  EXPECT_EQ(r.status, 1) << r.out;
  EXPECT_NE(r.out.find("bench infer --tower vision: choose image, text or both"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace oc::test
