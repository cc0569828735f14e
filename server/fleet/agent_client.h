// AgentClient: every call vipu-server makes to an IPU-Machine agent, in plain
// C++ types. GrpcAgentClient (server/fleet/grpc_agent_client.h) is the one
// implementation that reaches real agents; tests substitute a fake.
#ifndef VIPU_SERVER_FLEET_AGENT_CLIENT_H_
#define VIPU_SERVER_FLEET_AGENT_CLIENT_H_

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fabric/fault_request.h"
#include "fabric/held_partition.h"
#include "fabric/link_topology.h"
#include "fabric/types.h"

namespace vipu::server {

// Where an agent serves: its id (every request names it, and in secure mode
// the agent's certificate must) and its host:port.
struct AgentAddress {
  std::string agent_id;
  std::string host;
  uint32_t port = 0;
};

// A partition as one agent knows it: its id and the generation the call is
// for (agents refuse older generations than what they hold).
struct AgentPartitionRef {
  std::string partition_id;
  uint64_t generation = 0;
};

// Another machine of the partition, for the data plane's checks.
struct AgentPartitionMember {
  std::string agent_id;
  std::string host;
  uint32_t port = 0;
};

// ConfigurePartition: the partition's share of one machine.
struct AgentPartitionConfig {
  AgentPartitionRef partition;
  std::vector<uint32_t> ipus;  // IPU# on this machine
  fabric::RoutingType routing = fabric::RoutingType::kUndefined;
  fabric::GwRoutingType gw_routing = fabric::GwRoutingType::kUndefined;
  fabric::SyncType sync_type = fabric::SyncType::kUndefined;
  uint32_t partition_size = 0;
  uint32_t num_ilds = 0;
  std::vector<uint32_t> link_ports;  // ports of this machine whose links the partition owns
  std::vector<AgentPartitionMember> members;
};

// One port of a machine and what it is cabled to (SetTopology).
struct AgentLinkPort {
  uint32_t port = 0;
  fabric::LinkKind kind = fabric::LinkKind::kUndefined;
  std::string name;
  uint32_t local_ipu = 0;
  std::string peer_agent_id;
  uint32_t peer_port = 0;
  bool internal = false;  // both ends on this machine
};

// SetTopology: the machine's place in its cluster and its ports.
struct AgentTopology {
  std::string cluster_id;
  uint32_t ild = 0;
  uint32_t num_ilds = 0;
  uint32_t machine_index = 0;  // position in the ILD's ladder
  uint32_t machines_per_ild = 0;
  bool torus = false;
  std::vector<AgentLinkPort> ports;
};

// GetInfo: what the machine is and what it holds.
struct AgentInfo {
  std::string machine_type;                                  // "m2000" or "bow"
  std::vector<std::pair<std::string, std::string>> details;  // name, value; in order
  uint32_t ipuof_port = 0;
  uint32_t rdma_port = 0;  // 0: not reported
  std::vector<fabric::HeldPartition> held;
};

enum class AgentLinkTest { kCabling = 1, kSync = 2, kTraining = 3, kTraffic = 4, kGw = 5 };

struct AgentLinkHealth {
  uint32_t port = 0;
  std::string name;
  fabric::LinkKind kind = fabric::LinkKind::kUndefined;
  bool trained = false;
  uint64_t error_count = 0;
  std::string peer_agent_id;  // the peer this port discovered
  uint32_t peer_port = 0;
};

struct AgentIpuHealth {
  uint32_t index = 0;
  bool healthy = false;
  std::string error;  // empty when healthy
};

// TestLinks: the ports the test looks at and the machine's IPUs.
struct AgentLinkTestResult {
  std::vector<AgentLinkHealth> links;
  std::vector<AgentIpuHealth> ipus;
};

// RunWorkload: a model preset and its batching; zero, empty or unset means
// the preset's value (model/workload.h).
struct AgentWorkload {
  std::string model;
  uint32_t micro_batch = 0;
  uint32_t grad_accum = 0;
  uint32_t device_iterations = 0;
  uint32_t replicas = 0;
  uint32_t ipus_per_replica = 0;
  uint32_t seq_len = 0;
  std::vector<uint32_t> layers_per_ipu;
  std::string optimizer;
  std::optional<bool> optimizer_state_offchip;
  std::optional<bool> replicated_tensor_sharding;
  std::optional<bool> recompute;
  double packing = 0;
  double host_loader_samples_per_s = 0;
};

struct AgentWorkloadRun {
  AgentPartitionRef partition;  // generation 0: the generation held
  AgentWorkload workload;
  uint32_t steps = 0;
};

struct AgentWorkloadResult {
  std::vector<double> step_time_s;
  double samples_per_sec = 0;
  uint64_t generation = 0;
  std::vector<std::string> agent_ids;  // machines that ran it
  fabric::RoutingType routing = fabric::RoutingType::kUndefined;
  fabric::SyncType sync_type = fabric::SyncType::kUndefined;
  fabric::GwRoutingType gw_routing = fabric::GwRoutingType::kUndefined;
};

// The calls to agents. Every call names the agent's address; resolving an
// agent id to its address (the registry) is the caller's business.
//
// Every call is asynchronous: it returns at once and runs `done` exactly
// once, with the outcome, on any thread (possibly the caller's, before the
// call returns; usually a transport thread). `done` must not block for long
// and must not wait for another agent call to complete. Callers fan calls out
// over many agents and wait for the callbacks themselves; the *Sync wrappers
// wait for one call. A failed call reports the agent's status (the agent's
// code and message) or the transport's (UNAVAILABLE, DEADLINE_EXCEEDED when
// the agent did not answer within the deadline).
//
// Thread-safe: calls may be made from any thread at any time. An
// implementation must outlive every call made to it, until its callback ran.
class AgentClient {
 public:
  using Done = std::function<void(absl::Status)>;
  template <typename T>
  using DoneWith = std::function<void(absl::StatusOr<T>)>;

  virtual ~AgentClient() = default;

  // How long each call may take, unless a call takes its own deadline.
  virtual absl::Duration deadline() const = 0;

  // Configures, resets or releases the partition's IPUs on the machine.
  // Reset of a partition the machine does not hold: NOT_FOUND.
  virtual void Configure(const AgentAddress& agent, const AgentPartitionConfig& config,
                         Done done) = 0;
  virtual void Reset(const AgentAddress& agent, const AgentPartitionRef& partition, Done done) = 0;
  virtual void Release(const AgentAddress& agent, const AgentPartitionRef& partition,
                       Done done) = 0;
  // Tells the machine its place in the cluster; `deadline` replaces
  // deadline() (topology pushes have their own).
  virtual void SetTopology(const AgentAddress& agent, const AgentTopology& topology,
                           absl::Duration deadline, Done done) = 0;
  virtual void GetInfo(const AgentAddress& agent, DoneWith<AgentInfo> done) = 0;
  // The agent's description of what it did ("agent ag3: IPU 2 error").
  virtual void InjectFault(const AgentAddress& agent, const fabric::FaultRequest& fault,
                           DoneWith<std::string> done) = 0;
  virtual void TestLinks(const AgentAddress& agent, AgentLinkTest test,
                         DoneWith<AgentLinkTestResult> done) = 0;
  virtual void RunWorkload(const AgentAddress& agent, const AgentWorkloadRun& run,
                           DoneWith<AgentWorkloadResult> done) = 0;
  // The machine checks every other machine of the partition.
  virtual void CheckPartition(const AgentAddress& agent, const AgentPartitionRef& partition,
                              Done done) = 0;

  // The calls above, waiting for the outcome. Must not be called from a
  // callback.
  absl::Status ReleaseSync(const AgentAddress& agent, const AgentPartitionRef& partition);
  absl::Status SetTopologySync(const AgentAddress& agent, const AgentTopology& topology,
                               absl::Duration deadline);
  absl::StatusOr<AgentInfo> GetInfoSync(const AgentAddress& agent);
  absl::StatusOr<std::string> InjectFaultSync(const AgentAddress& agent,
                                              const fabric::FaultRequest& fault);
  absl::StatusOr<AgentLinkTestResult> TestLinksSync(const AgentAddress& agent, AgentLinkTest test);
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_AGENT_CLIENT_H_
