// core/step_rate.h: the training ETA's step time, on synthetic step times. The bounds below are
// what a user reading the ETA would accept (a pause moves it by under 10%, a real change of
// speed is followed within kShiftSteps steps); the mean over the epoch (the ETA before this
// class: a 60 s pause among 30 steps of 1 s tripled it) fails them.
#include "core/step_rate.h"

#include <gtest/gtest.h>

#include <cmath>

namespace oc {
namespace {

void add_n(StepRate& r, int n, double s) {
  for (int i = 0; i < n; ++i) r.add(s);
}

TEST(StepRate, NothingYetAndZeroStepsLeft) {
  StepRate r;
  EXPECT_EQ(r.seconds_per_step(), 0.0);
  EXPECT_EQ(r.eta(100), 0.0);
  r.add(5);
  add_n(r, 4, 1);
  EXPECT_EQ(r.eta(0), 0.0);
  EXPECT_EQ(r.eta(-3), 0.0);  // past the end (a replanned run): nothing left, not negative
}

TEST(StepRate, ConstantStepsGiveTheExactEta) {
  StepRate r;
  r.add(1.0);  // the warm-up, here no slower
  add_n(r, 50, 1.0);
  EXPECT_EQ(r.seconds_per_step(), 1.0);
  EXPECT_EQ(r.eta(250), 250.0);
  EXPECT_EQ(r.steps_counted(), 50);
}

TEST(StepRate, TheWarmUpStepIsLeftOut) {
  StepRate r;
  r.add(12.0);                            // the data loader's start
  EXPECT_EQ(r.seconds_per_step(), 12.0);  // all that is known yet
  r.add(0.5);
  EXPECT_EQ(r.seconds_per_step(), 0.5);
  add_n(r, 20, 0.5);
  EXPECT_EQ(r.eta(100), 50.0);
  EXPECT_EQ(r.steps_counted(), 21);
}

TEST(StepRate, EachEpochsFirstStepIsLeftOutAndTheRateCarriesOver) {
  StepRate r;
  r.add(10);
  add_n(r, 30, 2.0);
  r.new_epoch();
  EXPECT_EQ(r.eta(10), 20.0);  // before epoch 2's first step: epoch 1's rate
  r.add(15);                   // epoch 2's loader restart
  EXPECT_EQ(r.eta(10), 20.0);
  r.add(2.0);
  EXPECT_EQ(r.eta(10), 20.0);
}

TEST(StepRate, ResumedMidEpochTheFirstStepIsAWarmUp) {
  // A resumed run is a new process: a new StepRate, whose first step also reads the
  // checkpoint's loader position and fills the pipeline.
  StepRate r;
  r.add(40);
  add_n(r, 3, 1.0);
  EXPECT_EQ(r.seconds_per_step(), 1.0);
  EXPECT_EQ(r.eta(37), 37.0);
}

TEST(StepRate, OneSlowStepAmongTheFirstIsIgnored) {
  StepRate r;
  r.add(3);
  r.add(1);
  r.add(60);  // a pause at the second counted step: the lower median of (1, 60)
  EXPECT_EQ(r.seconds_per_step(), 1.0);
  r.add(1);
  EXPECT_EQ(r.seconds_per_step(), 1.0);
}

TEST(StepRate, APauseBarelyMovesTheEta) {
  StepRate r;
  r.add(5);
  add_n(r, 30, 1.0);
  const double before = r.eta(1000);
  r.add(60);  // a checkpoint save, a suspended machine
  EXPECT_GE(r.eta(1000), before);
  EXPECT_LT(r.eta(1000), 1.1 * before);
  r.add(60);  // two in a row: still a pause, not a new speed
  EXPECT_LT(r.eta(1000), 1.2 * before);
  add_n(r, 100, 1.0);  // and it fades as steps go on at the old speed
  EXPECT_LT(r.eta(1000), 1.05 * before);
}

TEST(StepRate, ARealSlowdownIsFollowedWithinAFewSteps) {
  StepRate r;
  r.add(5);
  add_n(r, 40, 1.0);
  add_n(r, StepRate::kShiftSteps - 1, 2.0);
  EXPECT_LT(r.seconds_per_step(), 1.5);  // not yet: two slow steps could be a pause
  r.add(2.0);
  EXPECT_NEAR(r.seconds_per_step(), 2.0, 0.2);  // within 10%
  add_n(r, 20, 2.0);
  EXPECT_NEAR(r.eta(100), 200.0, 1e-9);
  // and back: another job ended
  add_n(r, StepRate::kShiftSteps, 0.5);
  EXPECT_NEAR(r.seconds_per_step(), 0.5, 0.05);
}

TEST(StepRate, AlternatingStepsDoNotSwingTheEta) {
  StepRate r;
  r.add(5);
  for (int i = 0; i < 200; ++i) {
    r.add(i % 2 ? 1.5 : 0.5);
    if (i >= 20) {  // after the first steps' median (0.5)
      EXPECT_GT(r.seconds_per_step(), 0.85) << i;
      EXPECT_LT(r.seconds_per_step(), 1.15) << i;
    }
  }
}

TEST(StepRate, ARecurringSlowStepCountsAtItsMean) {
  StepRate r;  // every 10th step twice as long (a log line with TensorBoard scalars, a shard switch)
  r.add(5);
  for (int i = 0; i < 300; ++i) r.add(i % 10 == 9 ? 2.0 : 1.0);
  EXPECT_NEAR(r.seconds_per_step(), 1.1, 0.02);
}

TEST(StepRate, ASlowDriftIsFollowed) {
  StepRate r;  // 1 s to 1.4 s per step over 500 steps (thermal throttling, a growing queue)
  r.add(5);
  double s = 1.0;
  for (int i = 0; i < 500; ++i) r.add(s = 1.0 + 0.4 * i / 499.0);
  EXPECT_NEAR(r.seconds_per_step(), s, 0.1 * s);  // the mean over all steps (1.2 s) is not
}

}  // namespace
}  // namespace oc
