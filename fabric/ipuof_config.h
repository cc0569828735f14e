// The IPUoF configuration of a partition, one per GCD: what Poplar reads to
// attach, and the POPLAR_TARGET_OPTIONS it implies.
#ifndef VIPU_FABRIC_IPUOF_CONFIG_H_
#define VIPU_FABRIC_IPUOF_CONFIG_H_

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "fabric/topology.h"
#include "fabric/types.h"

namespace vipu::fabric {

// How to reach one machine's data plane.
struct MachineEndpoint {
  std::string host;
  uint32_t ipuof_port = 0;
  MachineType machine_type = MachineType::kM2000;
  std::string gwsw_version;
  std::string ipum_sw_version;
  std::vector<std::string> chip_ids;  // by IPU#, size kIpusPerMachine
  // The RDMA port the machine reported; 0 when it has not (a machine that is
  // not registered). Never derived from ipuof_port: each is its own port.
  uint32_t rdma_port = 0;
};

struct IpuofDevice {
  std::string ip;
  uint32_t server_port = 0;
  uint32_t rdma_port = 0;
  uint32_t device_id = 0;  // index inside the GCD
  uint32_t ipulink_segment_id = 0;
  uint32_t routing_id = 0;
  uint32_t ipu_arch_id = 0;  // 2 = ipu2 (GC200 and Bow)
  uint32_t ipu_id = 0;       // IPU# on the machine
  std::string chip_id;
  std::string gwsw_version;
  std::string ipum_sw_version;
};

struct GcdConfig {
  std::vector<IpuofDevice> devices;
  // "GCD Id", "Num GCDs", "Partition Id", "Fabric Reconfigurable", ...
  std::map<std::string, std::string> attributes;
};

inline constexpr const char* kIpuofServerVersion = "v1.3.3";

// GCD g holds the partition's IPUs [g*size/num_gcds, (g+1)*size/num_gcds).
std::vector<GcdConfig> BuildIpuofConfigs(const Partition& partition, const ClusterLayout& layout,
                                         const std::map<std::string, MachineEndpoint>& endpoints);

// Ordered key/value pairs: ipuLinkDomainSize, ipuLinkConfiguration,
// ipuLinkTopology, gatewayMode, instanceSize.
std::vector<std::pair<std::string, std::string>> TargetOptions(const Partition& partition,
                                                               const ClusterLayout& layout);

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_IPUOF_CONFIG_H_
