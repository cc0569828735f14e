// A simulated machine's topology, faults and link ownership.
#include <thread>

#include "agents/simulated_machine.h"
#include "agents/workload_runner.h"
#include "fabric/pods.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace vipu::agents {
namespace {

using ::testing::HasSubstr;

// ag2 of pod16 as the server tells it (fabric::LinkTopology).
MachineTopology Ag2Topology() {
  auto layout = fabric::ClusterLayout::Build(fabric::PodCluster(*fabric::PodPreset("pod16"), "c"));
  fabric::LinkTopology links = fabric::LinkTopology::Build(*layout);
  MachineTopology t;
  t.cluster_id = "c";
  t.machine_index = 1;
  t.machines_per_ild = 4;
  for (const auto& [port, link] : links.PortsOf("ag2")) {
    const bool is_a = link->a.agent_id == "ag2" && link->a.port == port;
    const fabric::LinkEnd& self = is_a ? link->a : link->b;
    const fabric::LinkEnd& peer = is_a ? link->b : link->a;
    t.ports.push_back(
        {port, link->kind, link->name, self.ipu, peer.agent_id, peer.port, link->internal});
  }
  return t;
}

// Partition `id` on `ipus` whose IPU-Links use this machine's link `ports`.
PartitionConfig ConfigOnPorts(const std::string& id, std::vector<uint32_t> ipus,
                              std::vector<uint32_t> ports, uint64_t generation = 1) {
  PartitionConfig c;
  c.partition_id = id;
  c.generation = generation;
  c.ipus = std::move(ipus);
  c.routing = fabric::RoutingType::kDnc;
  c.partition_size = static_cast<uint32_t>(c.ipus.size());
  c.link_ports = std::move(ports);
  return c;
}

class MachineHealthTest : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(machine_.SetTopology(Ag2Topology()).ok()); }
  SimulatedMachine machine_{"ag2", fabric::MachineType::kM2000};
};

TEST_F(MachineHealthTest, PartitionsNeverShareALinkPort) {
  ASSERT_TRUE(machine_.Configure(ConfigOnPorts("a", {3, 2}, {fabric::kPortRungLower})).ok());
  absl::Status s = machine_.Configure(ConfigOnPorts("b", {1, 0}, {fabric::kPortRungLower}));
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(std::string(s.message()),
              HasSubstr("link_ports: port 0 (rung-lower) of agent ag2 is owned by partition a"));
  EXPECT_TRUE(machine_.Configure(ConfigOnPorts("b", {1, 0}, {fabric::kPortRungUpper})).ok());
  // Re-pushing the same configuration with moved members is fine.
  PartitionConfig again = ConfigOnPorts("a", {3, 2}, {fabric::kPortRungLower});
  again.members = {{"ag2", "127.0.0.1", 5000}};
  EXPECT_TRUE(machine_.Configure(again).ok());
  EXPECT_EQ(machine_.Config("a")->members.size(), 1u);
  // The same generation with other ports is another configuration.
  EXPECT_EQ(machine_.Configure(ConfigOnPorts("a", {3, 2}, {fabric::kPortRailInner0})).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(MachineHealthTest, RefusesInvalidPortsAndMembers) {
  struct Case {
    PartitionConfig config;
    std::string message;
  };
  PartitionConfig bad_member = ConfigOnPorts("p", {0}, {});
  bad_member.members = {{"ag1", "", 1}};
  PartitionConfig bad_port = ConfigOnPorts("p", {0}, {});
  bad_port.members = {{"ag1", "h", 70000}};
  for (const Case& c :
       std::vector<Case>{{ConfigOnPorts("p", {0}, {14}), "link_ports: port must be 0..13, got 14"},
                         {ConfigOnPorts("p", {0}, {3, 3}), "link_ports: port 3 is listed twice"},
                         {bad_member, "members:"},
                         {bad_port, "members:"}}) {
    absl::Status s = machine_.Configure(c.config);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
}

TEST_F(MachineHealthTest, FaultsNameTheMachineAndTheLinkUntilCleared) {
  ASSERT_TRUE(machine_.Configure(ConfigOnPorts("p", {3, 2, 1, 0}, {0, 1, 2, 3, 4, 5})).ok());
  EXPECT_TRUE(machine_.CheckPartition("p", 1).ok());
  auto d = machine_.InjectLinkDown(fabric::kPortRailNext0);
  ASSERT_TRUE(d.ok()) << d.status();
  EXPECT_EQ(*d, "agent ag2: IPU-Link ag2.ipu1-ag3.ipu3 down");
  absl::Status s = machine_.CheckPartition("p", 0);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(s.message(), "agent ag2: IPU-Link ag2.ipu1-ag3.ipu3 down");
  EXPECT_EQ(machine_.Reset("p", 2).code(), absl::StatusCode::kFailedPrecondition);
  auto ports = machine_.PortHealthReport();
  ASSERT_EQ(ports.size(), 12u);
  for (const PortHealth& p : ports) {
    EXPECT_EQ(p.trained, p.info.port != fabric::kPortRailNext0) << p.info.port;
  }
  machine_.ClearFaults();
  EXPECT_TRUE(machine_.CheckPartition("p", 1).ok());
  EXPECT_EQ(machine_.PortHealthReport()[fabric::kPortRailNext0].error_count, 1u);

  ASSERT_TRUE(machine_.InjectIpuError(2).ok());
  s = machine_.CheckPartition("p", 1);
  EXPECT_EQ(s.message(), "agent ag2: IPU 2 error (injected fault)");
  EXPECT_FALSE(machine_.IpuHealthReport()[2].healthy);
  EXPECT_TRUE(machine_.IpuHealthReport()[1].healthy);
  // A partition on the broken IPU cannot be configured.
  EXPECT_EQ(machine_.Configure(ConfigOnPorts("q", {2}, {}, 5)).code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST_F(MachineHealthTest, RefusesFaultsItCannotInject) {
  EXPECT_EQ(machine_.InjectIpuError(4).status().code(), absl::StatusCode::kInvalidArgument);
  // ag2 has no GW-Links in a single-ILD pod.
  auto gw = machine_.InjectLinkDown(fabric::kPortGw0);
  EXPECT_EQ(gw.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(gw.status().message()), HasSubstr("no link on port 12 (gw0)"));
  SimulatedMachine bare("ag9", fabric::MachineType::kM2000);
  EXPECT_EQ(bare.InjectLinkDown(0).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(bare.PortHealthReport().empty());
}

TEST_F(MachineHealthTest, CheckPartitionFencesGenerations) {
  ASSERT_TRUE(machine_.Configure(ConfigOnPorts("p", {0}, {}, 7)).ok());
  EXPECT_TRUE(machine_.CheckPartition("p", 7).ok());
  EXPECT_TRUE(machine_.CheckPartition("p", 0).ok());
  EXPECT_EQ(machine_.CheckPartition("p", 6).code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(machine_.CheckPartition("nope", 0).code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(machine_.CheckPartition("", 0).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(MachineHealthTest, HangEndsWhenClearedOrAfterItsDuration) {
  machine_.Hang(std::chrono::milliseconds(0));
  EXPECT_TRUE(machine_.silenced());
  EXPECT_FALSE(machine_.AwaitNotHung(std::chrono::steady_clock::now()));
  std::thread clearer([this] { machine_.ClearFaults(); });
  EXPECT_TRUE(machine_.AwaitNotHung(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  clearer.join();
  EXPECT_FALSE(machine_.hung());

  machine_.Hang(std::chrono::milliseconds(50));
  EXPECT_TRUE(machine_.hung());
  EXPECT_TRUE(machine_.AwaitNotHung(std::chrono::steady_clock::now() + std::chrono::seconds(10)));
  EXPECT_FALSE(machine_.silenced());

  machine_.MarkCrashed();
  EXPECT_TRUE(machine_.silenced());
  machine_.ClearFaults();
  EXPECT_TRUE(machine_.crashed());  // a crash is not cleared
}

TEST(ValidateTopologyTest, RefusesEveryInvalidField) {
  struct Case {
    std::function<void(MachineTopology*)> mutate;
    std::string message;
  };
  const std::vector<Case> cases = {
      {[](auto* t) { t->num_ilds = 0; }, "num_ilds:"},
      {[](auto* t) { t->ild = 1; }, "ild: must be below num_ilds 1, got 1"},
      {[](auto* t) { t->machines_per_ild = 0; }, "machines_per_ild:"},
      {[](auto* t) { t->machine_index = 4; }, "machine_index: must be below machines_per_ild 4"},
      {[](auto* t) { t->ports[0].port = 14; }, "ports.port: must be 0..13, got 14"},
      {[](auto* t) { t->ports[1].port = t->ports[0].port; }, "listed twice"},
      {[](auto* t) { t->ports[0].kind = fabric::LinkKind::kUndefined; }, "ports.kind:"},
      {[](auto* t) { t->ports[0].name = ""; }, "ports.name:"},
      {[](auto* t) { t->ports[0].local_ipu = 4; }, "ports.local_ipu:"},
      {[](auto* t) { t->ports[4].peer_agent_id = ""; }, "ports.peer_agent_id:"},
      {[](auto* t) { t->ports[0].peer_port = 14; }, "ports.peer_port:"},
  };
  for (const Case& c : cases) {
    MachineTopology t = Ag2Topology();
    ASSERT_FALSE(t.ports[4].internal);
    c.mutate(&t);
    absl::Status s = ValidateTopology(t);
    EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << c.message;
    EXPECT_THAT(std::string(s.message()), HasSubstr(c.message));
  }
  EXPECT_TRUE(ValidateTopology(Ag2Topology()).ok());
}

TEST(WorkloadRunnerTest, PredictsEqualStepsAndRefusesBadRequests) {
  WorkloadRequest w;
  w.model = "bert-base";
  w.micro_batch = 4;
  // On one IPU per replica LAMB's state only fits off chip.
  w.optimizer_state_offchip = true;
  PartitionShape shape{fabric::MachineType::kBow, 4, false};
  auto run = PredictRun(w, shape, 5);
  ASSERT_TRUE(run.ok()) << run.status();
  ASSERT_EQ(run->step_time_s.size(), 5u);
  EXPECT_GT(run->step_time_s[0], 0);
  EXPECT_GT(run->samples_per_sec, 0);
  // More replicas on a bigger partition do more samples per second.
  auto bigger = PredictRun(w, PartitionShape{fabric::MachineType::kBow, 16, false}, 1);
  ASSERT_TRUE(bigger.ok()) << bigger.status();
  EXPECT_GT(bigger->samples_per_sec, run->samples_per_sec);
  EXPECT_EQ(PartitionSystem({fabric::MachineType::kM2000, 2, false}).num_ipus, 2u);
  EXPECT_EQ(PartitionSystem({fabric::MachineType::kM2000, 128, true}).num_ilds, 2u);
  // 64 IPUs over 2 ILDs: two segments of 32 joined by GW-Links.
  const auto split = PartitionSystem({fabric::MachineType::kM2000, 64, true, 2});
  EXPECT_EQ(split.num_ilds, 2u);
  EXPECT_EQ(split.ipus_per_ild, 32u);

  EXPECT_EQ(PredictRun(w, shape, 0).status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PredictRun(w, shape, kMaxWorkloadSteps + 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(PredictRun(w, PartitionShape{fabric::MachineType::kBow, 0, false}, 1).status().code(),
            absl::StatusCode::kInvalidArgument);
  WorkloadRequest pipelined = w;
  pipelined.layers_per_ipu = {6, 6};
  auto p = BuildWorkload(pipelined, 4);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->ipus_per_replica, 2u);
  EXPECT_EQ(p->replicas, 2u);
  pipelined.ipus_per_replica = 4;  // disagrees with the split
  EXPECT_EQ(PredictRun(pipelined, shape, 1).status().code(), absl::StatusCode::kInvalidArgument);
  // With the state on chip the IPUs cannot hold it: refused naming the IPU.
  WorkloadRequest onchip = w;
  onchip.optimizer_state_offchip = false;
  auto full = PredictRun(onchip, shape, 1);
  EXPECT_EQ(full.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(full.status().message()), HasSubstr("memory: IPU 0 needs at least "));
}

}  // namespace
}  // namespace vipu::agents
