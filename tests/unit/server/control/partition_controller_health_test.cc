// PartitionController::MarkFaulty and ::AutoReset: faults recorded, automatic resets and moves.
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
#include "tests/unit/support/controller_harness.h"
#include "tests/unit/support/controller_test.h"
#include "tests/unit/support/fake_agent_client.h"

namespace vipu::server {
namespace {

using Op = FakeAgentClient::Op;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;
using ::testing::UnorderedElementsAreArray;

class PartitionControllerHealthTest : public test::ControllerTest {
 protected:
  PartitionControllerHealthTest() : ControllerTest("controller_health", 2) {}

  // `p` marked PS_ERROR with `errors` at its generation.
  fabric::Partition Failed(const fabric::Partition& p, std::vector<std::string> errors) {
    auto marked = h_->controller->MarkFaulty({{p.id, p.generation, std::move(errors)}});
    EXPECT_TRUE(marked.ok()) << marked.status();
    EXPECT_EQ(marked.value_or(0), 1u);
    return Get(p.id);
  }
};

// ---- MarkFaulty

TEST_F(PartitionControllerHealthTest, AFaultMarksAnActivePartitionInErrorWithItsErrors) {
  fabric::Partition p = Active("p1", 8);
  const std::vector<std::string> errors = {"agent m0: IPU 2 error (injected fault)"};
  auto marked = h_->controller->MarkFaulty({{"p1", p.generation, errors}});
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(*marked, 1u);
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(got.operation_state, fabric::OperationState::kFailed);
  EXPECT_EQ(got.errors, errors);
  EXPECT_EQ(got.generation, p.generation);
  // Recording a fault is the database's business: no agent is told.
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
  EXPECT_THAT(agents_.calls(Op::kRelease), IsEmpty());
}

TEST_F(PartitionControllerHealthTest, AFaultReportedForAnOlderGenerationMarksNothing) {
  fabric::Partition before = Active("p1", 8);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition p = *h_->Settled("p1");
  ASSERT_GT(p.generation, before.generation);
  auto marked = h_->controller->MarkFaulty({{"p1", before.generation, {"agent m0: down"}}});
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(*marked, 0u);
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(got.errors, IsEmpty());
}

TEST_F(PartitionControllerHealthTest, AReportForAnUnknownPartitionIsSkippedAndTheOthersMarked) {
  fabric::Partition p = Active("p1", 8);
  auto marked = h_->controller->MarkFaulty(
      {{"gone", 1, {"agent m7: down"}}, {"p1", p.generation, {"agent m0: down"}}});
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(*marked, 1u);
  EXPECT_THAT(Get("p1").errors, ElementsAre("agent m0: down"));
  EXPECT_TRUE(absl::IsNotFound(h_->controller->Get("gone").status()));
}

TEST_F(PartitionControllerHealthTest, ReportsForManyPartitionsAreMarkedInOneWrite) {
  fabric::Partition a = Active("a", 8);
  fabric::Partition b = Active("b", 8);
  const uint64_t writes = h_->store->writes();
  auto marked = h_->controller->MarkFaulty(
      {{"a", a.generation, {"agent m0: down"}}, {"b", b.generation, {"agent m2: down"}}});
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(*marked, 2u);
  EXPECT_EQ(h_->store->writes(), writes + 1);
  EXPECT_EQ(Get("a").ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(Get("b").ready_state, fabric::ReadyState::kError);
}

TEST_F(PartitionControllerHealthTest, APartitionInErrorGetsItsErrorsReplacedOnlyWhenTheyDiffer) {
  fabric::Partition p = Failed(Active("p1", 8), {"agent m0: down"});
  auto same = h_->controller->MarkFaulty({{"p1", p.generation, {"agent m0: down"}}});
  ASSERT_TRUE(same.ok()) << same.status();
  EXPECT_EQ(*same, 0u);
  EXPECT_EQ(Get("p1").updated_unix_ms, p.updated_unix_ms);

  auto other = h_->controller->MarkFaulty(
      {{"p1", p.generation, {"agent m1: IPU 0 error (injected fault)"}}});
  ASSERT_TRUE(other.ok()) << other.status();
  EXPECT_EQ(*other, 1u);
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.ready_state, fabric::ReadyState::kError);
  EXPECT_THAT(got.errors, ElementsAre("agent m1: IPU 0 error (injected fault)"));
}

TEST_F(PartitionControllerHealthTest, APendingPartitionIsLeftToTheOutcomeOfItsOperation) {
  agents_.Hang("", Op::kConfigure);
  auto created = h_->Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  ASSERT_TRUE(agents_.AwaitHeld(2));
  auto marked = h_->controller->MarkFaulty({{"p1", created->generation, {"agent m0: down"}}});
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(*marked, 0u);
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kPending);
  agents_.CompleteAllHeld();
  fabric::Partition p = *h_->Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(p.errors, IsEmpty());
}

TEST_F(PartitionControllerHealthTest, APartitionBeingRemovedIsLeftAlone) {
  fabric::Partition p = Active("p1", 8);
  agents_.Hang("", Op::kRelease);
  absl::Status removed = absl::UnknownError("not returned");
  std::thread remover([&] { removed = h_->controller->Remove("p1", /*force=*/false); });
  ASSERT_TRUE(agents_.AwaitHeld(2));
  auto marked = h_->controller->MarkFaulty({{"p1", p.generation, {"agent m0: down"}}});
  agents_.CompleteAllHeld();
  remover.join();
  ASSERT_TRUE(marked.ok()) << marked.status();
  EXPECT_EQ(*marked, 0u);
  EXPECT_TRUE(removed.ok()) << removed;
  EXPECT_TRUE(absl::IsNotFound(h_->controller->Get("p1").status()));
}

TEST_F(PartitionControllerHealthTest, AStoreRefusingTheWriteMarksNothingAndSaysWhy) {
  fabric::Partition p = Active("p1", 8);
  h_->store->RefuseWrites(absl::ResourceExhaustedError("the disk of the database is full"));
  auto marked = h_->controller->MarkFaulty({{"p1", p.generation, {"agent m0: down"}}});
  h_->store->Accept();
  EXPECT_TRUE(absl::IsResourceExhausted(marked.status())) << marked.status();
  EXPECT_THAT(marked.status().message(), HasSubstr("disk of the database is full"));
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(got.errors, IsEmpty());
}

// ---- AutoReset

TEST_F(PartitionControllerHealthTest, AFailedPartitionIsResetAtANewGenerationAndGoesActive) {
  fabric::Partition failed = Failed(Active("p1", 8), {"agent m0: down"});
  const std::vector<std::string> machines = test::ControllerHarness::MachinesOf(failed);
  agents_.Hang("", Op::kReset);
  auto reset = h_->controller->AutoReset("p1", failed.generation);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_TRUE(*reset);

  // Committed before any agent answers: a new generation, pending, the
  // retry counted and stamped.
  fabric::Partition pending = Get("p1");
  EXPECT_GT(pending.generation, failed.generation);
  EXPECT_EQ(pending.ready_state, fabric::ReadyState::kPending);
  EXPECT_EQ(pending.operation_state, fabric::OperationState::kResetting);
  EXPECT_THAT(pending.errors, IsEmpty());
  EXPECT_EQ(pending.auto_reset_retry_count, 1u);
  EXPECT_GT(pending.last_auto_reset_unix_ms, 0);

  ASSERT_TRUE(agents_.AwaitHeld(2));
  EXPECT_THAT(agents_.agents(Op::kReset, pending.generation), UnorderedElementsAreArray(machines));
  agents_.CompleteAllHeld();
  fabric::Partition p = *h_->Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kIdle);
  EXPECT_EQ(p.generation, pending.generation);
  EXPECT_EQ(p.auto_reset_retry_count, 1u);
}

TEST_F(PartitionControllerHealthTest, AnActivePartitionIsNotAutoReset) {
  fabric::Partition p = Active("p1", 8);
  auto reset = h_->controller->AutoReset("p1", p.generation);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_FALSE(*reset);
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.generation, p.generation);
  EXPECT_EQ(got.auto_reset_retry_count, 0u);
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerHealthTest, AnAutoResetForAnotherGenerationDoesNothing) {
  fabric::Partition failed = Failed(Active("p1", 8), {"agent m0: down"});
  auto reset = h_->controller->AutoReset("p1", failed.generation + 1);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_FALSE(*reset);
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.generation, failed.generation);
  EXPECT_EQ(got.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(got.auto_reset_retry_count, 0u);
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerHealthTest, AnUnknownPartitionIsNotAutoReset) {
  auto reset = h_->controller->AutoReset("gone", 1);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_FALSE(*reset);
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerHealthTest, APartitionWithAutoResetDisabledIsNotReset) {
  fabric::PartitionRequest r;
  r.id = "p1";
  r.size = 8;
  r.disable_auto_reset = true;
  ASSERT_TRUE(h_->controller->Create(r).ok());
  fabric::Partition active = *h_->Settled("p1");
  ASSERT_EQ(active.ready_state, fabric::ReadyState::kActive);
  fabric::Partition failed = Failed(active, {"agent m0: down"});
  auto reset = h_->controller->AutoReset("p1", failed.generation);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_FALSE(*reset);
  EXPECT_EQ(Get("p1").ready_state, fabric::ReadyState::kError);
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerHealthTest, AnAutoResetAMachineRefusesFailsThePartitionNamingIt) {
  fabric::Partition failed = Failed(Active("p1", 8), {"agent m0: down"});
  const std::vector<std::string> machines = test::ControllerHarness::MachinesOf(failed);
  ASSERT_EQ(machines.size(), 2u);
  agents_.Fail(machines[1], Op::kReset, absl::UnavailableError("machine on fire"));
  auto reset = h_->controller->AutoReset("p1", failed.generation);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_TRUE(*reset);
  fabric::Partition p = *h_->Settled("p1");
  EXPECT_GT(p.generation, failed.generation);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kFailed);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": machine on fire")));
  EXPECT_EQ(p.auto_reset_retry_count, 1u);
}

TEST_F(PartitionControllerHealthTest, AutoResetStopsOnceTheRetriesAreSpent) {
  fabric::Partition p = Failed(Active("p1", 8), {"agent m0: down"});
  const std::vector<std::string> machines = test::ControllerHarness::MachinesOf(p);
  agents_.Fail(machines[0], Op::kReset, absl::UnavailableError("machine on fire"));
  const uint32_t max = p.max_auto_reset_retries;
  ASSERT_GT(max, 0u);
  for (uint32_t attempt = 1; attempt <= max; ++attempt) {
    SCOPED_TRACE(absl::StrCat("attempt ", attempt));
    auto reset = h_->controller->AutoReset("p1", p.generation);
    ASSERT_TRUE(reset.ok()) << reset.status();
    ASSERT_TRUE(*reset);
    p = *h_->Settled("p1");
    ASSERT_EQ(p.ready_state, fabric::ReadyState::kError);
    EXPECT_EQ(p.auto_reset_retry_count, attempt);
  }
  auto spent = h_->controller->AutoReset("p1", p.generation);
  ASSERT_TRUE(spent.ok()) << spent.status();
  EXPECT_FALSE(*spent);
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.generation, p.generation);
  EXPECT_EQ(got.auto_reset_retry_count, max);
  EXPECT_EQ(agents_.calls(Op::kReset).size(), max * machines.size());
}

TEST_F(PartitionControllerHealthTest, AManualResetStartsAFreshRetryBudget) {
  fabric::Partition p = Failed(Active("p1", 8), {"agent m0: down"});
  agents_.Fail("", Op::kReset, absl::UnavailableError("machine on fire"));
  for (uint32_t attempt = 1; attempt <= p.max_auto_reset_retries; ++attempt) {
    ASSERT_TRUE(h_->controller->AutoReset("p1", Get("p1").generation).value_or(false));
    ASSERT_EQ(h_->Settled("p1")->ready_state, fabric::ReadyState::kError);
  }
  ASSERT_FALSE(h_->controller->AutoReset("p1", Get("p1").generation).value_or(true));

  agents_.Succeed("", Op::kReset);
  ASSERT_TRUE(h_->controller->Reset("p1").ok());
  fabric::Partition reset = *h_->Settled("p1");
  EXPECT_EQ(reset.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(reset.auto_reset_retry_count, 0u);
  fabric::Partition failed = Failed(reset, {"agent m0: down"});
  auto again = h_->controller->AutoReset("p1", failed.generation);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_TRUE(*again);
}

TEST_F(PartitionControllerHealthTest, APartitionBeingRemovedIsNotAutoReset) {
  fabric::Partition failed = Failed(Active("p1", 8), {"agent m0: down"});
  agents_.Hang("", Op::kRelease);
  absl::Status removed = absl::UnknownError("not returned");
  std::thread remover([&] { removed = h_->controller->Remove("p1", /*force=*/false); });
  ASSERT_TRUE(agents_.AwaitHeld(2));
  auto reset = h_->controller->AutoReset("p1", failed.generation);
  agents_.CompleteAllHeld();
  remover.join();
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_FALSE(*reset);
  EXPECT_TRUE(removed.ok()) << removed;
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerHealthTest, AStoreRefusingTheWriteStartsNoResetAndSaysWhy) {
  fabric::Partition failed = Failed(Active("p1", 8), {"agent m0: down"});
  h_->store->RefuseWrites(absl::ResourceExhaustedError("the disk of the database is full"));
  auto reset = h_->controller->AutoReset("p1", failed.generation);
  h_->store->Accept();
  EXPECT_TRUE(absl::IsResourceExhausted(reset.status())) << reset.status();
  EXPECT_THAT(reset.status().message(), HasSubstr("disk of the database is full"));
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.generation, failed.generation);
  EXPECT_EQ(got.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(got.auto_reset_retry_count, 0u);
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerHealthTest, AFaultyRelocatablePartitionMovesToHealthyIpus) {
  fabric::Partition active = Active("p1", 4, /*relocatable=*/true);
  const std::vector<std::string> before = test::ControllerHarness::MachinesOf(active);
  ASSERT_EQ(before.size(), 1u);
  fabric::Partition failed = Failed(active, {FailIpu(before[0], active.ipus[1].ipu.ipu)});
  // The fault lasts: a relocatable partition moves instead of waiting.
  auto reset = h_->controller->AutoReset("p1", failed.generation);
  ASSERT_TRUE(reset.ok()) << reset.status();
  EXPECT_TRUE(*reset);
  fabric::Partition p = *h_->Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_GT(p.generation, failed.generation);
  EXPECT_EQ(p.auto_reset_retry_count, 1u);
  const std::vector<std::string> after = test::ControllerHarness::MachinesOf(p);
  ASSERT_EQ(after.size(), 1u);
  EXPECT_NE(after[0], before[0]);
  EXPECT_THAT(agents_.agents(Op::kConfigure, p.generation), ElementsAre(after[0]));
  EXPECT_THAT(agents_.agents(Op::kRelease, p.generation), ElementsAre(before[0]));
  EXPECT_THAT(agents_.calls(Op::kReset), IsEmpty());
}

TEST_F(PartitionControllerHealthTest,
       AFaultyRelocatablePartitionWaitsForRoomWithoutSpendingARetry) {
  fabric::Partition active = Active("p1", 4, /*relocatable=*/true);
  const std::string machine = test::ControllerHarness::MachinesOf(active)[0];
  auto fillers = h_->Fill(4);
  ASSERT_TRUE(fillers.ok()) << fillers.status();
  ASSERT_FALSE(fillers->empty());
  fabric::Partition failed = Failed(active, {FailIpu(machine, active.ipus[0].ipu.ipu)});

  auto waiting = h_->controller->AutoReset("p1", failed.generation);
  ASSERT_TRUE(waiting.ok()) << waiting.status();
  EXPECT_FALSE(*waiting);
  fabric::Partition got = Get("p1");
  EXPECT_EQ(got.generation, failed.generation);
  EXPECT_EQ(got.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(got.auto_reset_retry_count, 0u);
  EXPECT_EQ(got.last_auto_reset_unix_ms, 0);

  // Room again: the next pass moves it where the filler was.
  auto filler = h_->controller->Get(fillers->back());
  ASSERT_TRUE(filler.ok()) << filler.status();
  ASSERT_TRUE(h_->controller->Remove(fillers->back(), /*force=*/false).ok());
  auto moved = h_->controller->AutoReset("p1", failed.generation);
  ASSERT_TRUE(moved.ok()) << moved.status();
  EXPECT_TRUE(*moved);
  fabric::Partition p = *h_->Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.auto_reset_retry_count, 1u);
  EXPECT_EQ(test::ControllerHarness::MachinesOf(p), test::ControllerHarness::MachinesOf(*filler));
  EXPECT_THAT(test::ControllerHarness::MachinesOf(p), Not(ElementsAre(machine)));
}

}  // namespace
}  // namespace vipu::server
