// Drives the agents of a partition through an AgentClient: configure, reset
// or release it on every machine of a plan, in parallel, with the client's
// deadline, and answer with each machine's outcome. What each machine is
// told is decided before (control plans it from the placement); what the
// outcomes mean is decided after, by the caller.
#ifndef VIPU_SERVER_FLEET_AGENT_DRIVER_H_
#define VIPU_SERVER_FLEET_AGENT_DRIVER_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
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

// One machine's part of an operation on a partition.
struct MachinePlan {
  // agent_id always; host and port only when `connected`.
  AgentAddress address;
  // Registered when planned: a machine that is not gets no call.
  bool connected = false;
  // What a configure tells it (its IPUs, the link ports it owns, the other
  // members); config.partition is the partition and generation every
  // operation names.
  AgentPartitionConfig config;
};

// What an operation tells each machine of one partition, in the order the
// partition lists its IPUs' machines.
struct PartitionPlan {
  std::vector<MachinePlan> machines;
};

// One machine's outcome: OK, the agent's refusal or the call's failure, or
// NotConnectedError for a machine planned as not connected.
struct MachineResult {
  std::string agent_id;
  absl::Status status;
};

// Does not own `client`, which must outlive it. Thread-safe.
class AgentDriver {
 public:
  explicit AgentDriver(AgentClient* client) : client_(client) {}

  enum class Op { kConfigure, kReset, kRelease };

  using Results = std::vector<MachineResult>;
  using Done = std::function<void(Results results)>;

  // Applies `op` on every machine of `plan` at once. `done` gets one result
  // per machine, in the plan's order, exactly once: on the thread that
  // completes the last machine's call, or the calling thread when no call
  // was started (every machine not connected, or none at all). The plan is
  // shared, not copied: the caller may keep it to read the results by.
  void ApplyAsync(Op op, std::shared_ptr<const PartitionPlan> plan, Done done);
  // ApplyAsync, waiting for the results.
  Results Apply(Op op, std::shared_ptr<const PartitionPlan> plan);

 private:
  // One Apply in flight: what its callbacks share.
  struct Operation;

  AgentClient* const client_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_AGENT_DRIVER_H_
