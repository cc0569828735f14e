// What control tells each machine of a partition (PlanPartition,
// PlanOneMachine) and what the machines' results mean for it
// (MachinesThatLostIt, ErrorsOf).
#include "server/control/partition_plan.h"

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "fabric/link_topology.h"
#include "fabric/topology.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links.h"

namespace vipu::server {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;

class PartitionPlanTest : public ::testing::Test {
 protected:
  void SetUp() override {
    for (int i = 0; i < 4; ++i) ids_.push_back(absl::StrCat("m", i));
    auto layout = fabric::ClusterLayout::Build(
        {"c", ids_, 1, fabric::IldTopology::kTorus, fabric::ClusterTopology::kSwitched});
    ASSERT_TRUE(layout.ok()) << layout.status();
    links_ = BuildClusterLinks(*std::move(layout));
  }

  void RegisterAt(const std::string& id, uint32_t port) {
    LiveAgent a;
    a.id = id;
    a.host = "10.0.0.1";
    a.port = port;
    registry_.Register(a, absl::Now());
  }

  // IPUs 0..3 of m1, then of m0: an order unlike the cluster's.
  fabric::Partition TwoMachines() {
    fabric::Partition p;
    p.id = "p1";
    p.generation = 9;
    p.cluster_id = "c";
    p.num_ilds = 1;
    p.routing = fabric::RoutingType::kRingSwnc;
    for (const char* agent : {"m1", "m0"}) AddMachine(agent, &p);
    return p;
  }

  static void AddMachine(const std::string& agent, fabric::Partition* p) {
    for (uint32_t ipu = 0; ipu < 4; ++ipu) {
      fabric::PartitionIpu i;
      i.ipu = {agent, ipu};
      p->ipus.push_back(i);
    }
  }

  std::vector<std::string> ids_;
  ClusterLinks links_;
  AgentRegistry registry_{absl::Hours(1)};
};

TEST_F(PartitionPlanTest, EachMachineGetsItsIpusAddressPortsAndEveryMember) {
  RegisterAt("m0", 7000);
  RegisterAt("m1", 7001);
  fabric::Partition p = TwoMachines();
  PartitionPlan plan = PlanPartition(p, registry_, &links_);
  ASSERT_EQ(plan.machines.size(), 2u);
  std::map<std::string, std::vector<uint32_t>> owned = fabric::PartitionPorts(links_.topology, p);
  const char* order[] = {"m1", "m0"};  // the partition's, not the cluster's
  for (size_t i = 0; i < 2; ++i) {
    const MachinePlan& m = plan.machines[i];
    SCOPED_TRACE(m.address.agent_id);
    EXPECT_EQ(m.address.agent_id, order[i]);
    EXPECT_TRUE(m.connected);
    EXPECT_EQ(m.address.host, "10.0.0.1");
    EXPECT_EQ(m.address.port, i == 0 ? 7001u : 7000u);
    EXPECT_THAT(m.config.ipus, ElementsAre(0u, 1u, 2u, 3u));
    EXPECT_EQ(m.config.partition.partition_id, "p1");
    EXPECT_EQ(m.config.partition.generation, 9u);
    EXPECT_EQ(m.config.partition_size, 8u);
    EXPECT_EQ(m.config.routing, fabric::RoutingType::kRingSwnc);
    EXPECT_FALSE(m.config.link_ports.empty());
    EXPECT_EQ(m.config.link_ports, owned[m.address.agent_id]);
    ASSERT_EQ(m.config.members.size(), 2u);
    EXPECT_EQ(m.config.members[0].agent_id, "m1");
    EXPECT_EQ(m.config.members[1].port, 7000u);
  }
}

TEST_F(PartitionPlanTest, WithoutLinksNoPortsAreClaimed) {
  RegisterAt("m0", 7000);
  RegisterAt("m1", 7001);
  PartitionPlan plan = PlanPartition(TwoMachines(), registry_, /*links=*/nullptr);
  ASSERT_EQ(plan.machines.size(), 2u);
  for (const MachinePlan& m : plan.machines) EXPECT_THAT(m.config.link_ports, IsEmpty());
}

TEST_F(PartitionPlanTest, AnUnregisteredMachineIsNotConnectedAndNoMember) {
  RegisterAt("m1", 7001);  // m0 never registered
  PartitionPlan plan = PlanPartition(TwoMachines(), registry_, &links_);
  ASSERT_EQ(plan.machines.size(), 2u);
  EXPECT_TRUE(plan.machines[0].connected);
  EXPECT_FALSE(plan.machines[1].connected);
  EXPECT_EQ(plan.machines[1].address.agent_id, "m0");
  EXPECT_EQ(plan.machines[1].address.port, 0u);
  ASSERT_EQ(plan.machines[0].config.members.size(), 1u);
  EXPECT_EQ(plan.machines[0].config.members[0].agent_id, "m1");
}

TEST_F(PartitionPlanTest, AMachineWithoutAPortIsConnectedButNoMember) {
  RegisterAt("m1", 7001);
  RegisterAt("m0", 0);
  PartitionPlan plan = PlanPartition(TwoMachines(), registry_, &links_);
  EXPECT_TRUE(plan.machines[1].connected);
  ASSERT_EQ(plan.machines[0].config.members.size(), 1u);
  EXPECT_EQ(plan.machines[0].config.members[0].agent_id, "m1");
}

TEST_F(PartitionPlanTest, OneMachineNamesThePartitionAndGenerationGiven) {
  RegisterAt("m2", 7002);
  PartitionPlan plan = PlanOneMachine("m2", "gone", 41, registry_);
  ASSERT_EQ(plan.machines.size(), 1u);
  EXPECT_TRUE(plan.machines[0].connected);
  EXPECT_EQ(plan.machines[0].address.port, 7002u);
  EXPECT_EQ(plan.machines[0].config.partition.partition_id, "gone");
  EXPECT_EQ(plan.machines[0].config.partition.generation, 41u);
  EXPECT_FALSE(PlanOneMachine("m3", "gone", 41, registry_).machines[0].connected);
}

TEST_F(PartitionPlanTest, ErrorsNameMachinesNotConnectedFirstThenFailuresInOrder) {
  RegisterAt("m1", 7001);
  fabric::Partition p = TwoMachines();
  AddMachine("m2", &p);
  RegisterAt("m2", 7002);
  PartitionPlan plan = PlanPartition(p, registry_, &links_);  // m1, m0 (absent), m2
  AgentDriver::Results results = {{"m1", absl::UnavailableError("m1 down")},
                                  {"m0", NotConnectedError("m0")},
                                  {"m2", absl::Status(absl::StatusCode::kDeadlineExceeded, "")}};
  EXPECT_THAT(ErrorsOf(plan, results), ElementsAre("agent m0: not connected", "agent m1: m1 down",
                                                   "agent m2: call failed (deadline exceeded)"));
  results[0].status = absl::OkStatus();
  results[2].status = absl::OkStatus();
  EXPECT_THAT(ErrorsOf(plan, results), ElementsAre("agent m0: not connected"));
}

TEST_F(PartitionPlanTest, MachinesThatLostItAreThoseAnsweringNotFound) {
  RegisterAt("m0", 7000);
  RegisterAt("m1", 7001);
  PartitionPlan plan = PlanPartition(TwoMachines(), registry_, &links_);
  AgentDriver::Results results = {{"m1", absl::NotFoundError("not held")},
                                  {"m0", absl::UnavailableError("down")}};
  PartitionPlan lost = MachinesThatLostIt(plan, results);
  ASSERT_EQ(lost.machines.size(), 1u);
  EXPECT_EQ(lost.machines[0].address.agent_id, "m1");
  EXPECT_EQ(lost.machines[0].config.link_ports, plan.machines[0].config.link_ports);
  // Its NOT_FOUND is left to the reconfigure; the other failure stays.
  EXPECT_THAT(ErrorsOf(plan, results, /*lost_counts=*/false), ElementsAre("agent m0: down"));
  EXPECT_THAT(ErrorsOf(plan, results), ElementsAre("agent m1: not held", "agent m0: down"));
}

}  // namespace
}  // namespace vipu::server
