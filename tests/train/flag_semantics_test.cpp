// Flags whose OpenCLIP 2.24 behaviour is a trap are refused with the reason; the others
// behave as 2.24's (checkpoint deletion after every epoch).
#include <gtest/gtest.h>

#include "core/fs.h"
#include "test_util.h"

namespace oc {
namespace {

std::string tiny(const std::string& dir, const std::string& name) {
  return "cd '" + dir + "' && " + test::openclip() +
         " train --dataset-type synthetic --train-num-samples 32 --batch-size 16 --model test-tiny --workers 1"
         " --precision fp32 --name " + name;
}

TEST(FlagSemantics, RefusedWhere224Misbehaves) {
  const std::string dir = test::fresh_dir("flag_refusals");
  const std::pair<const char*, const char*> cases[] = {
      {" --epochs 3 --save-frequency 2 --delete-previous-checkpoint", "one epoch later"},
      {" --epochs 1 --grad-clip-norm 0", "zeroes all of them"},
      {" --epochs 1 --grad-clip-norm -1", "reverses them"},
  };
  int k = 0;
  for (const auto& [flags, why] : cases) {
    auto r = test::run(tiny(dir, "r" + std::to_string(k++)) + flags);
    EXPECT_NE(r.status, 0) << flags;
    EXPECT_NE(r.out.find(why), std::string::npos) << flags << "\n" << r.out;
  }
}

TEST(FlagSemantics, DeletePreviousCheckpointAfterEveryEpochAs224) {
  const std::string dir = test::fresh_dir("flag_delete_prev");
  auto r = test::run(tiny(dir, "d") + " --epochs 3 --delete-previous-checkpoint");
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_FALSE(fs::exists(dir + "/logs/d/checkpoints/epoch_1.pt"));
  EXPECT_FALSE(fs::exists(dir + "/logs/d/checkpoints/epoch_2.pt"));
  EXPECT_TRUE(fs::exists(dir + "/logs/d/checkpoints/epoch_3.pt"));
}

}  // namespace
}  // namespace oc
