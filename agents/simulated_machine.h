// The state of one simulated IPU-Machine (4 IPUs): its identity, the
// attributes it reports, and the partitions it holds. No gRPC here: the
// service (agent_service.h) translates wire messages to these types.
//
// Held configuration is derived from the server's database and tagged with
// the partition's generation (DESIGN.md invariant 3): a request carrying an
// older generation than the one held is refused, so a delayed or replayed
// request from before a reconfiguration cannot undo it.
#ifndef VIPU_AGENTS_SIMULATED_MACHINE_H_
#define VIPU_AGENTS_SIMULATED_MACHINE_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
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

// What the server asks a machine to configure for one partition.
struct PartitionConfig {
  std::string partition_id;
  uint64_t generation = 0;
  std::vector<uint32_t> ipus;  // IPU# on this machine
  fabric::RoutingType routing = fabric::RoutingType::kUndefined;
  fabric::GwRoutingType gw_routing = fabric::GwRoutingType::kUndefined;
  fabric::SyncType sync_type = fabric::SyncType::kUndefined;
  uint32_t partition_size = 0;  // whole partition, all machines; 0: unknown
  friend bool operator==(const PartitionConfig& a, const PartitionConfig& b);
};

// A partition's share of this machine as reported in GetInfo / heartbeats.
struct HeldPartition {
  std::string partition_id;
  uint64_t generation = 0;
  std::vector<uint32_t> ipus;  // sorted
  friend bool operator==(const HeldPartition& a, const HeldPartition& b) {
    return a.partition_id == b.partition_id && a.generation == b.generation && a.ipus == b.ipus;
  }
};

// "m2000" / "bow" <-> MachineType. INVALID_ARGUMENT names the field.
absl::StatusOr<fabric::MachineType> ParseMachineType(std::string_view name);
std::string MachineTypeName(fabric::MachineType type);

// Stable across processes, builds and platforms (unlike std::hash), so a
// machine reports the same serial numbers after every restart.
uint64_t StableHash(std::string_view text);

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
  const std::string& board_serial_number() const { return board_serial_; }

  // The data-plane (IPUoF) port; known only once the machine's server listens.
  void set_ipuof_port(uint32_t port) { ipuof_port_.store(port); }
  uint32_t ipuof_port() const { return ipuof_port_.load(); }

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
  std::vector<HeldPartition> Held() const;
  // NOT_FOUND when the partition is not held.
  absl::StatusOr<PartitionConfig> Config(std::string_view partition_id) const;
  // Number of successful resets of a partition since it was configured.
  uint32_t ResetCount(std::string_view partition_id) const;

 private:
  struct Holding {
    PartitionConfig config;
    uint32_t resets = 0;
  };

  const std::string agent_id_;
  const fabric::MachineType type_;
  std::string board_serial_;
  std::vector<Attribute> details_;
  std::vector<IpuInfo> ipus_;
  std::atomic<uint32_t> ipuof_port_{0};

  mutable std::mutex mu_;
  std::map<std::string, Holding, std::less<>> held_;  // guarded by mu_
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_SIMULATED_MACHINE_H_
