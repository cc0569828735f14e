// PartitionController::ReconcileAgent, ::AwaitReconciled and ::Recover after a start.
#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/control/partition_controller.h"
#include "server/control/partition_transitions.h"
#include "tests/unit/support/controller_harness.h"
#include "tests/unit/support/controller_test.h"
#include "tests/unit/support/fake_agent_client.h"

namespace vipu::server {
namespace {

using Op = FakeAgentClient::Op;
using ::testing::ElementsAre;
using ::testing::IsEmpty;
using ::testing::SizeIs;
using ::testing::UnorderedElementsAreArray;

class PartitionControllerRecoveryTest : public test::ControllerTest {
 protected:
  PartitionControllerRecoveryTest() : ControllerTest("controller_recovery", 2) {}

  // Reconciles `agent` as holding `held` and waits for it to finish.
  void Reconcile(const std::string& agent, std::vector<fabric::HeldPartition> held) {
    h_->controller->ReconcileAgent(agent, std::move(held));
    ASSERT_TRUE(h_->controller->AwaitReconciled(absl::Now() + absl::Seconds(10)));
  }

  // The controller stopped, as a server going down leaves it: what is
  // committed afterwards waits for the next start's recovery.
  void StopServer() { h_->controller->Stop(); }
  // A new controller over the same store, recovering.
  void StartServerAndRecover() {
    h_->RestartController();
    h_->controller->Recover();
  }
};

// ---- ReconcileAgent

TEST_F(PartitionControllerRecoveryTest, APartitionUnknownToTheDatabaseIsReleasedOnTheAgent) {
  Reconcile("m3", {{"ghost", 7, {0, 1}}});
  std::vector<FakeAgentClient::Call> released = agents_.calls(Op::kRelease);
  ASSERT_THAT(released, SizeIs(1));
  EXPECT_EQ(released[0].agent.agent_id, "m3");
  EXPECT_EQ(released[0].partition.partition_id, "ghost");
  EXPECT_EQ(released[0].partition.generation, 7u);
  EXPECT_THAT(agents_.calls(Op::kConfigure), IsEmpty());
  EXPECT_EQ(h_->controller->reconciled(), 1u);
}

TEST_F(PartitionControllerRecoveryTest, AnActivePartitionTheAgentLostIsPushedAgainAtItsGeneration) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  const size_t configured = agents_.calls(Op::kConfigure).size();
  Reconcile(machines[0], {});
  std::vector<FakeAgentClient::Call> pushed = agents_.calls(Op::kConfigure);
  ASSERT_GT(pushed.size(), configured);
  pushed.erase(pushed.begin(), pushed.begin() + configured);
  // The driver configures a partition on every machine it spans, so the
  // others are told again too, at the same generation.
  std::vector<std::string> to;
  for (const FakeAgentClient::Call& c : pushed) {
    EXPECT_EQ(c.partition.partition_id, "p1");
    EXPECT_EQ(c.partition.generation, p.generation);
    to.push_back(c.agent.agent_id);
  }
  EXPECT_THAT(to, UnorderedElementsAreArray(machines));
  EXPECT_THAT(agents_.calls(Op::kRelease), IsEmpty());
  fabric::Partition after = Get("p1");
  EXPECT_EQ(after.generation, p.generation);
  EXPECT_EQ(after.ready_state, fabric::ReadyState::kActive);
}

TEST_F(PartitionControllerRecoveryTest, AnAgentHoldingTheStoredGenerationIsLeftAlone) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  const size_t calls = agents_.calls().size();
  Reconcile(machines[0], {{"p1", p.generation, {0, 1, 2, 3}}});
  EXPECT_THAT(agents_.calls(), SizeIs(calls));
  EXPECT_EQ(h_->controller->reconciled(), 1u);
}

TEST_F(PartitionControllerRecoveryTest, AnAgentHoldingAnOlderGenerationGetsTheStoredOne) {
  fabric::Partition created = Active("p1", 8);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  ASSERT_GT(p.generation, created.generation);
  const std::vector<std::string> machines = MachinesOf(p);
  Reconcile(machines[0], {{"p1", created.generation, {0, 1, 2, 3}}});
  EXPECT_THAT(agents_.agents(Op::kConfigure, p.generation), UnorderedElementsAreArray(machines));
  // The newer configure replaces the older generation: nothing to release.
  EXPECT_THAT(agents_.calls(Op::kRelease), IsEmpty());
}

TEST_F(PartitionControllerRecoveryTest, APartitionInErrorIsNotPushedAgain) {
  fabric::Partition p = Active("p1", 8);
  ASSERT_EQ(h_->controller->MarkFaulty({{"p1", p.generation, {"agent m0: down"}}}).value_or(0), 1u);
  const size_t calls = agents_.calls().size();
  Reconcile(MachinesOf(p)[0], {});
  EXPECT_THAT(agents_.calls(), SizeIs(calls));
}

TEST_F(PartitionControllerRecoveryTest, AReconcileWhoseCallsFailStillFinishes) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  const size_t configured = agents_.calls(Op::kConfigure).size();
  agents_.Fail("", Op::kConfigure, absl::UnavailableError("no power"));
  agents_.Fail("", Op::kRelease, absl::UnavailableError("no power"));
  Reconcile(machines[0], {{"ghost", 3, {4}}});
  EXPECT_THAT(agents_.agents(Op::kRelease, 3), ElementsAre(machines[0]));
  EXPECT_THAT(agents_.calls(Op::kConfigure), SizeIs(configured + machines.size()));
  EXPECT_EQ(h_->controller->reconciled(), 1u);
}

TEST_F(PartitionControllerRecoveryTest, ARegisteringMachineThatRefusesThePushFailsThePartition) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  agents_.Fail(machines[0], Op::kConfigure,
               absl::FailedPreconditionError("IPU 0 is held by partition other"));
  Reconcile(machines[0], {});
  fabric::Partition after = Get("p1");
  EXPECT_EQ(after.generation, p.generation);
  EXPECT_EQ(after.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(after.operation_state, fabric::OperationState::kFailed);
  EXPECT_THAT(after.errors, ElementsAre(absl::StrCat("agent ", machines[0],
                                                     ": IPU 0 is held by partition other")));
}

TEST_F(PartitionControllerRecoveryTest, AnotherMachineNotYetRegisteredDoesNotFailThePartition) {
  // After a server restart the machines register one by one: the first to
  // come finds the others not connected yet. Their registrations settle them.
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  h_->registry.ForgetForTesting(machines[1]);
  agents_.Fail(machines[1], Op::kConfigure, absl::FailedPreconditionError("never asked"));
  Reconcile(machines[0], {});
  EXPECT_THAT(agents_.agents(Op::kConfigure, p.generation), testing::Contains(machines[0]));
  fabric::Partition after = Get("p1");
  EXPECT_EQ(after.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(after.errors, IsEmpty());
}

TEST_F(PartitionControllerRecoveryTest, AnotherMachinesRefusalIsLeftToItsOwnReports) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  agents_.Fail(machines[1], Op::kConfigure, absl::FailedPreconditionError("busy"));
  Reconcile(machines[0], {});
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kActive);
}

// ---- PushAgain (a machine's heartbeats lack the partition)

TEST_F(PartitionControllerRecoveryTest, PushAgainConfiguresThatMachineAloneAtTheGeneration) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  const size_t configured = agents_.calls(Op::kConfigure).size();
  h_->controller->PushAgain(machines[1], "p1", p.generation);
  ASSERT_TRUE(h_->controller->AwaitReconciled(absl::Now() + absl::Seconds(10)));
  std::vector<FakeAgentClient::Call> pushed = agents_.calls(Op::kConfigure);
  ASSERT_THAT(pushed, SizeIs(configured + 1));
  EXPECT_EQ(pushed.back().agent.agent_id, machines[1]);
  EXPECT_EQ(pushed.back().partition.generation, p.generation);
  // As first configured: the same IPUs and the whole partition's members.
  auto first =
      std::find_if(pushed.begin(), pushed.begin() + configured,
                   [&](const FakeAgentClient::Call& c) { return c.agent.agent_id == machines[1]; });
  ASSERT_NE(first, pushed.begin() + configured);
  EXPECT_EQ(pushed.back().config.ipus, first->config.ipus);
  EXPECT_THAT(pushed.back().config.members, SizeIs(machines.size()));
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kActive);
}

TEST_F(PartitionControllerRecoveryTest, PushAgainThatTheMachineRefusesFailsThePartitionNamingIt) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  agents_.Fail(machines[1], Op::kConfigure, absl::FailedPreconditionError("IPUs in reset"));
  h_->controller->PushAgain(machines[1], "p1", p.generation);
  ASSERT_TRUE(h_->controller->AwaitReconciled(absl::Now() + absl::Seconds(10)));
  fabric::Partition after = Get("p1");
  EXPECT_EQ(after.generation, p.generation);
  EXPECT_EQ(after.ready_state, fabric::ReadyState::kError);
  EXPECT_THAT(after.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": IPUs in reset")));
  // From here the auto reset takes over, as for any fault.
  EXPECT_TRUE(h_->controller->AutoReset("p1", p.generation).value_or(false));
}

TEST_F(PartitionControllerRecoveryTest, PushAgainThatDoesNotReachTheMachineChangesNothing) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(p);
  agents_.Fail(machines[1], Op::kConfigure, absl::UnavailableError("connection refused"));
  h_->controller->PushAgain(machines[1], "p1", p.generation);
  agents_.Fail(machines[0], Op::kConfigure, absl::DeadlineExceededError("too slow"));
  h_->controller->PushAgain(machines[0], "p1", p.generation);
  ASSERT_TRUE(h_->controller->AwaitReconciled(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kActive);
}

TEST_F(PartitionControllerRecoveryTest, PushAgainOfAnOlderGenerationOrAnotherMachineDoesNothing) {
  fabric::Partition p = Active("p1", 8);
  const size_t calls = agents_.calls().size();
  h_->controller->PushAgain(MachinesOf(p)[0], "p1", p.generation + 1);
  h_->controller->PushAgain("m7", "p1", p.generation);  // not a machine of p1
  h_->controller->PushAgain(MachinesOf(p)[0], "nope", 1);
  ASSERT_TRUE(h_->controller->AwaitReconciled(absl::Now() + absl::Seconds(10)));
  EXPECT_THAT(agents_.calls(), SizeIs(calls));
  EXPECT_EQ(h_->controller->reconciled(), 3u);
}

TEST_F(PartitionControllerRecoveryTest, PushAgainOfAPartitionInErrorDoesNothing) {
  fabric::Partition p = Active("p1", 8);
  ASSERT_EQ(h_->controller->MarkFaulty({{"p1", p.generation, {"agent m0: down"}}}).value_or(0), 1u);
  const size_t calls = agents_.calls().size();
  h_->controller->PushAgain(MachinesOf(p)[0], "p1", p.generation);
  ASSERT_TRUE(h_->controller->AwaitReconciled(absl::Now() + absl::Seconds(10)));
  EXPECT_THAT(agents_.calls(), SizeIs(calls));
}

TEST_F(PartitionControllerRecoveryTest, AReconcileWhoseStoreReadFailsReleasesNothingAndFinishes) {
  h_->store->RefuseReads(absl::UnavailableError("leadership in doubt"));
  Reconcile("m3", {{"ghost", 7, {0}}});
  h_->store->Accept();
  // Without the database's word, what the agent holds may be wanted.
  EXPECT_THAT(agents_.calls(), IsEmpty());
  EXPECT_EQ(h_->controller->reconciled(), 1u);
}

TEST_F(PartitionControllerRecoveryTest, AwaitReconciledWaitsForAReconcileInFlight) {
  fabric::Partition p = Active("p1", 8);
  agents_.Hang("", Op::kConfigure);
  h_->controller->ReconcileAgent(MachinesOf(p)[0], {});
  ASSERT_TRUE(agents_.AwaitHeld(2));
  EXPECT_FALSE(h_->controller->AwaitReconciled(absl::InfinitePast()));
  EXPECT_EQ(h_->controller->reconciled(), 0u);
  agents_.CompleteAllHeld();
  EXPECT_TRUE(h_->controller->AwaitReconciled(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(h_->controller->reconciled(), 1u);
}

TEST_F(PartitionControllerRecoveryTest, AReconcileAfterStopCountsAsDoneAndCallsNoAgent) {
  Active("p1", 8);
  const size_t calls = agents_.calls().size();
  StopServer();
  h_->controller->ReconcileAgent("m3", {{"ghost", 7, {0}}});
  // Dropped by the stopped queue, it must not keep readiness waiting.
  EXPECT_TRUE(h_->controller->AwaitReconciled(absl::InfinitePast()));
  EXPECT_EQ(h_->controller->reconciled(), 1u);
  EXPECT_THAT(agents_.calls(), SizeIs(calls));
}

// ---- Recover

TEST_F(PartitionControllerRecoveryTest, APartitionLeftCreatingIsConfiguredAndGoesActive) {
  StopServer();
  auto created = h_->Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_THAT(agents_.calls(), IsEmpty());
  StartServerAndRecover();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.generation, created->generation);
  EXPECT_THAT(agents_.agents(Op::kConfigure, created->generation),
              UnorderedElementsAreArray(MachinesOf(*created)));
}

TEST_F(PartitionControllerRecoveryTest, APartitionLeftResettingIsResetAndGoesActive) {
  fabric::Partition active = Active("p1", 8);
  StopServer();
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  const uint64_t generation = Get("p1").generation;
  ASSERT_GT(generation, active.generation);
  ASSERT_THAT(agents_.calls(Op::kReset), IsEmpty());
  StartServerAndRecover();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.generation, generation);
  EXPECT_THAT(agents_.agents(Op::kReset, generation),
              UnorderedElementsAreArray(MachinesOf(active)));
}

TEST_F(PartitionControllerRecoveryTest, ARecoveredConfigureAMachineRefusesFailsThePartition) {
  StopServer();
  auto created = h_->Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  const std::vector<std::string> machines = MachinesOf(*created);
  ASSERT_EQ(machines.size(), 2u);
  agents_.Fail(machines[1], Op::kConfigure, absl::UnavailableError("machine on fire"));
  StartServerAndRecover();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kFailed);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": machine on fire")));
}

TEST_F(PartitionControllerRecoveryTest, APartitionLeftRemovingIsRemovedWhateverTheAgentsSay) {
  fabric::Partition active = Active("p1", 8);
  const std::vector<std::string> machines = MachinesOf(active);
  StopServer();
  ASSERT_TRUE(h_->store
                  ->Write([](storage::WriteTxn& txn) -> absl::Status {
                    auto p = txn.GetPartition("p1");
                    if (!p.ok()) return p.status();
                    ToRemoving(&*p, NowUnixMs());
                    return txn.UpdatePartitionState(*p);
                  })
                  .ok());
  agents_.Fail(machines[1], Op::kRelease, absl::UnavailableError("gone"));
  StartServerAndRecover();
  // Stopping runs the queued removal to its end.
  h_->controller->Stop();
  EXPECT_TRUE(absl::IsNotFound(h_->controller->Get("p1").status()));
  EXPECT_THAT(agents_.agents(Op::kRelease, active.generation), UnorderedElementsAreArray(machines));
}

TEST_F(PartitionControllerRecoveryTest, ActiveAndFailedPartitionsAreLeftAlone) {
  Active("a", 8);
  fabric::Partition b = Active("b", 8);
  ASSERT_EQ(h_->controller->MarkFaulty({{"b", b.generation, {"agent m2: down"}}}).value_or(0), 1u);
  const size_t calls = agents_.calls().size();
  StopServer();
  StartServerAndRecover();
  h_->controller->Stop();
  EXPECT_THAT(agents_.calls(), SizeIs(calls));
  EXPECT_EQ(Get("a").ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(Get("b").ready_state, fabric::ReadyState::kError);
}

TEST_F(PartitionControllerRecoveryTest, ARecoveryThatCannotReadStartsNothingAndTheNextStartDoesIt) {
  StopServer();
  auto created = h_->Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  h_->store->RefuseReads(absl::UnavailableError("leadership in doubt"));
  StartServerAndRecover();
  h_->controller->Stop();
  h_->store->Accept();
  EXPECT_THAT(agents_.calls(), IsEmpty());
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kPending);

  StartServerAndRecover();
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.generation, created->generation);
}

// Waits until `n` refused outcomes are kept, or 10 s pass.
bool AwaitRefused(PartitionController& controller, size_t n) {
  return controller.AwaitRefusedOutcomesForTesting(n, absl::Now() + absl::Seconds(10));
}

TEST_F(PartitionControllerRecoveryTest, AnOutcomeTheStoreRefusedIsWrittenOnceItTakesWritesAgain) {
  agents_.Hang("", Op::kConfigure);
  auto created = h_->Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(agents_.AwaitHeld(2));
  h_->store->RefuseWrites(absl::ResourceExhaustedError("the disk of the database is full"));
  agents_.Succeed("", Op::kConfigure);
  agents_.CompleteAllHeld();
  ASSERT_TRUE(AwaitRefused(*h_->controller, 1));
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kPending);

  // Not tried again before a second has passed since the refusal; then
  // tried, and refused again while the disk is full.
  EXPECT_EQ(h_->controller->RecordRefusedOutcomes(absl::Now()), 0u);
  EXPECT_EQ(h_->controller->RecordRefusedOutcomes(absl::Now() + absl::Seconds(2)), 1u);
  ASSERT_TRUE(AwaitRefused(*h_->controller, 1));
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kPending);

  h_->store->Accept();
  EXPECT_EQ(h_->controller->RecordRefusedOutcomes(absl::Now() + absl::Seconds(2)), 1u);
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.generation, created->generation);
  EXPECT_TRUE(AwaitRefused(*h_->controller, 0));
  // The agents were not asked again: only the record was missing.
  EXPECT_THAT(agents_.calls(Op::kConfigure), SizeIs(2));
}

TEST_F(PartitionControllerRecoveryTest, StopLeavesARefusedOutcomeToTheNextStartsRecovery) {
  agents_.Hang("", Op::kConfigure);
  ASSERT_TRUE(h_->Create("p1", 8).ok());
  ASSERT_TRUE(agents_.AwaitHeld(2));
  h_->store->RefuseWrites(absl::ResourceExhaustedError("the disk of the database is full"));
  agents_.Succeed("", Op::kConfigure);
  agents_.CompleteAllHeld();
  ASSERT_TRUE(AwaitRefused(*h_->controller, 1));
  h_->controller->Stop();  // returns: the refused outcome is not waited for
  h_->store->Accept();
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kPending);
  StartServerAndRecover();
  EXPECT_EQ(Settled("p1").ready_state, fabric::ReadyState::kActive);
}

}  // namespace
}  // namespace vipu::server
