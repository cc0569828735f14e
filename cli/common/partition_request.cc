// A client's partition request as the virmgrpc message CreatePartition takes.
#include "cli/common/partition_request.h"

namespace vipu::cli {

virmgrpc::CreatePartitionRequest ToWire(const fabric::PartitionRequest& request) {
  virmgrpc::CreatePartitionRequest out;
  virmgrpc::PartitionRequirements* r = out.mutable_requirements();
  r->set_id(request.id);
  r->set_size(request.size);
  r->set_cluster_id(request.cluster_id);
  r->set_allocation_id(request.allocation_id);
  r->set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(request.routing));
  r->set_num_ipulink_segments(request.num_ilds);
  r->set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(request.gw_routing));
  r->set_sync_type(static_cast<virmgrpc::SyncType>(request.sync_type));
  r->set_num_gcds(request.num_gcds);
  r->set_reconfigurable(request.reconfigurable);
  r->set_num_replicas(request.num_replicas);
  for (const fabric::PartitionIpu& ipu : request.ipus) {
    virmgrpc::PartitionIpu* p = r->add_ipus();
    p->set_ipulink_domain_topology_id(ipu.ild);
    p->set_ipulink_domain_routing_id(ipu.ild_routing);
    p->set_topology_id(ipu.topology_id);
    p->set_routing_id(ipu.routing_id);
  }
  out.set_disable_auto_reset(request.disable_auto_reset);
  out.set_relocatable(request.relocatable);
  return out;
}

}  // namespace vipu::cli
