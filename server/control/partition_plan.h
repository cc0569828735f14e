// What control tells each machine of a partition when it drives the agents,
// made from what placed the partition (its cluster's links) and the
// registry's addresses, and what the machines' results mean for the
// partition. Pure functions, no store access.
#ifndef VIPU_SERVER_CONTROL_PARTITION_PLAN_H_
#define VIPU_SERVER_CONTROL_PARTITION_PLAN_H_

#include <cstdint>
#include <string>
#include <vector>

#include "fabric/types.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links.h"

namespace vipu::server {

// The plan of an operation on `partition` at its generation: each of its
// machines, in the order it lists their IPUs, with those IPUs and the
// address the registry has for it now (one lookup per machine; not
// connected when it is not registered). With `links` (the partition's
// cluster, as placement saw it), each machine is also told the link ports
// the partition owns on it (fabric::PartitionPorts); without, no ports are
// claimed and the agents check no link ownership. Every connected machine
// with a serving port is told as a member to all of them.
PartitionPlan PlanPartition(const fabric::Partition& partition, const AgentRegistry& registry,
                            const ClusterLinks* links);

// The plan of releasing `partition_id` at `generation` on `agent_id` alone
// (a machine a move left, or one reconciliation finds holding what the
// database does not place there).
PartitionPlan PlanOneMachine(const std::string& agent_id, const std::string& partition_id,
                             uint64_t generation, const AgentRegistry& registry);

// The part of `plan` for `agent_id` alone (members and ports as planned);
// no machine when the partition has none on it.
PartitionPlan OnlyMachine(const PartitionPlan& plan, const std::string& agent_id);

// The machines of `plan` that answered a reset with NOT_FOUND: they lost
// the partition (an agent restart) and are configured afresh at the same
// generation. `results` are the driver's for `plan`.
PartitionPlan MachinesThatLostIt(const PartitionPlan& plan, const AgentDriver::Results& results);

// The partition errors of `results` (the driver's for `plan`), each naming
// its machine: first the machines that were not connected, then those that
// failed, in the plan's order. Results whose status is NOT_FOUND are left
// out when `lost_counts` is false (a reset that configures them afresh
// reports those instead). Empty when every machine succeeded.
std::vector<std::string> ErrorsOf(const PartitionPlan& plan, const AgentDriver::Results& results,
                                  bool lost_counts = true);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_PARTITION_PLAN_H_
