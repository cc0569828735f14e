// FromWire and ToWire between user and admin API messages and fabric types.
#include "server/api/wire.h"

#include "absl/strings/str_format.h"
#include "base/status_macros.h"
#include "google/protobuf/util/time_util.h"

namespace vipu::server {
namespace {

template <typename Fabric, typename IsValid>
absl::StatusOr<Fabric> EnumFromWire(const char* field, int value, IsValid is_valid) {
  if (!is_valid(value)) {
    return absl::InvalidArgumentError(absl::StrFormat("%s: unknown value %d", field, value));
  }
  return static_cast<Fabric>(value);
}

}  // namespace

absl::StatusOr<fabric::PartitionRequest> FromWire(const virmgrpc::CreatePartitionRequest& request) {
  const virmgrpc::PartitionRequirements& r = request.requirements();
  fabric::PartitionRequest out;
  out.id = r.id();
  out.size = r.size();
  out.cluster_id = r.cluster_id();
  out.allocation_id = r.allocation_id();
  ASSIGN_OR_RETURN(out.routing, EnumFromWire<fabric::RoutingType>(
                                    "ipulink_routing_type", r.ipulink_routing_type(),
                                    virmgrpc::IpuLinkRoutingType_IsValid));
  ASSIGN_OR_RETURN(out.gw_routing,
                   EnumFromWire<fabric::GwRoutingType>("gw_routing_type", r.gw_routing_type(),
                                                       virmgrpc::GatewayRoutingType_IsValid));
  ASSIGN_OR_RETURN(out.sync_type, EnumFromWire<fabric::SyncType>("sync_type", r.sync_type(),
                                                                 virmgrpc::SyncType_IsValid));
  out.num_ilds = r.num_ipulink_segments();
  out.num_gcds = r.num_gcds();
  out.num_replicas = r.num_replicas();
  out.reconfigurable = r.reconfigurable();
  for (const auto& ipu : r.ipus()) {
    fabric::PartitionIpu p;
    p.ild = ipu.ipulink_domain_topology_id();
    p.ild_routing = ipu.ipulink_domain_routing_id();
    p.topology_id = ipu.topology_id();
    p.routing_id = ipu.routing_id();
    out.ipus.push_back(p);
  }
  out.disable_auto_reset = request.disable_auto_reset();
  out.relocatable = request.relocatable();
  return out;
}

absl::StatusOr<fabric::Cluster> FromWire(const vipuadmin::Cluster& c) {
  fabric::Cluster out;
  out.id = c.id();
  out.agent_ids.assign(c.agent_ids().begin(), c.agent_ids().end());
  out.num_ilds = c.num_ipulink_domains() == 0 ? 1 : c.num_ipulink_domains();
  ASSIGN_OR_RETURN(const fabric::IldTopology topology,
                   EnumFromWire<fabric::IldTopology>("topology", c.topology(),
                                                     vipuadmin::IpuLinkTopology_IsValid));
  out.topology =
      topology == fabric::IldTopology::kUndefined ? fabric::IldTopology::kTorus : topology;
  ASSIGN_OR_RETURN(const fabric::ClusterTopology cluster_topology,
                   EnumFromWire<fabric::ClusterTopology>("cluster_topology", c.cluster_topology(),
                                                         vipuadmin::GwLinkTopology_IsValid));
  out.cluster_topology = cluster_topology == fabric::ClusterTopology::kUndefined
                             ? fabric::ClusterTopology::kLooped
                             : cluster_topology;
  return out;
}

void ToWire(const fabric::Partition& p, virmgrpc::Partition* out) {
  out->set_id(p.id);
  out->set_ready_state(static_cast<virmgrpc::PartitionReadyState>(p.ready_state));
  out->set_ipuof_server_version(fabric::kIpuofServerVersion);
  virmgrpc::PartitionSpec* spec = out->mutable_spec();
  spec->set_cluster_id(p.cluster_id);
  spec->set_allocation_id(p.allocation_id);
  spec->mutable_ipus()->Reserve(static_cast<int>(p.ipus.size()));
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    virmgrpc::PartitionIpu* w = spec->add_ipus();
    w->set_ipulink_domain_topology_id(ipu.ild);
    w->set_ipulink_domain_routing_id(ipu.ild_routing);
    w->set_topology_id(ipu.topology_id);
    w->set_routing_id(ipu.routing_id);
  }
  spec->set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(p.routing));
  spec->set_sync_type(static_cast<virmgrpc::SyncType>(p.sync_type));
  spec->set_num_gcds(p.num_gcds);
  spec->set_num_ipulink_segments(p.num_ilds);
  spec->set_reconfigurable(p.reconfigurable);
  spec->set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(p.gw_routing));
  spec->set_num_replicas(p.num_replicas);
}

void ToWire(const fabric::Partition& p, virmgrpc::PartitionStatus* out) {
  out->set_partition_id(p.id);
  out->set_ready_state(static_cast<virmgrpc::PartitionReadyState>(p.ready_state));
  out->set_operation_state(static_cast<virmgrpc::PartitionOperationState>(p.operation_state));
  for (const std::string& e : p.errors) out->add_errors(e);
  out->set_max_auto_reset_retries(p.max_auto_reset_retries);
  out->set_auto_reset_retry_count(p.auto_reset_retry_count);
  if (p.last_auto_reset_unix_ms > 0) {
    *out->mutable_last_auto_reset_time() =
        google::protobuf::util::TimeUtil::MillisecondsToTimestamp(p.last_auto_reset_unix_ms);
  }
}

void ToWire(const fabric::Cluster& c, vipuadmin::Cluster* out) {
  out->set_id(c.id);
  for (const std::string& a : c.agent_ids) out->add_agent_ids(a);
  out->set_num_ipulink_domains(c.num_ilds);
  out->set_topology(static_cast<vipuadmin::IpuLinkTopology>(c.topology));
  out->set_cluster_topology(static_cast<vipuadmin::GwLinkTopology>(c.cluster_topology));
}

void ToWire(const fabric::Allocation& a, virmgrpc::Allocation* out) {
  out->set_id(a.id);
  out->mutable_spec()->set_cluster_id(a.cluster_id);
  for (const std::string& id : a.agent_ids) out->mutable_spec()->add_agent_ids(id);
}

void ToWire(const fabric::GcdConfig& gcd, virmgrpc::PartitionConfig::Gcd* out) {
  for (const fabric::IpuofDevice& d : gcd.devices) {
    virmgrpc::IpuofDevice* w = out->add_devices();
    w->set_ip(d.ip);
    w->set_server_port(d.server_port);
    w->set_rdma_port(d.rdma_port);
    w->set_device_id(d.device_id);
    w->set_ipulink_segment_id(d.ipulink_segment_id);
    w->set_routing_id(d.routing_id);
    w->set_ipu_arch_id(d.ipu_arch_id);
    w->set_ipu_id(d.ipu_id);
    w->set_chip_id(d.chip_id);
    w->set_gwsw_version(d.gwsw_version);
    w->set_ipum_sw_version(d.ipum_sw_version);
  }
  for (const auto& [k, v] : gcd.attributes) (*out->mutable_attributes())[k] = v;
}

}  // namespace vipu::server
