// The routing and sync type a partition asks for reach its machines: they
// configure them, report them with every run, and time the collectives with
// them (on a whole torus ILD only RINGSWNC closes the rings with the wrap
// links).
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "model/workload.h"
#include "popdist/ipuof_client.h"
#include "popdist/workload_spec.h"
#include "tests/integration/harness.h"

namespace vipu::testing {
namespace {

// BERT-Large as 16 replicas of 4 pipeline stages: its gradient reduction
// runs round each ladder column. LAMB's state is off chip and sharded, as
// in the published runs: on chip and whole it does not fit.
vipuagent::WorkloadSpec BertLarge16x4() {
  model::Workload w = *model::WorkloadPreset("bert-large");
  w.micro_batch = 8;
  w.grad_accum = 16;
  w.replicas = 16;
  w.ipus_per_replica = 4;
  w.layers_per_ipu = {3, 7, 7, 7};
  w.optimizer_state_offchip = true;
  w.replicated_tensor_sharding = true;
  return *popdist::ipuof::ToWorkloadSpec(w);
}

struct RunResult {
  double samples_per_sec = 0;
  virmgrpc::IpuLinkRoutingType routing = virmgrpc::IRT_UNDEFINED;
  virmgrpc::SyncType sync_type = virmgrpc::ST_UNDEFINED;
};

RunResult RunOn(const ServerProcess& server, const std::string& partition) {
  auto client = popdist::ipuof::IpuofClient::AttachToPartition("127.0.0.1", server.port(),
                                                               partition, 0, absl::Seconds(10));
  EXPECT_TRUE(client.ok()) << client.status();
  if (!client.ok()) return {};
  auto run = client->Run(BertLarge16x4(), 1);
  EXPECT_TRUE(run.ok()) << run.status();
  if (!run.ok()) return {};
  return {run->samples_per_sec, run->routing, run->sync_type};
}

TEST(RoutingTest, MachinesConfigureReportAndUseTheRoutingAndSyncType) {
  auto server = ServerProcess::Start("bow-pod64");
  ASSERT_EQ(server->Vipu({"create", "partition", "ring", "--size", "64"}).exit_code, 0);
  const RunResult ring = RunOn(*server, "ring");
  EXPECT_EQ(ring.routing, virmgrpc::IRT_RINGSWNC);  // the default on a whole torus ILD
  EXPECT_EQ(ring.sync_type, virmgrpc::ST_POD_NATIVE_DEFAULT);
  ASSERT_EQ(server->Vipu({"remove", "partition", "ring"}).exit_code, 0);

  CommandResult r = server->Vipu({"create", "partition", "dnc", "--size", "64", "--routing", "dnc",
                                  "--sync-type", "pod-native-replicated-pipeline"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const RunResult dnc = RunOn(*server, "dnc");
  EXPECT_EQ(dnc.routing, virmgrpc::IRT_DNC);
  EXPECT_EQ(dnc.sync_type, virmgrpc::ST_POD_NATIVE_REPLICATED_PIPELINE);
  // Without the wrap links each column's ring comes back over its own
  // links: the same step takes longer.
  EXPECT_LT(dnc.samples_per_sec, ring.samples_per_sec);
  EXPECT_GT(dnc.samples_per_sec, 0);
}

}  // namespace
}  // namespace vipu::testing
