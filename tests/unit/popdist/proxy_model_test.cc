// Tests of the stand-in model the sample application trains: it learns, and
// sharding its replicas across instances trains the same weights.
#include "popdist/proxy_model.h"

#include <gtest/gtest.h>

#include <cmath>

namespace vipu::popdist::sample {
namespace {

// Element-wise sum of the instances' shares, as allReduceSum leaves it.
StepSums Reduce(const StepSums& a, const StepSums& b) {
  StepSums sum = a;
  for (size_t i = 0; i < sum.size(); ++i) sum.data()[i] += b.data()[i];
  return sum;
}

TEST(ProxyModelTest, StartsAtChanceAndLearnsBothHeads) {
  ProxyModel model{ProxyModelOptions{}};
  StepSums first = model.Accumulate(0, 0, 4, 32);
  EXPECT_NEAR(first.mlm_loss(), std::log(16.0), 1e-9);  // zero weights: uniform over 16 classes
  EXPECT_NEAR(first.nsp_loss(), std::log(2.0), 1e-9);
  EXPECT_EQ(first.samples(), 128);
  StepSums last;
  for (uint64_t step = 0; step < 60; ++step) {
    last = model.Accumulate(step, 0, 4, 32);
    model.Apply(last);
  }
  EXPECT_LT(last.mlm_loss(), 0.8 * first.mlm_loss());
  EXPECT_LT(last.nsp_loss(), 0.8 * first.nsp_loss());
  EXPECT_GT(last.mlm_accuracy(), 0.5);  // chance is 1/16
  EXPECT_GT(last.nsp_accuracy(), 0.75);
}

TEST(ProxyModelTest, TwoInstancesSharingTheReplicasTrainTheSameModelAsOne) {
  ProxyModel whole{ProxyModelOptions{}}, left{ProxyModelOptions{}}, right{ProxyModelOptions{}};
  for (uint64_t step = 0; step < 20; ++step) {
    StepSums all = whole.Accumulate(step, 0, 4, 8);
    StepSums shared = Reduce(left.Accumulate(step, 0, 1, 8), right.Accumulate(step, 1, 3, 8));
    ASSERT_EQ(all.size(), shared.size());
    for (size_t i = 0; i < all.size(); ++i) {
      ASSERT_NEAR(all.data()[i], shared.data()[i], 1e-9) << "step " << step << " value " << i;
    }
    whole.Apply(all);
    left.Apply(shared);
    right.Apply(shared);
  }
  StepSums a = left.Accumulate(99, 0, 2, 8), b = right.Accumulate(99, 0, 2, 8);
  EXPECT_EQ(a.mlm_loss(), b.mlm_loss());
  EXPECT_EQ(a.nsp_loss(), b.nsp_loss());
}

TEST(ProxyModelTest, TheSeedChoosesTheData) {
  ProxyModelOptions other;
  other.seed = 2;
  ProxyModel a{ProxyModelOptions{}}, b{other};
  StepSums sa = a.Accumulate(0, 0, 1, 16), sb = b.Accumulate(0, 0, 1, 16);
  a.Apply(sa);
  b.Apply(sb);
  EXPECT_NE(a.Accumulate(1, 0, 1, 16).mlm_loss(), b.Accumulate(1, 0, 1, 16).mlm_loss());
}

TEST(ProxyModelTest, AStepWithoutSamplesChangesNothing) {
  ProxyModel model{ProxyModelOptions{}};
  StepSums none = model.Accumulate(0, 0, 0, 32);
  EXPECT_EQ(none.samples(), 0);
  EXPECT_EQ(none.mlm_loss(), 0);
  model.Apply(none);
  EXPECT_NEAR(model.Accumulate(0, 0, 1, 8).mlm_loss(), std::log(16.0), 1e-9);
}

}  // namespace
}  // namespace vipu::popdist::sample
