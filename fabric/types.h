// Plain C++ types of the V-IPU object model. No gRPC type travels below
// server/ and agents/: services translate wire messages to these.
// Enum numbers equal the virmgrpc wire numbers so translation is a cast after
// an IsValid check.
#ifndef VIPU_FABRIC_TYPES_H_
#define VIPU_FABRIC_TYPES_H_

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

namespace vipu::fabric {

enum class RoutingType : int { kUndefined = 0, kDnc = 1, kSwnc = 2, kBtnc = 3, kRingSwnc = 4 };
enum class GwRoutingType : int { kUndefined = 0, kRing = 2, kSwRing = 3 };
enum class SyncType : int {
  kUndefined = 0,
  kGs2Default = 1,           // CLI: c2-compatible
  kGs2IndependentRails = 2,  // unsupported, always refused
  kPodNativeDefault = 3,
  kPodNativeReplicatedPipeline = 4,
};
enum class ReadyState : int { kUndefined = 0, kPending = 1, kActive = 2, kRemoved = 3, kError = 4 };
enum class OperationState : int {
  kUndefined = 0,
  kIdle = 1,
  kCreating = 2,
  kRemoving = 3,
  kResetting = 4,
  kFailed = 5,
};
// IPU-Link topology inside one IPU-Link domain (ILD).
enum class IldTopology : int { kUndefined = 0, kMesh = 1, kTorus = 2 };
// GW-Link topology between ILDs.
enum class ClusterTopology : int { kUndefined = 0, kLooped = 1, kSwitched = 2 };
enum class MachineType : int { kM2000 = 0, kBow = 1 };

inline constexpr uint32_t kIpusPerMachine = 4;
inline constexpr uint32_t kMaxIpusPerIld = 64;
// Ids of agents, clusters, allocations and partitions: 1..64 characters of
// [A-Za-z0-9._-], starting with a letter or digit (see fabric/validation.h).
inline constexpr size_t kMaxIdLength = 64;

// A physical IPU: the machine (agent) and its IPU# 0..3.
struct IpuRef {
  std::string agent_id;
  uint32_t ipu = 0;
  friend bool operator<(const IpuRef& a, const IpuRef& b) {
    return std::tie(a.agent_id, a.ipu) < std::tie(b.agent_id, b.ipu);
  }
  friend bool operator==(const IpuRef& a, const IpuRef& b) {
    return a.agent_id == b.agent_id && a.ipu == b.ipu;
  }
};

// One IPU of a partition: where it sits in the cluster (wire PartitionIpu
// fields) and which physical IPU that is.
struct PartitionIpu {
  uint32_t ild = 0;          // ipulink_domain_topology_id
  uint32_t ild_routing = 0;  // ipulink_domain_routing_id: segment index in the partition
  uint32_t topology_id = 0;  // position in the ILD ladder, 4 * machine + slot
  uint32_t routing_id = 0;   // position inside the partition's segment
  IpuRef ipu;
};

struct Agent {
  std::string id;
  std::string host;
  uint32_t port = 0;
  MachineType machine_type = MachineType::kM2000;
};

struct Cluster {
  std::string id;
  std::vector<std::string> agent_ids;  // ordered: the ladder, machine by machine
  uint32_t num_ilds = 1;
  IldTopology topology = IldTopology::kTorus;
  ClusterTopology cluster_topology = ClusterTopology::kLooped;
};

struct Allocation {
  std::string id;
  std::string cluster_id;
  std::vector<std::string> agent_ids;
};

// What a client asks for (PartitionRequirements plus create options), with
// zero/undefined meaning "choose for me".
struct PartitionRequest {
  std::string id;
  uint32_t size = 0;
  std::string cluster_id;     // deprecated selector
  std::string allocation_id;  // empty: any allocation the caller may use
  RoutingType routing = RoutingType::kUndefined;
  uint32_t num_ilds = 0;
  GwRoutingType gw_routing = GwRoutingType::kUndefined;
  SyncType sync_type = SyncType::kUndefined;
  uint32_t num_gcds = 0;
  uint32_t num_replicas = 0;
  bool reconfigurable = false;
  // Explicit placement: (ild, topology_id) pairs; requires cluster_id.
  std::vector<PartitionIpu> ipus;
  bool disable_auto_reset = false;
  bool relocatable = false;
};

struct Partition {
  std::string id;
  std::string cluster_id;
  std::string allocation_id;
  std::string owner;  // user id that created it ("" when not authenticated)

  RoutingType routing = RoutingType::kUndefined;
  GwRoutingType gw_routing = GwRoutingType::kUndefined;
  SyncType sync_type = SyncType::kUndefined;
  uint32_t num_gcds = 1;
  uint32_t num_ilds = 1;  // num_ipulink_segments
  uint32_t num_replicas = 1;
  bool reconfigurable = false;
  bool disable_auto_reset = false;
  bool relocatable = false;
  std::vector<PartitionIpu> ipus;  // ordered by (ild_routing, routing_id)

  ReadyState ready_state = ReadyState::kPending;
  OperationState operation_state = OperationState::kCreating;
  std::vector<std::string> errors;
  // Bumped on every (re)configuration; agents refuse older generations.
  uint64_t generation = 0;
  uint32_t max_auto_reset_retries = 3;
  uint32_t auto_reset_retry_count = 0;
  int64_t last_auto_reset_unix_ms = 0;  // 0: never
  int64_t created_unix_ms = 0;
  int64_t updated_unix_ms = 0;

  uint32_t size() const { return static_cast<uint32_t>(ipus.size()); }
};

}  // namespace vipu::fabric

#endif  // VIPU_FABRIC_TYPES_H_
