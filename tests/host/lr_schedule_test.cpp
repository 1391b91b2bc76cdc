#include "train/lr_schedule.hpp"

#include <gtest/gtest.h>

namespace gradsweep {
namespace {

TEST(LearningRate, WarmupThenCosineToMin) {
  using train::learning_rate;
  EXPECT_DOUBLE_EQ(learning_rate(0, 100, 10, 1.0, 0.1), 0.1);
  EXPECT_DOUBLE_EQ(learning_rate(9, 100, 10, 1.0, 0.1), 1.0);
  EXPECT_DOUBLE_EQ(learning_rate(10, 100, 10, 1.0, 0.1), 1.0);
  EXPECT_NEAR(learning_rate(99, 100, 10, 1.0, 0.1), 0.1, 1e-12);
  const double mid = learning_rate(10 + 89 / 2, 100, 10, 1.0, 0.1);
  EXPECT_GT(mid, 0.5);
  EXPECT_LT(mid, 0.6);
  EXPECT_DOUBLE_EQ(learning_rate(5, 1, 0, 2.0, 0.0), 2.0);
}

}  // namespace
}  // namespace gradsweep
