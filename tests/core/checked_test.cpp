#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include "core/check.h"
#include "core/checked.h"
#include "error_of.h"

namespace oc {
namespace {

using test::error_of;

TEST(Checked, ProductsAndSumsThatFit) {
  EXPECT_EQ(checked_mul("x", {3, 4, 5}), 60);
  EXPECT_EQ(checked_mul("x", {}), 1);
  EXPECT_EQ(checked_mul("x", {0, std::numeric_limits<int64_t>::max()}), 0);
  EXPECT_EQ(checked_add("x", {1, 2, 3}), 6);
  EXPECT_EQ(checked_round_up("x", 17, 16), 32);
  EXPECT_EQ(checked_round_up("x", 0, 16), 0);
}

TEST(Checked, OverflowAndNegativesNameWhatAndTheOperands) {
  // width 1e9 of a model config: 3W x W wraps 64 bits as a byte count
  std::string e = error_of([] { checked_mul("model x parameters", {3000000000, 1000000000, 4, 1000}); });
  EXPECT_NE(e.find("model x parameters: size 3000000000 x 1000000000 x 4 x 1000 overflows 64 bits"), std::string::npos) << e;
  e = error_of([] { checked_add("y", {std::numeric_limits<int64_t>::max(), 1}); });
  EXPECT_NE(e.find("y: size"), std::string::npos) << e;
  EXPECT_NE(e.find("overflows"), std::string::npos) << e;
  e = error_of([] { checked_mul("mlp", {768, -3072}); });
  EXPECT_NE(e.find("mlp: size 768 x -3072 has a negative operand"), std::string::npos) << e;
  e = error_of([] { checked_round_up("z", std::numeric_limits<int64_t>::max() - 3, 16); });
  EXPECT_NE(e.find("z: size"), std::string::npos) << e;
}

}  // namespace
}  // namespace oc
