// Builds each GCD's IPUoF config and the POPLAR_TARGET_OPTIONS a partition implies.
#include "fabric/ipuof_config.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "fabric/enum_names.h"
#include "fabric/sub_devices.h"

namespace vipu::fabric {
namespace {

constexpr uint32_t kIpuArchIpu2 = 2;  // GC200 and Bow IPUs

std::string LinkConfiguration(RoutingType r) {
  switch (r) {
    case RoutingType::kBtnc:
      return "barleyTwist";
    case RoutingType::kSwnc:
    case RoutingType::kRingSwnc:
      return "slidingWindow";
    default:
      return "default";
  }
}

std::string LinkTopologyName(RoutingType r) {
  return r == RoutingType::kRingSwnc ? "torus" : "mesh";
}

uint32_t NumGcds(const Partition& p) { return std::max<uint32_t>(p.num_gcds, 1); }

// IPUs linked by IPU-Links inside one ILD: the partition's segment, which is
// the cluster's whole ILD for a full-ILD partition and min(size, ILD size)
// for a one-ILD partition.
uint32_t LinkDomainSize(const Partition& p, const ClusterLayout& layout) {
  const uint32_t segment = p.size() / std::max<uint32_t>(p.num_ilds, 1);
  return std::min(segment, layout.ipus_per_ild());
}

}  // namespace

std::vector<GcdConfig> BuildIpuofConfigs(const Partition& partition, const ClusterLayout& layout,
                                         const std::map<std::string, MachineEndpoint>& endpoints) {
  const uint32_t num_gcds = NumGcds(partition);
  const uint32_t per_gcd = partition.size() / num_gcds;
  std::map<std::string, std::string> common = {
      {"Num GCDs", absl::StrCat(num_gcds)},
      {"Num Replicas", absl::StrCat(partition.num_replicas)},
      {"Partition Id", partition.id},
      {"Fabric Reconfigurable", partition.reconfigurable ? "true" : "false"},
      {"IPU-Link Domain Size", absl::StrCat(LinkDomainSize(partition, layout))},
      {"IPU-Link Configuration", LinkConfiguration(partition.routing)},
      {"IPU-Link Topology", LinkTopologyName(partition.routing)},
      {"GW Routing", TableName(partition.gw_routing)},
      {"Sync Type", CliName(partition.sync_type)},
      {"IPUoF Server Version", kIpuofServerVersion},
  };
  std::vector<GcdConfig> gcds(num_gcds);
  for (uint32_t g = 0; g < num_gcds; ++g) {
    GcdConfig& gcd = gcds[g];
    gcd.attributes = common;
    gcd.attributes["GCD Id"] = absl::StrCat(g);
    // A reconfigurable partition lets applications attach to any aligned
    // power-of-two group of its IPUs, as Poplar numbers them.
    if (partition.reconfigurable && per_gcd >= 2) {
      gcd.attributes[kMultiIpuDevicesAttribute] = FormatMultiIpuDevices(per_gcd);
    }
    for (uint32_t i = 0; i < per_gcd; ++i) {
      const PartitionIpu& p = partition.ipus[g * per_gcd + i];
      IpuofDevice d;
      d.device_id = i;
      d.ipulink_segment_id = p.ild_routing;
      d.routing_id = p.routing_id;
      d.ipu_arch_id = kIpuArchIpu2;
      d.ipu_id = p.ipu.ipu;
      auto it = endpoints.find(p.ipu.agent_id);
      if (it != endpoints.end()) {
        const MachineEndpoint& e = it->second;
        d.ip = e.host;
        d.server_port = e.ipuof_port;
        d.rdma_port = e.rdma_port;
        if (p.ipu.ipu < e.chip_ids.size()) d.chip_id = e.chip_ids[p.ipu.ipu];
        d.gwsw_version = e.gwsw_version;
        d.ipum_sw_version = e.ipum_sw_version;
      }
      gcd.devices.push_back(std::move(d));
    }
  }
  return gcds;
}

std::vector<std::pair<std::string, std::string>> TargetOptions(const Partition& partition,
                                                               const ClusterLayout& layout) {
  return {
      {"ipuLinkDomainSize", absl::StrCat(LinkDomainSize(partition, layout))},
      {"ipuLinkConfiguration", LinkConfiguration(partition.routing)},
      {"ipuLinkTopology", LinkTopologyName(partition.routing)},
      {"gatewayMode", "true"},
      {"instanceSize", absl::StrCat(partition.size() / NumGcds(partition))},
  };
}

}  // namespace vipu::fabric
