// Drives the agents of a partition through an AgentClient: configure, reset
// and release its IPUs on every machine it spans, in parallel, with the
// client's deadline.
#ifndef VIPU_SERVER_FLEET_AGENT_DRIVER_H_
#define VIPU_SERVER_FLEET_AGENT_DRIVER_H_

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "server/fleet/agent_client.h"
#include "server/fleet/agent_registry.h"

namespace vipu::server {

// Where the registry has `agent_id` now; nullopt when it is not registered.
std::optional<AgentAddress> AgentAddressOf(const AgentRegistry& registry,
                                           const std::string& agent_id);

// "agent <id>: <message>", the form partition errors name a machine's
// failure in: the message as it is when the agent already begins it with
// "agent <id>: ", and "call failed (<code in words>)" for an empty one.
std::string DescribeAgentError(const std::string& agent_id, const absl::Status& status);

// Does not own `registry` or `client`, which must outlive it. Thread-safe
// once set_link_ports has been called (or never is).
class AgentDriver {
 public:
  AgentDriver(const AgentRegistry* registry, AgentClient* client)
      : registry_(registry), client_(client) {}

  enum class Op { kConfigure, kReset, kRelease };

  // Applies `op` for the partition at `generation` on every machine holding
  // its IPUs, waiting for all of them. Returns one message per machine that
  // failed, naming the machine; empty when all succeeded. kReset falls back
  // to kConfigure on a machine that no longer holds the partition (it lost
  // it in a restart).
  std::vector<std::string> Apply(Op op, const fabric::Partition& partition, uint64_t generation);
  // Apply without waiting: `done` gets what Apply would return, exactly
  // once, on the thread that completes the last machine's call (the calling
  // thread when no call could be started). The partition is copied.
  using ApplyDone = std::function<void(std::vector<std::string> errors)>;
  void ApplyAsync(Op op, const fabric::Partition& partition, uint64_t generation, ApplyDone done);

  // Owned link ports per machine of a partition (fabric::PartitionPorts),
  // sent with ConfigurePartition together with every member's address.
  using PortsFn = std::function<absl::StatusOr<std::map<std::string, std::vector<uint32_t>>>(
      const fabric::Partition&)>;
  // Unset: no ports are claimed (agents then check no link ownership).
  void set_link_ports(PortsFn fn) { link_ports_ = std::move(fn); }

  // Release of a partition that `agent_id` holds but the database does not
  // want there (reconciliation). Returns the failure as Apply does.
  std::vector<std::string> ReleaseOn(const std::string& agent_id, const std::string& partition_id,
                                     uint64_t generation);

  // The client the driver calls agents through.
  AgentClient* client() const { return client_; }

 private:
  // One machine's part of an operation.
  struct MachineCall {
    AgentAddress address;  // agent_id always; host and port once connected
    std::vector<uint32_t> ipus;
    absl::Status status;
  };
  // What every machine is told on configure besides its IPUs.
  struct ConfigPlan {
    std::map<std::string, std::vector<uint32_t>> ports;  // by agent id
    std::vector<AgentPartitionMember> members;
  };

  // The partition's IPUs grouped by machine, in the partition's order.
  static std::vector<MachineCall> GroupByMachine(const fabric::Partition& partition);
  // The machines the registry knows, with their addresses; a "not
  // connected" error for each of the others.
  std::vector<MachineCall*> Connected(std::vector<MachineCall>* calls,
                                      std::vector<std::string>* errors) const;
  ConfigPlan PlanConfig(const fabric::Partition& partition,
                        const std::vector<MachineCall>& calls) const;
  static AgentPartitionConfig ConfigFor(const fabric::Partition& partition, uint64_t generation,
                                        const MachineCall& call, const ConfigPlan& plan);
  // One Apply in flight: what its callbacks share.
  struct Operation;
  // Starts `op` on each of `calls` in parallel; `then` runs once all
  // completed, each with its status.
  void StartAll(const std::shared_ptr<Operation>& operation, Op op,
                const std::vector<MachineCall*>& calls, std::function<void()> then);
  // The machines' answers are in: reconfigure those that lost a partition
  // being reset, then report.
  void Conclude(const std::shared_ptr<Operation>& operation);

  const AgentRegistry* registry_;
  AgentClient* client_;
  PortsFn link_ports_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_AGENT_DRIVER_H_
