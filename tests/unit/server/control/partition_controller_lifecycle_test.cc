// PartitionController::Reset and its failures, moves to other IPUs, and superseded generations.
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_registry.h"
#include "server/security/caller.h"
#include "tests/unit/support/controller_harness.h"
#include "tests/unit/support/controller_test.h"
#include "tests/unit/support/fake_agent_client.h"

namespace vipu::server {
namespace {

using Op = FakeAgentClient::Op;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::StartsWith;
using ::testing::UnorderedElementsAreArray;

class PartitionControllerLifecycleTest : public test::ControllerTest {
 protected:
  PartitionControllerLifecycleTest() : ControllerTest("controller_lifecycle", 1) {}
};

// ---- Reset in place

TEST_F(PartitionControllerLifecycleTest, ResetCommitsANewGenerationBeforeTheAgentsAnswer) {
  fabric::Partition active = Active("p1", 8);
  ASSERT_EQ(h_->controller->MarkFaulty({{"p1", active.generation, {"agent m0: down"}}}).value_or(0),
            1u);
  agents_.Hang("", Op::kReset);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition pending = Get("p1");
  EXPECT_GT(pending.generation, active.generation);
  EXPECT_EQ(pending.ready_state, fabric::ReadyState::kPending);
  EXPECT_EQ(pending.operation_state, fabric::OperationState::kResetting);
  EXPECT_THAT(pending.errors, IsEmpty());
  EXPECT_EQ(pending.ipus.size(), active.ipus.size());

  ASSERT_TRUE(agents_.AwaitHeld(2));
  EXPECT_THAT(agents_.agents(Op::kReset, pending.generation),
              UnorderedElementsAreArray(MachinesOf(active)));
  agents_.CompleteAllHeld();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kIdle);
  EXPECT_EQ(p.generation, pending.generation);
  EXPECT_THAT(agents_.calls(Op::kRelease), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, AMachineFailingTheResetFailsThePartitionNamingIt) {
  fabric::Partition active = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(active);
  ASSERT_EQ(machines.size(), 2u);
  agents_.Fail(machines[1], Op::kReset, absl::UnavailableError("machine on fire"));
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_GT(p.generation, active.generation);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kFailed);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": machine on fire")));
}

TEST_F(PartitionControllerLifecycleTest, AMachineThatLostThePartitionAndRefusesItFailsTheReset) {
  fabric::Partition active = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(active);
  ASSERT_EQ(machines.size(), 2u);
  agents_.Fail(machines[0], Op::kReset, absl::NotFoundError("partition not held"));
  agents_.Fail(machines[0], Op::kConfigure, absl::ResourceExhaustedError("IPUs held by q"));
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[0], ": IPUs held by q")));
  EXPECT_THAT(agents_.agents(Op::kConfigure, p.generation), ElementsAre(machines[0]));
}

TEST_F(PartitionControllerLifecycleTest, AMachineNotConnectedFailsTheResetNamingIt) {
  fabric::Partition active = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(active);
  ASSERT_EQ(machines.size(), 2u);
  h_->registry.ForgetForTesting(machines[1]);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": not connected")));
  EXPECT_THAT(agents_.agents(Op::kReset, p.generation), ElementsAre(machines[0]));
}

TEST_F(PartitionControllerLifecycleTest, ResetOfAnUnknownPartitionIsNotFound) {
  absl::Status s = h_->controller->Reset("none");
  EXPECT_TRUE(absl::IsNotFound(s)) << s;
  EXPECT_EQ(s.message(), "partition id: partition 'none' not found");
  EXPECT_THAT(agents_.calls(), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, ResetOfAPartitionBeingRemovedIsRefused) {
  fabric::Partition active = Active("p1", 8);
  agents_.Hang("", Op::kRelease);
  absl::Status removed = absl::UnknownError("not returned");
  std::thread remover([&] { removed = h_->controller->Remove("p1", /*force=*/false); });
  ASSERT_TRUE(agents_.AwaitHeld(2));
  absl::Status s = h_->controller->Reset("p1");
  fabric::Partition during = Get("p1");
  agents_.CompleteAllHeld();
  remover.join();
  EXPECT_TRUE(absl::IsFailedPrecondition(s)) << s;
  EXPECT_EQ(s.message(), "partition 'p1' is being removed");
  EXPECT_EQ(during.generation, active.generation);
  EXPECT_EQ(during.operation_state, fabric::OperationState::kRemoving);
  EXPECT_TRUE(removed.ok()) << removed;
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, ResetOfAnotherUsersPartitionIsDenied) {
  fabric::Partition active = Active("p1", 8);
  Caller bob;
  bob.user_id = "bob";
  bob.authenticated = true;
  bob.allocations = {"all"};
  absl::Status s = h_->controller->Reset("p1", bob);
  EXPECT_TRUE(absl::IsPermissionDenied(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("user 'bob' may not reset partition 'p1'"));
  fabric::Partition p = Get("p1");
  EXPECT_EQ(p.generation, active.generation);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, AResetTheStoreRefusesChangesNothingAndSaysWhy) {
  fabric::Partition active = Active("p1", 8);
  h_->store->RefuseWrites(absl::ResourceExhaustedError("the disk of the database is full"));
  absl::Status s = h_->controller->Reset("p1");
  h_->store->Accept();
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_THAT(s.message(), HasSubstr("disk of the database is full"));
  fabric::Partition p = Get("p1");
  EXPECT_EQ(p.generation, active.generation);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  // Stop runs what is queued: a reset queued all the same would have called
  // the agents by now.
  h_->controller->Stop();
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

// ---- Moves to other IPUs

TEST_F(PartitionControllerLifecycleTest, AResetOfAFaultyRelocatablePartitionMovesItToHealthyIpus) {
  fabric::Partition active = Active("p1", 4, /*relocatable=*/true);
  const std::vector<std::string> before = MachinesOf(active);
  ASSERT_EQ(before.size(), 1u);
  FailIpu(before[0], active.ipus[1].ipu.ipu);
  agents_.Hang("", Op::kConfigure);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());

  // The new IPUs are committed with the new generation, before any agent
  // answers.
  fabric::Partition pending = Get("p1");
  EXPECT_GT(pending.generation, active.generation);
  EXPECT_EQ(pending.ready_state, fabric::ReadyState::kPending);
  EXPECT_EQ(pending.operation_state, fabric::OperationState::kCreating);
  const std::vector<std::string> after = MachinesOf(pending);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], before[0]);
  EXPECT_EQ(pending.ipus.size(), active.ipus.size());

  ASSERT_TRUE(agents_.AwaitHeld(1));
  // The machine left behind releases it first, at the new generation: an
  // agent refuses a release older than what it holds.
  EXPECT_THAT(agents_.agents(Op::kRelease, pending.generation), ElementsAre(before[0]));
  EXPECT_THAT(agents_.agents(Op::kConfigure, pending.generation), ElementsAre(after[0]));
  agents_.CompleteAllHeld();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.generation, pending.generation);
  EXPECT_EQ(MachinesOf(p), after);
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, AResetAskedToMoveMovesAPartitionNotCreatedRelocatable) {
  fabric::Partition active = Active("p1", 4);
  const std::vector<std::string> before = MachinesOf(active);
  FailIpu(before[0], active.ipus[0].ipu.ipu);
  ASSERT_TRUE(h_->controller->Reset("p1", Caller::System(), /*relocatable=*/true).ok());
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_NE(MachinesOf(p), before);
  EXPECT_THAT(agents_.agents(Op::kRelease, p.generation), ElementsAre(before[0]));
  EXPECT_THAT(agents_.agents(Op::kConfigure, p.generation), ElementsAre(MachinesOf(p)[0]));
}

TEST_F(PartitionControllerLifecycleTest, AResetOfAHealthyRelocatablePartitionKeepsItsIpus) {
  fabric::Partition active = Active("p1", 4, /*relocatable=*/true);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(MachinesOf(p), MachinesOf(active));
  EXPECT_THAT(agents_.agents(Op::kReset, p.generation), ElementsAre(MachinesOf(active)[0]));
  EXPECT_THAT(agents_.calls(Op::kRelease), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, AMoveAskedForWithNoHealthyRoomIsRefusedNamingTheFault) {
  fabric::Partition active = Active("p1", 4);
  const std::string machine = MachinesOf(active)[0];
  auto fillers = h_->Fill(4);
  ASSERT_TRUE(fillers.ok()) << fillers.status();
  FailIpu(machine, active.ipus[0].ipu.ipu);
  const size_t calls = agents_.calls().size();
  absl::Status s = h_->controller->Reset("p1", Caller::System(), /*relocatable=*/true);
  EXPECT_TRUE(absl::IsResourceExhausted(s)) << s;
  EXPECT_THAT(
      std::string(s.message()),
      StartsWith(absl::StrCat("cannot move partition 'p1' away from agent ", machine, ": IPU ",
                              active.ipus[0].ipu.ipu, " error (injected fault): ")));
  fabric::Partition p = Get("p1");
  EXPECT_EQ(p.generation, active.generation);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(MachinesOf(p), MachinesOf(active));
  h_->controller->Stop();
  EXPECT_THAT(agents_.calls(), SizeIs(calls));
}

TEST_F(PartitionControllerLifecycleTest, ARelocatablePartitionWithNoHealthyRoomIsResetInPlace) {
  fabric::Partition active = Active("p1", 4, /*relocatable=*/true);
  const std::string machine = MachinesOf(active)[0];
  ASSERT_TRUE(h_->Fill(4).ok());
  FailIpu(machine, active.ipus[0].ipu.ipu);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_GT(p.generation, active.generation);
  EXPECT_EQ(MachinesOf(p), MachinesOf(active));
  EXPECT_THAT(agents_.agents(Op::kReset, p.generation), ElementsAre(machine));
  EXPECT_THAT(agents_.calls(Op::kRelease), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, AMoveTheNewMachineRefusesFailsThePartitionThere) {
  fabric::Partition active = Active("p1", 4, /*relocatable=*/true);
  FailIpu(MachinesOf(active)[0], active.ipus[0].ipu.ipu);
  agents_.Fail("", Op::kConfigure, absl::UnavailableError("no power"));
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  const std::vector<std::string> after = MachinesOf(p);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], MachinesOf(active)[0]);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kFailed);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", after[0], ": no power")));
}

TEST_F(PartitionControllerLifecycleTest, AMachineLeftBehindRefusingTheReleaseDoesNotStopTheMove) {
  fabric::Partition active = Active("p1", 4, /*relocatable=*/true);
  const std::string before = MachinesOf(active)[0];
  FailIpu(before, active.ipus[0].ipu.ipu);
  agents_.Fail(before, Op::kRelease, absl::UnavailableError("gone"));
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(p.errors, IsEmpty());
  EXPECT_THAT(agents_.agents(Op::kRelease, p.generation), ElementsAre(before));
  EXPECT_THAT(agents_.agents(Op::kConfigure, p.generation), ElementsAre(MachinesOf(p)[0]));
}

// ---- Superseded generations

TEST_F(PartitionControllerLifecycleTest, ALateFailureOfASupersededResetIsReleasedNotRecorded) {
  fabric::Partition active = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(active);
  ASSERT_EQ(machines.size(), 2u);
  agents_.Hang("", Op::kReset);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  const uint64_t older = Get("p1").generation;
  ASSERT_TRUE(agents_.AwaitHeld(2));
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  const uint64_t newer = Get("p1").generation;
  ASSERT_GT(newer, older);
  ASSERT_TRUE(agents_.AwaitHeld(4));

  // The older reset's calls answer now (they were held first), one failing.
  agents_.Hang("", Op::kRelease);
  ASSERT_TRUE(agents_.CompleteHeld(machines[0], Op::kReset, absl::UnavailableError("late")));
  ASSERT_TRUE(agents_.CompleteHeld(machines[1], Op::kReset));
  // Its outcome is judged superseded before the release is sent.
  ASSERT_TRUE(agents_.AwaitHeld(4));
  EXPECT_THAT(agents_.agents(Op::kRelease, older), UnorderedElementsAreArray(machines));
  fabric::Partition during = Get("p1");
  EXPECT_EQ(during.generation, newer);
  EXPECT_EQ(during.ready_state, fabric::ReadyState::kPending);
  EXPECT_THAT(during.errors, IsEmpty());

  agents_.CompleteAllHeld();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.generation, newer);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(p.errors, IsEmpty());
  EXPECT_THAT(agents_.agents(Op::kRelease, newer), IsEmpty());
}

TEST_F(PartitionControllerLifecycleTest, ALateConfigureOfACreateOvertakenByAResetIsReleased) {
  agents_.Hang("", Op::kConfigure);
  auto created = h_->Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::vector<std::string> machines = MachinesOf(*created);
  ASSERT_EQ(machines.size(), 2u);
  ASSERT_TRUE(agents_.AwaitHeld(2));
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition reset = Settled("p1");
  ASSERT_EQ(reset.ready_state, fabric::ReadyState::kActive);
  ASSERT_GT(reset.generation, created->generation);

  agents_.Hang("", Op::kRelease);
  ASSERT_TRUE(agents_.CompleteHeld(machines[0], Op::kConfigure, absl::UnavailableError("late")));
  ASSERT_TRUE(agents_.CompleteHeld(machines[1], Op::kConfigure));
  ASSERT_TRUE(agents_.AwaitHeld(2));
  EXPECT_THAT(agents_.agents(Op::kRelease, created->generation),
              UnorderedElementsAreArray(machines));
  fabric::Partition p = Get("p1");
  EXPECT_EQ(p.generation, reset.generation);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(p.errors, IsEmpty());
  agents_.CompleteAllHeld();
}

TEST_F(PartitionControllerLifecycleTest, AConfigureAnsweringAfterTheRemoveIsReleasedAgain) {
  agents_.Hang("", Op::kConfigure);
  auto created = h_->Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::vector<std::string> machines = MachinesOf(*created);
  ASSERT_TRUE(agents_.AwaitHeld(2));
  ASSERT_TRUE(h_->controller->Remove("p1", /*force=*/false).ok());
  ASSERT_THAT(agents_.agents(Op::kRelease, created->generation),
              UnorderedElementsAreArray(machines));

  // The configure lands after the release: the machines are told again.
  agents_.Hang("", Op::kRelease);
  agents_.CompleteAllHeld();
  ASSERT_TRUE(agents_.AwaitHeld(2));
  EXPECT_THAT(agents_.agents(Op::kRelease, created->generation), SizeIs(2 * machines.size()));
  EXPECT_TRUE(absl::IsNotFound(h_->controller->Get("p1").status()));
  agents_.CompleteAllHeld();
}

TEST_F(PartitionControllerLifecycleTest, AQueuedResetOvertakenByANewerOneCallsNoAgent) {
  fabric::Partition active = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(active);
  // The one worker re-pushes the partition to an agent that lost it, and
  // waits there while two resets are queued behind it.
  agents_.Hang("", Op::kConfigure);
  h_->controller->ReconcileAgent(machines[0], {});
  ASSERT_TRUE(agents_.AwaitHeld(2));
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  const uint64_t older = Get("p1").generation;
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  const uint64_t newer = Get("p1").generation;
  ASSERT_GT(newer, older);

  agents_.Succeed("", Op::kConfigure);
  agents_.CompleteAllHeld();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.generation, newer);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(agents_.agents(Op::kReset, older), IsEmpty());
  EXPECT_THAT(agents_.agents(Op::kReset, newer), UnorderedElementsAreArray(machines));
}

}  // namespace
}  // namespace vipu::server
