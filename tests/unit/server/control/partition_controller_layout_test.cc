// PartitionController::Create reuses a cluster's layout between creates
// but the database stays the source of truth: a cluster removed
// and created again under the same id with other agents, another agent
// order or another ILD count is placed on the cluster as it is now.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/fleet/grpc_agent_client.h"
#include "storage/store.h"
#include "tests/unit/support/controller_harness.h"

namespace vipu::server {
namespace {

class PartitionLayoutTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto harness = test::ControllerHarness::Open("partition_layout", &agent_client_, 1);
    ASSERT_TRUE(harness.ok()) << harness.status();
    harness_ = *std::move(harness);
    store_ = harness_->store.get();
    controller_ = harness_->controller.get();
  }
  void TearDown() override { harness_.reset(); }

  // Machines `prefix`0..n-1, registered and Up (on a port nothing listens
  // on: configuring them fails fast, which these tests do not look at).
  std::vector<std::string> Machines(const std::string& prefix, int n) {
    std::vector<std::string> ids;
    for (int i = 0; i < n; ++i) {
      ids.push_back(absl::StrCat(prefix, i));
      EXPECT_TRUE(harness_->AddMachine(ids.back(), 1).ok());
    }
    return ids;
  }

  // Cluster "c" of `agents` in `num_ilds` ILDs, with allocation "all" of
  // `allocated` (default: every agent, in the cluster's order); the agents
  // are added to the database when missing.
  void CreateCluster(const std::vector<std::string>& agents, uint32_t num_ilds,
                     std::vector<std::string> allocated = {}) {
    if (allocated.empty()) allocated = agents;
    absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
      for (const std::string& id : agents) {
        if (txn.GetAgent(id).ok()) continue;
        if (absl::Status s = txn.InsertAgent({id, "127.0.0.1", 1, fabric::MachineType::kM2000});
            !s.ok()) {
          return s;
        }
      }
      fabric::Cluster c{"c", agents, num_ilds, fabric::IldTopology::kTorus,
                        fabric::ClusterTopology::kSwitched};
      if (absl::Status s = txn.InsertCluster(c); !s.ok()) return s;
      return txn.InsertAllocation({"all", "c", allocated});
    });
    ASSERT_TRUE(s.ok()) << s;
  }

  // Removes every partition, the allocation and the cluster.
  void RemoveCluster(const std::vector<std::string>& partitions) {
    for (const std::string& id : partitions) {
      ASSERT_TRUE(controller_->Remove(id, /*force=*/true).ok());
    }
    absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
      if (absl::Status s = txn.DeleteAllocation("all"); !s.ok()) return s;
      return txn.DeleteCluster("c");
    });
    ASSERT_TRUE(s.ok()) << s;
  }

  absl::StatusOr<fabric::Partition> Create(const std::string& id, uint32_t size) {
    fabric::PartitionRequest r;
    r.id = id;
    r.size = size;
    return controller_->Create(r);
  }

  static std::set<std::string> AgentsOf(const fabric::Partition& p) {
    std::set<std::string> agents;
    for (const fabric::PartitionIpu& ipu : p.ipus) agents.insert(ipu.ipu.agent_id);
    return agents;
  }

  GrpcAgentClient agent_client_{absl::Seconds(1), /*credentials=*/nullptr};  // outlives the harness
  std::unique_ptr<test::ControllerHarness> harness_;
  storage::Store* store_ = nullptr;            // the harness's
  PartitionController* controller_ = nullptr;  // the harness's
};

TEST_F(PartitionLayoutTest, ClusterCreatedAgainWithOtherAgentsUsesThem) {
  CreateCluster(Machines("a", 8), 2);
  auto first = Create("p1", 4);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(AgentsOf(*first), (std::set<std::string>{"a0"}));
  RemoveCluster({"p1"});

  CreateCluster(Machines("b", 8), 2);
  auto second = Create("p2", 4);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(AgentsOf(*second), (std::set<std::string>{"b0"}));
  EXPECT_EQ(second->ipus[0].ipu, (fabric::IpuRef{"b0", 3}));
}

TEST_F(PartitionLayoutTest, ClusterCreatedAgainInAnotherOrderUsesTheNewLadder) {
  std::vector<std::string> agents = Machines("a", 8);
  CreateCluster(agents, 2);
  auto first = Create("p1", 16);  // all of ILD 0: a0..a3
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(AgentsOf(*first), (std::set<std::string>{"a0", "a1", "a2", "a3"}));
  RemoveCluster({"p1"});

  CreateCluster({agents.rbegin(), agents.rend()}, 2);  // ILD 0 is now a7..a4
  auto second = Create("p2", 16);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(AgentsOf(*second), (std::set<std::string>{"a4", "a5", "a6", "a7"}));
  EXPECT_EQ(second->ipus[0].ipu, (fabric::IpuRef{"a7", 3}));
}

TEST_F(PartitionLayoutTest, ClusterCreatedAgainWithOtherIldCountUsesIt) {
  std::vector<std::string> agents = Machines("a", 8);
  CreateCluster(agents, 2);
  auto first = Create("p1", 32);  // two ILDs of 16 IPUs
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(first->num_ilds, 2u);
  RemoveCluster({"p1"});

  CreateCluster(agents, 1);  // one ILD of 32 IPUs
  auto second = Create("p2", 32);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(second->num_ilds, 1u);
  for (const fabric::PartitionIpu& ipu : second->ipus) EXPECT_EQ(ipu.ild, 0u);
}

TEST_F(PartitionLayoutTest, UsedIpusAndDownAgentsAreReadOnEveryCreate) {
  CreateCluster(Machines("a", 4), 1);
  auto first = Create("p1", 4);
  ASSERT_TRUE(first.ok()) << first.status();
  auto second = Create("p2", 4);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(AgentsOf(*first), (std::set<std::string>{"a0"}));
  EXPECT_EQ(AgentsOf(*second), (std::set<std::string>{"a1"}));
  harness_->registry.ForgetForTesting("a2");  // not connected: not Up
  auto third = Create("p3", 4);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(AgentsOf(*third), (std::set<std::string>{"a3"}));
  auto refused = Create("p4", 4);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  // What was asked and why it cannot be had, each said once.
  EXPECT_EQ(refused.status().message(),
            "size: in allocation 'all', no ILD of cluster c has a free aligned block of 4 IPUs "
            "(agents down: a2)");
}

TEST_F(PartitionLayoutTest, AnAgentWithoutARecentHeartbeatIsDown) {
  std::vector<std::string> agents = Machines("a", 4);
  CreateCluster(agents, 1);
  LiveAgent stale;
  stale.id = "a0";
  stale.host = "127.0.0.1";
  stale.port = 1;
  harness_->registry.Register(stale, absl::Now() - harness_->registry.timeout() - absl::Seconds(1));
  ASSERT_FALSE(harness_->registry.IsUp("a0", absl::Now()));
  auto p = Create("p1", 8);  // a0 and a1 would be the best fit
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(AgentsOf(*p), (std::set<std::string>{"a2", "a3"}));
  auto refused = Create("p2", 8);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("(agents down: a0)"));
}

// An allocation of some of the cluster's machines, listed in another order
// than the cluster's: only they are used, and the down ones are named in the
// allocation's order.
TEST_F(PartitionLayoutTest, AllocationOfSomeMachinesInAnyOrderUsesOnlyThem) {
  std::vector<std::string> agents = Machines("a", 8);
  CreateCluster(agents, 2, {"a7", "a2", "a5", "a6", "a4", "a3"});
  harness_->registry.ForgetForTesting("a5");
  harness_->registry.ForgetForTesting("a3");
  auto first = Create("p1", 8);  // ILD 1 (a4..a7) has a4, a6, a7 Up
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(AgentsOf(*first), (std::set<std::string>{"a6", "a7"}));
  // Best fit: ILD 0 is the fuller (a0, a1 outside the allocation, a3 down).
  auto second = Create("p2", 4);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(AgentsOf(*second), (std::set<std::string>{"a2"}));
  auto third = Create("p3", 4);
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(AgentsOf(*third), (std::set<std::string>{"a4"}));
  auto refused = Create("p4", 4);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(refused.status().message(), ::testing::HasSubstr("(agents down: a5,a3)"));
}

}  // namespace
}  // namespace vipu::server
