// The health pass's decision for one partition, the one auto-reset rule, and the named state
// transitions.
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "server/control/health_decisions.h"
#include "server/control/partition_transitions.h"

namespace vipu::server {
namespace {

using fabric::OperationState;
using fabric::ReadyState;

fabric::Partition Failed(std::vector<std::string> errors) {
  fabric::Partition p;
  p.id = "p";
  p.generation = 7;
  ToError(&p, std::move(errors), 1000);
  p.max_auto_reset_retries = 3;
  return p;
}

TEST(MayAutoResetTest, OnlyAnErrorWithRetriesLeftThatIsNotRemovedOrDisabled) {
  fabric::Partition p = Failed({"agent ag1: not connected"});
  EXPECT_TRUE(MayAutoReset(p));

  fabric::Partition spent = p;
  spent.auto_reset_retry_count = 3;
  EXPECT_FALSE(MayAutoReset(spent));

  fabric::Partition disabled = p;
  disabled.disable_auto_reset = true;
  EXPECT_FALSE(MayAutoReset(disabled));

  fabric::Partition removing = p;
  ToRemoving(&removing, 2000);
  EXPECT_FALSE(MayAutoReset(removing));

  fabric::Partition active = p;
  ToActive(&active, 2000);
  EXPECT_FALSE(MayAutoReset(active));
}

TEST(DecideHealthTest, NewOrChangedFaultsAreMarked) {
  fabric::Partition active;
  ToActive(&active, 1000);
  EXPECT_EQ(DecideHealth(active, {"agent ag1: not connected"}), HealthAction::kMarkFaulty);

  fabric::Partition failed = Failed({"agent ag1: not connected"});
  EXPECT_EQ(DecideHealth(failed, {"agent ag2: not connected"}), HealthAction::kMarkFaulty);
}

TEST(DecideHealthTest, LastingFaultsMoveOnlyARelocatablePartition) {
  fabric::Partition failed = Failed({"agent ag1: not connected"});
  EXPECT_EQ(DecideHealth(failed, failed.errors), HealthAction::kNone);
  failed.relocatable = true;
  EXPECT_EQ(DecideHealth(failed, failed.errors), HealthAction::kAutoReset);
  failed.auto_reset_retry_count = failed.max_auto_reset_retries;
  EXPECT_EQ(DecideHealth(failed, failed.errors), HealthAction::kNone);
}

TEST(DecideHealthTest, ClearedFaultsAutoResetWhileAllowed) {
  fabric::Partition failed = Failed({"agent ag1: not connected"});
  EXPECT_EQ(DecideHealth(failed, {}), HealthAction::kAutoReset);
  failed.disable_auto_reset = true;
  EXPECT_EQ(DecideHealth(failed, {}), HealthAction::kNone);

  fabric::Partition active;
  ToActive(&active, 1000);
  EXPECT_EQ(DecideHealth(active, {}), HealthAction::kNone);
}

TEST(DecideHealthTest, AnOperationInFlightIsLeftAlone) {
  fabric::Partition pending;
  ToPending(&pending, 8, OperationState::kCreating, 1000);
  EXPECT_TRUE(OperationInFlight(pending));
  EXPECT_EQ(DecideHealth(pending, {"agent ag1: not connected"}), HealthAction::kNone);

  fabric::Partition removing = Failed({"x"});
  ToRemoving(&removing, 1000);
  EXPECT_TRUE(OperationInFlight(removing));
  EXPECT_EQ(DecideHealth(removing, {}), HealthAction::kNone);
}

TEST(PartitionTransitionsTest, EachStateComesWithItsFields) {
  fabric::Partition p = Failed({"a", "b"});
  ToPending(&p, 9, OperationState::kResetting, 5000);
  EXPECT_EQ(p.ready_state, ReadyState::kPending);
  EXPECT_EQ(p.operation_state, OperationState::kResetting);
  EXPECT_EQ(p.generation, 9u);
  EXPECT_TRUE(p.errors.empty());
  EXPECT_EQ(p.updated_unix_ms, 5000);

  ToOutcome(&p, {"agent ag3: IPU 1 error"}, 6000);
  EXPECT_EQ(p.ready_state, ReadyState::kError);
  EXPECT_EQ(p.operation_state, OperationState::kFailed);
  EXPECT_EQ(p.errors, std::vector<std::string>{"agent ag3: IPU 1 error"});
  EXPECT_EQ(p.updated_unix_ms, 6000);

  ToOutcome(&p, {}, 7000);
  EXPECT_EQ(p.ready_state, ReadyState::kActive);
  EXPECT_EQ(p.operation_state, OperationState::kIdle);
  EXPECT_TRUE(p.errors.empty());

  ToRemoving(&p, 8000);
  EXPECT_EQ(p.ready_state, ReadyState::kActive);  // kept while the agents release
  EXPECT_EQ(p.operation_state, OperationState::kRemoving);
  EXPECT_EQ(p.updated_unix_ms, 8000);
}

}  // namespace
}  // namespace vipu::server
