// ToWire: every field of a client's partition request reaches the wire message.
#include <gtest/gtest.h>

#include "cli/common/partition_request.h"
#include "fabric/types.h"

namespace vipu::cli {
namespace {

TEST(PartitionRequestToWire, CarriesEveryField) {
  fabric::PartitionRequest request;
  request.id = "p1";
  request.size = 32;
  request.cluster_id = "c1";
  request.allocation_id = "a1";
  request.routing = fabric::RoutingType::kRingSwnc;
  request.num_ilds = 2;
  request.gw_routing = fabric::GwRoutingType::kSwRing;
  request.sync_type = fabric::SyncType::kPodNativeReplicatedPipeline;
  request.num_gcds = 4;
  request.num_replicas = 8;
  request.reconfigurable = true;
  fabric::PartitionIpu ipu;
  ipu.ild = 1;
  ipu.ild_routing = 2;
  ipu.topology_id = 3;
  ipu.routing_id = 4;
  request.ipus.push_back(ipu);
  request.disable_auto_reset = true;
  request.relocatable = true;

  const virmgrpc::CreatePartitionRequest wire = ToWire(request);
  const virmgrpc::PartitionRequirements& r = wire.requirements();
  EXPECT_EQ(r.id(), "p1");
  EXPECT_EQ(r.size(), 32u);
  EXPECT_EQ(r.cluster_id(), "c1");
  EXPECT_EQ(r.allocation_id(), "a1");
  EXPECT_EQ(r.ipulink_routing_type(), virmgrpc::IRT_RINGSWNC);
  EXPECT_EQ(r.num_ipulink_segments(), 2u);
  EXPECT_EQ(r.gw_routing_type(), virmgrpc::GRT_SWRING);
  EXPECT_EQ(r.sync_type(), virmgrpc::ST_POD_NATIVE_REPLICATED_PIPELINE);
  EXPECT_EQ(r.num_gcds(), 4u);
  EXPECT_EQ(r.num_replicas(), 8u);
  EXPECT_TRUE(r.reconfigurable());
  ASSERT_EQ(r.ipus_size(), 1);
  EXPECT_EQ(r.ipus(0).ipulink_domain_topology_id(), 1u);
  EXPECT_EQ(r.ipus(0).ipulink_domain_routing_id(), 2u);
  EXPECT_EQ(r.ipus(0).topology_id(), 3u);
  EXPECT_EQ(r.ipus(0).routing_id(), 4u);
  EXPECT_TRUE(wire.disable_auto_reset());
  EXPECT_TRUE(wire.relocatable());
}

// Zero and undefined stay so: the server chooses.
TEST(PartitionRequestToWire, LeavesUnsetFieldsToTheServer) {
  fabric::PartitionRequest request;
  request.id = "p1";
  request.size = 4;
  const virmgrpc::CreatePartitionRequest wire = ToWire(request);
  const virmgrpc::PartitionRequirements& r = wire.requirements();
  EXPECT_EQ(r.ipulink_routing_type(), virmgrpc::IRT_UNDEFINED);
  EXPECT_EQ(r.gw_routing_type(), virmgrpc::GRT_UNDEFINED);
  EXPECT_EQ(r.sync_type(), virmgrpc::ST_UNDEFINED);
  EXPECT_EQ(r.num_gcds(), 0u);
  EXPECT_EQ(r.num_replicas(), 0u);
  EXPECT_EQ(r.num_ipulink_segments(), 0u);
  EXPECT_EQ(r.ipus_size(), 0);
  EXPECT_FALSE(r.reconfigurable());
  EXPECT_FALSE(wire.disable_auto_reset());
  EXPECT_FALSE(wire.relocatable());
}

}  // namespace
}  // namespace vipu::cli
