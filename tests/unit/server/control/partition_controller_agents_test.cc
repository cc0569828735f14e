// PartitionController driving its agents through a FakeAgentClient: what
// each machine is asked, and the partition state that follows from what
// the agents answer, in whatever order they answer.
#include <atomic>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "fabric/link_topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/store.h"
#include "tests/unit/support/controller_harness.h"
#include "tests/unit/support/fake_agent_client.h"

namespace vipu::server {
namespace {

using Op = FakeAgentClient::Op;
using ::testing::ElementsAre;
using ::testing::UnorderedElementsAreArray;

class PartitionAgentsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto harness = test::ControllerHarness::Open("partition_agents", &agents_, 2);
    ASSERT_TRUE(harness.ok()) << harness.status();
    harness_ = *std::move(harness);
    store_ = harness_->store.get();
    controller_ = harness_->controller.get();
    std::vector<std::string> ids;
    for (int i = 0; i < 8; ++i) {
      ids.push_back(absl::StrCat("m", i));
      ASSERT_TRUE(harness_->AddMachine(ids.back(), static_cast<uint32_t>(7000 + i)).ok());
    }
    absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
      fabric::Cluster c{"c", ids, 2, fabric::IldTopology::kTorus,
                        fabric::ClusterTopology::kSwitched};
      if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
      return txn.InsertAllocation({"all", "c", ids});
    });
    ASSERT_TRUE(s.ok()) << s;
  }
  void TearDown() override {
    // Nothing may stay held while the controller's workers stop.
    agents_.CompleteAllHeld();
    harness_.reset();
  }

  absl::StatusOr<fabric::Partition> Create(const std::string& id, uint32_t size) {
    fabric::PartitionRequest r;
    r.id = id;
    r.size = size;
    return controller_->Create(r);
  }

  // The partition once its background operation has committed an outcome.
  fabric::Partition Settled(const std::string& id) {
    auto p = controller_->GetSettled(id, absl::Now() + absl::Seconds(10));
    EXPECT_TRUE(p.ok()) << p.status();
    return p.ok() ? *p : fabric::Partition{};
  }

  // A size-8 partition created and settled, with its machines in order.
  fabric::Partition CreateSettled(const std::string& id, std::vector<std::string>* machines) {
    auto created = Create(id, 8);
    EXPECT_TRUE(created.ok()) << created.status();
    if (!created.ok()) return {};
    *machines = MachinesOf(*created);
    return Settled(id);
  }

  static std::vector<std::string> AllMachines() {
    std::vector<std::string> ids;
    for (int i = 0; i < 8; ++i) ids.push_back(absl::StrCat("m", i));
    return ids;
  }

  static std::vector<std::string> MachinesOf(const fabric::Partition& p) {
    std::vector<std::string> machines;
    for (const fabric::PartitionIpu& ipu : p.ipus) {
      if (machines.empty() || machines.back() != ipu.ipu.agent_id) {
        machines.push_back(ipu.ipu.agent_id);
      }
    }
    return machines;
  }

  static std::vector<std::string> AgentsCalled(const std::vector<FakeAgentClient::Call>& calls) {
    std::vector<std::string> out;
    for (const auto& c : calls) out.push_back(c.agent.agent_id);
    return out;
  }

  FakeAgentClient agents_;  // outlives the harness, whose driver calls it
  std::unique_ptr<test::ControllerHarness> harness_;
  storage::Store* store_ = nullptr;            // the harness's
  PartitionController* controller_ = nullptr;  // the harness's
};

TEST_F(PartitionAgentsTest, CreateConfiguresEveryMachineThenGoesActive) {
  std::vector<std::string> machines;
  fabric::Partition p = CreateSettled("p1", &machines);
  ASSERT_EQ(machines.size(), 2u);
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kIdle);
  EXPECT_TRUE(p.errors.empty());

  // The ports each machine owns come from the cluster placement saw.
  auto cluster = harness_->cluster_links.LinksOf(fabric::Cluster{
      "c", AllMachines(), 2, fabric::IldTopology::kTorus, fabric::ClusterTopology::kSwitched});
  ASSERT_TRUE(cluster.ok()) << cluster.status();
  std::map<std::string, std::vector<uint32_t>> owned =
      fabric::PartitionPorts((*cluster)->topology, p);
  size_t ports = 0;
  for (const auto& [agent, list] : owned) ports += list.size();
  EXPECT_GT(ports, 0u) << "two machines of one ILD share IPU-Links";

  std::vector<FakeAgentClient::Call> configured = agents_.calls(Op::kConfigure);
  EXPECT_THAT(AgentsCalled(configured), UnorderedElementsAreArray(machines));
  for (const auto& c : configured) {
    SCOPED_TRACE(c.agent.agent_id);
    EXPECT_EQ(c.partition.partition_id, "p1");
    EXPECT_EQ(c.partition.generation, p.generation);
    EXPECT_EQ(c.config.partition_size, 8u);
    EXPECT_THAT(c.config.ipus, ::testing::UnorderedElementsAre(0u, 1u, 2u, 3u));
    EXPECT_EQ(c.agent.host, "127.0.0.1");
    EXPECT_EQ(c.agent.port, harness_->registry.Get(c.agent.agent_id)->port);
    // Every member knows where the others are.
    std::vector<std::string> members;
    for (const auto& m : c.config.members) members.push_back(m.agent_id);
    EXPECT_THAT(members, UnorderedElementsAreArray(machines));
    EXPECT_EQ(c.config.link_ports, owned[c.agent.agent_id]);
  }
  EXPECT_TRUE(agents_.calls(Op::kReset).empty());
  EXPECT_TRUE(agents_.calls(Op::kRelease).empty());
}

TEST_F(PartitionAgentsTest, AFailingMachineFailsThePartitionNamingIt) {
  // Which machines a size-8 partition lands on is the placement's choice:
  // fail configure on every machine but the first of the cluster.
  for (int i = 1; i < 8; ++i) {
    agents_.Fail(absl::StrCat("m", i), Op::kConfigure, absl::UnavailableError("machine on fire"));
  }
  std::vector<std::string> machines;
  fabric::Partition p = CreateSettled("p1", &machines);
  ASSERT_EQ(machines.size(), 2u);
  ASSERT_EQ(machines[0], "m0");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kFailed);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": machine on fire")));
}

TEST_F(PartitionAgentsTest, MachinesAnsweringInAnyOrderGiveOneOutcome) {
  agents_.Hang("", Op::kConfigure);
  auto created = Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  std::vector<std::string> machines = MachinesOf(*created);
  ASSERT_EQ(machines.size(), 2u);
  ASSERT_TRUE(agents_.AwaitHeld(2));
  // The second machine answers first; the first is still held and the
  // partition still pending.
  ASSERT_TRUE(agents_.CompleteHeld(machines[1], Op::kConfigure));
  EXPECT_EQ(controller_->Get("p1")->ready_state, fabric::ReadyState::kPending);
  ASSERT_TRUE(agents_.CompleteHeld(machines[0], Op::kConfigure));
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_TRUE(p.errors.empty());
}

TEST_F(PartitionAgentsTest, AFailureAnsweredBeforeALateSuccessStillFails) {
  agents_.Hang("", Op::kConfigure);
  auto created = Create("p1", 8);
  ASSERT_TRUE(created.ok()) << created.status();
  std::vector<std::string> machines = MachinesOf(*created);
  ASSERT_EQ(machines.size(), 2u);
  ASSERT_TRUE(agents_.AwaitHeld(2));
  ASSERT_TRUE(agents_.CompleteHeld(machines[1], Op::kConfigure,
                                   absl::DeadlineExceededError("Deadline Exceeded")));
  EXPECT_EQ(controller_->Get("p1")->ready_state, fabric::ReadyState::kPending);
  ASSERT_TRUE(agents_.CompleteHeld(machines[0], Op::kConfigure));
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  EXPECT_EQ(p.operation_state, fabric::OperationState::kFailed);
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": Deadline Exceeded")));
}

TEST_F(PartitionAgentsTest, ResetConfiguresAMachineThatLostThePartition) {
  std::vector<std::string> machines;
  ASSERT_EQ(CreateSettled("p1", &machines).ready_state, fabric::ReadyState::kActive);
  ASSERT_EQ(machines.size(), 2u);
  agents_.Fail(machines[0], Op::kReset, absl::NotFoundError("partition not held"));
  ASSERT_TRUE(controller_->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kActive);
  EXPECT_THAT(AgentsCalled(agents_.calls(Op::kReset)), UnorderedElementsAreArray(machines));
  std::vector<FakeAgentClient::Call> configured = agents_.calls(Op::kConfigure);
  ASSERT_EQ(configured.size(), 3u);  // both at create, then the one that lost it
  EXPECT_EQ(configured[2].agent.agent_id, machines[0]);
  EXPECT_EQ(configured[2].partition.generation, p.generation);
  // Told again all it was told at create: its IPUs, ports and members.
  const FakeAgentClient::Call& first =
      configured[0].agent.agent_id == machines[0] ? configured[0] : configured[1];
  EXPECT_EQ(configured[2].config.ipus, first.config.ipus);
  EXPECT_EQ(configured[2].config.link_ports, first.config.link_ports);
  EXPECT_EQ(configured[2].config.members.size(), 2u);
}

TEST_F(PartitionAgentsTest, AResetWhoseReconfigureFailsNamesThatFailureOnly) {
  std::vector<std::string> machines;
  ASSERT_EQ(CreateSettled("p1", &machines).ready_state, fabric::ReadyState::kActive);
  ASSERT_EQ(machines.size(), 2u);
  agents_.Fail(machines[0], Op::kReset, absl::NotFoundError("partition not held"));
  agents_.Fail(machines[0], Op::kConfigure, absl::ResourceExhaustedError("out of memory"));
  agents_.Fail(machines[1], Op::kReset, absl::UnavailableError("link training failed"));
  ASSERT_TRUE(controller_->Reset("p1").ok());
  fabric::Partition p = Settled("p1");
  EXPECT_EQ(p.ready_state, fabric::ReadyState::kError);
  // The reset's own failure first, then the reconfigure's; the NOT_FOUND
  // that led to the reconfigure is no error of the partition.
  EXPECT_THAT(p.errors, ElementsAre(absl::StrCat("agent ", machines[1], ": link training failed"),
                                    absl::StrCat("agent ", machines[0], ": out of memory")));
}

TEST_F(PartitionAgentsTest, StopWaitsForAConfigureInFlightAndStartsNoOther) {
  agents_.Hang("", Op::kConfigure);
  ASSERT_TRUE(Create("p1", 8).ok());
  ASSERT_TRUE(agents_.AwaitHeld(2));
  std::atomic<bool> stopped{false};
  std::thread stopper([&] {
    controller_->Stop();
    stopped = true;
  });
  // Stop cannot return before the held calls are answered: the outcome is
  // committed before it does.
  EXPECT_FALSE(stopped.load());
  agents_.CompleteAllHeld();
  stopper.join();
  auto p = controller_->Get("p1");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ready_state, fabric::ReadyState::kActive);
  // Created once stopped: committed, left pending for the next start's
  // recovery, no agent called.
  const size_t calls = agents_.calls(Op::kConfigure).size();
  auto late = Create("p2", 1);
  ASSERT_TRUE(late.ok()) << late.status();
  EXPECT_EQ(controller_->Get("p2")->ready_state, fabric::ReadyState::kPending);
  EXPECT_EQ(agents_.calls(Op::kConfigure).size(), calls);
}

TEST_F(PartitionAgentsTest, RemoveWaitsForAHeldRelease) {
  std::vector<std::string> machines;
  ASSERT_EQ(CreateSettled("p1", &machines).ready_state, fabric::ReadyState::kActive);
  agents_.Hang("", Op::kRelease);
  absl::Status removed = absl::UnknownError("not returned");
  std::thread remover([&] { removed = controller_->Remove("p1", /*force=*/false); });
  ASSERT_TRUE(agents_.AwaitHeld(2));
  auto p = controller_->Get("p1");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->operation_state, fabric::OperationState::kRemoving);
  agents_.CompleteAllHeld();
  remover.join();
  EXPECT_TRUE(removed.ok()) << removed;
  EXPECT_TRUE(absl::IsNotFound(controller_->Get("p1").status()));
}

TEST_F(PartitionAgentsTest, RemoveReleasesOnEveryMachine) {
  std::vector<std::string> machines;
  fabric::Partition p = CreateSettled("p1", &machines);
  ASSERT_EQ(p.ready_state, fabric::ReadyState::kActive);
  ASSERT_TRUE(controller_->Remove("p1", /*force=*/false).ok());
  std::vector<FakeAgentClient::Call> released = agents_.calls(Op::kRelease);
  EXPECT_THAT(AgentsCalled(released), UnorderedElementsAreArray(machines));
  for (const auto& c : released) {
    EXPECT_EQ(c.partition.partition_id, "p1");
    EXPECT_EQ(c.partition.generation, p.generation);
  }
  EXPECT_TRUE(absl::IsNotFound(controller_->Get("p1").status()));
}

TEST_F(PartitionAgentsTest, RemoveRefusedByAMachineKeepsThePartitionInError) {
  std::vector<std::string> machines;
  ASSERT_EQ(CreateSettled("p1", &machines).ready_state, fabric::ReadyState::kActive);
  agents_.Fail(machines[1], Op::kRelease, absl::UnavailableError("gone"));
  absl::Status s = controller_->Remove("p1", /*force=*/false);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_EQ(s.message(), absl::StrCat("agents did not release partition 'p1': agent ", machines[1],
                                      ": gone; retry, or remove with force"));
  auto p = controller_->Get("p1");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ready_state, fabric::ReadyState::kError);
  // With force it goes, whatever the agents say.
  ASSERT_TRUE(controller_->Remove("p1", /*force=*/true).ok());
  EXPECT_TRUE(absl::IsNotFound(controller_->Get("p1").status()));
}

}  // namespace
}  // namespace vipu::server

namespace vipu::server {
namespace {

TEST_F(PartitionAgentsTest, AReadOfAPendingPartitionWaitsForItsOutcome) {
  agents_.Hang("", Op::kConfigure);
  ASSERT_TRUE(Create("w", 8).ok());
  absl::StatusOr<fabric::Partition> read;
  std::thread reader([&] { read = controller_->GetSettled("w", absl::InfiniteFuture()); });
  ASSERT_TRUE(agents_.AwaitHeld(2));
  agents_.CompleteAllHeld();
  reader.join();
  ASSERT_TRUE(read.ok()) << read.status();
  // Had the read not waited, it would have seen the partition pending.
  EXPECT_EQ(read->ready_state, fabric::ReadyState::kActive);
}

TEST_F(PartitionAgentsTest, AReadOfAPendingPartitionAnswersPendingAtItsDeadline) {
  agents_.Hang("", Op::kConfigure);
  ASSERT_TRUE(Create("w", 8).ok());
  auto read = controller_->GetSettled("w", absl::Now() + absl::Milliseconds(20));
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->ready_state, fabric::ReadyState::kPending);
}

TEST_F(PartitionAgentsTest, AReadOfASettledPartitionDoesNotWait) {
  std::vector<std::string> machines;
  ASSERT_EQ(CreateSettled("s", &machines).ready_state, fabric::ReadyState::kActive);
  // Already settled: answered even with a deadline in the past.
  auto read = controller_->GetSettled("s", absl::InfinitePast());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(read->ready_state, fabric::ReadyState::kActive);
  EXPECT_TRUE(absl::IsNotFound(controller_->GetSettled("none", absl::InfinitePast()).status()));
}

}  // namespace
}  // namespace vipu::server
