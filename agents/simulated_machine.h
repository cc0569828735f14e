// The state of one simulated IPU-Machine (4 IPUs): its identity, the attributes
// it reports, and the partitions it holds. No gRPC here: the service
// (agent_service.h) translates wire messages to these types.
//
// Held configuration is derived from the server's database and tagged with the
// partition's generation (docs/architecture.md, invariant 3): a request
// carrying an older generation than the one held is refused, so a delayed or
// replayed request from before a reconfiguration cannot undo it.
#ifndef VIPU_AGENTS_SIMULATED_MACHINE_H_
#define VIPU_AGENTS_SIMULATED_MACHINE_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "fabric/held_partition.h"
#include "fabric/link_topology.h"
#include "fabric/types.h"

namespace vipu::agents {

// One name/value pair, in the order a listing shows it.
struct Attribute {
  std::string name;
  std::string value;
  friend bool operator==(const Attribute& a, const Attribute& b) {
    return a.name == b.name && a.value == b.value;
  }
};

struct IpuInfo {
  uint32_t index = 0;                 // IPU# on the machine, 0..3
  std::vector<Attribute> attributes;  // gc-info style keys, sorted by name
};

// Another machine of a partition and where its agent API listens.
struct PartitionMember {
  std::string agent_id;
  std::string host;
  uint32_t port = 0;
  friend bool operator==(const PartitionMember& a, const PartitionMember& b) {
    return a.agent_id == b.agent_id && a.host == b.host && a.port == b.port;
  }
};

// What the server asks a machine to configure for one partition.
struct PartitionConfig {
  std::string partition_id;
  uint64_t generation = 0;
  std::vector<uint32_t> ipus;  // IPU# on this machine
  fabric::RoutingType routing = fabric::RoutingType::kUndefined;
  fabric::GwRoutingType gw_routing = fabric::GwRoutingType::kUndefined;
  fabric::SyncType sync_type = fabric::SyncType::kUndefined;
  uint32_t partition_size = 0;  // whole partition, all machines; 0: unknown
  uint32_t num_ilds = 0;        // ILDs it spans; 0: as few as its size needs
  // Ports of this machine whose links the partition owns (fabric/link_topology.h).
  std::vector<uint32_t> link_ports;
  // Every machine of the partition (this one included). Addresses may change
  // when an agent restarts, so they are not part of the configuration's
  // identity (operator== ignores them; a re-push refreshes them).
  std::vector<PartitionMember> members;
  friend bool operator==(const PartitionConfig& a, const PartitionConfig& b);
};

// One port of the machine and what it is cabled to (from the server's
// SetTopology).
struct PortInfo {
  uint32_t port = 0;
  fabric::LinkKind kind = fabric::LinkKind::kUndefined;
  std::string name;  // "ag3.ipu1-ag4.ipu0"
  uint32_t local_ipu = 0;
  std::string peer_agent_id;
  uint32_t peer_port = 0;
  bool internal = false;
};

// The machine's place in its cluster.
struct MachineTopology {
  std::string cluster_id;
  uint32_t ild = 0;
  uint32_t num_ilds = 1;
  uint32_t machine_index = 0;
  uint32_t machines_per_ild = 1;
  bool torus = false;
  std::vector<PortInfo> ports;  // sorted by port
};

struct IpuHealth {
  uint32_t index = 0;
  bool healthy = true;
  std::string error;  // empty when healthy
};

struct PortHealth {
  PortInfo info;
  bool trained = true;
  uint64_t error_count = 0;
};

// INVALID_ARGUMENT naming the field: ILD/machine positions out of range,
// ports >= fabric::kPortsPerMachine or repeated, undefined kinds, empty
// names, IPU-Link ends on IPU >= 4, external links without a peer.
absl::Status ValidateTopology(const MachineTopology& topology);

// Stable across processes, builds and platforms (unlike std::hash), so a
// machine reports the same serial numbers after every restart.
uint64_t StableHash(std::string_view text);

// Owns all of its state. Thread-safe: the gRPC threads and the registration
// thread call it at once; the held partitions, topology and faults are guarded
// by mu_, the port and the crash flag are atomics.
class SimulatedMachine {
 public:
  // `agent_id` is assumed valid (checked by the caller's flag parsing).
  SimulatedMachine(std::string agent_id, fabric::MachineType type);

  SimulatedMachine(const SimulatedMachine&) = delete;
  SimulatedMachine& operator=(const SimulatedMachine&) = delete;

  const std::string& agent_id() const { return agent_id_; }
  fabric::MachineType machine_type() const { return type_; }
  // Rows of `vipu-admin get agent`, in display order (Platform ... Num of IPUs).
  const std::vector<Attribute>& details() const { return details_; }
  // Always kIpusPerMachine entries, index 0..3.
  const std::vector<IpuInfo>& ipus() const { return ipus_; }
  // The machine's board serial number, e.g. "8203921-0007".
  const std::string& BoardSerialNumberForTesting() const { return board_serial_; }

  // The data-plane (IPUoF) port; known only once the machine's server listens.
  void set_ipuof_port(uint32_t port) { ipuof_port_.store(port); }
  uint32_t ipuof_port() const { return ipuof_port_.load(); }
  // The RDMA port the machine's IPUoF configs name; known once the agent
  // holds it (agents/rdma_ports.h).
  void set_rdma_port(uint32_t port) { rdma_port_.store(port); }
  uint32_t rdma_port() const { return rdma_port_.load(); }

  // Holds `config`. INVALID_ARGUMENT for an empty partition id, no IPUs, an
  // IPU index >= 4, a repeated IPU, or partition_size smaller than the IPUs
  // given here. FAILED_PRECONDITION when the partition is held with a newer
  // generation, when the same generation is held with a different
  // configuration, or when an IPU is held by another partition. The same
  // generation and configuration again is a no-op (OK); a newer generation
  // replaces the held configuration (its IPUs may change).
  absl::Status Configure(const PartitionConfig& config);

  // Resets the partition's IPUs. NOT_FOUND when not held; FAILED_PRECONDITION
  // when `generation` is older than held; a newer generation is adopted.
  absl::Status Reset(std::string_view partition_id, uint64_t generation);

  // Drops the partition. OK when not held (idempotent); FAILED_PRECONDITION
  // when held with a newer generation than `generation`.
  absl::Status Release(std::string_view partition_id, uint64_t generation);

  // Sorted by partition id.
  std::vector<fabric::HeldPartition> Held() const;
  // NOT_FOUND when the partition is not held.
  absl::StatusOr<PartitionConfig> Config(std::string_view partition_id) const;
  // Number of successful resets of a partition since it was configured.
  uint32_t ResetCountForTesting(std::string_view partition_id) const;

  // ---- Topology and health ----

  // Replaces the machine's topology. INVALID_ARGUMENT as ValidateTopology.
  absl::Status SetTopology(MachineTopology topology);
  std::optional<MachineTopology> topology() const;

  // Faults. Each returns the description the server logs, e.g.
  // "agent ag3: IPU 2 error" or "agent ag3: IPU-Link ag3.ipu1-ag4.ipu3 down".
  // INVALID_ARGUMENT for an IPU >= 4, a port with no link (or no topology yet).
  absl::StatusOr<std::string> InjectIpuError(uint32_t ipu);
  absl::StatusOr<std::string> InjectLinkDown(uint32_t port);
  // Stops answering and heartbeating for `duration` (zero: until cleared).
  std::string Hang(std::chrono::milliseconds duration);
  // Stops serving for good (the process or this machine's server goes away).
  std::string MarkCrashed();
  // Clears IPU errors, downed links and a hang (not a crash).
  std::string ClearFaults();
  // Forgets every partition held, telling no one: only the heartbeats
  // (Held) show it. Not undone by ClearFaults; the server pushes them again.
  std::string LosePartitions();

  bool hung() const;
  bool crashed() const;
  // Neither answers nor heartbeats.
  bool silenced() const { return hung() || crashed(); }
  // Waits while hung, at most until `deadline`. True when no longer hung.
  bool AwaitNotHung(std::chrono::steady_clock::time_point deadline) const ABSL_LOCKS_EXCLUDED(mu_);

  std::vector<IpuHealth> IpuHealthReport() const;
  // One entry per port of the topology (trained unless downed).
  std::vector<PortHealth> PortHealthReport() const;

  // OK when the partition is held (at `generation`, 0: any) and its IPUs and
  // owned links are healthy; otherwise NOT_FOUND / FAILED_PRECONDITION whose
  // message names the machine and the IPU or link, as the server reports it.
  absl::Status CheckPartition(std::string_view partition_id, uint64_t generation) const;

 private:
  struct Holding {
    PartitionConfig config;
    uint32_t resets = 0;
  };

  // FAILED_PRECONDITION when a partition other than `partition_id` holds
  // one of the IPUs `seen` or owns one of the link `ports`: a partition's
  // traffic never crosses another's IPUs or links.
  absl::Status CheckNotHeldByOthers(const std::string& partition_id, const std::set<uint32_t>& seen,
                                    const std::set<uint32_t>& ports) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string agent_id_;
  const fabric::MachineType type_;
  std::string board_serial_;
  std::vector<Attribute> details_;
  std::vector<IpuInfo> ipus_;
  std::atomic<uint32_t> ipuof_port_{0};
  std::atomic<uint32_t> rdma_port_{0};

  // The first fault among the IPUs and ports of `config`; empty when none.
  std::string FaultOf(const PartitionConfig& config) const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool HungLocked(std::chrono::steady_clock::time_point now) const
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // What ends AwaitNotHung's wait before the hang's end: ClearFaults.
  bool HangCleared() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !hang_; }

  mutable vipu::Mutex mu_;
  std::map<std::string, Holding, std::less<>> held_ ABSL_GUARDED_BY(mu_);
  std::optional<MachineTopology> topology_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, std::string> ipu_errors_ ABSL_GUARDED_BY(mu_);
  std::map<uint32_t, uint64_t> port_errors_ ABSL_GUARDED_BY(mu_);  // error counters
  std::map<uint32_t, bool> ports_down_ ABSL_GUARDED_BY(mu_);
  bool hang_ ABSL_GUARDED_BY(mu_) = false;
  std::chrono::steady_clock::time_point hang_until_ ABSL_GUARDED_BY(mu_);
  std::atomic<bool> crashed_{false};
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_SIMULATED_MACHINE_H_
