// PlanPartition and what the machines' results mean: the agents' half of an operation, planned by
// control.
#include "server/control/partition_plan.h"

#include <map>
#include <optional>
#include <utility>

#include "fabric/link_topology.h"

namespace vipu::server {

PartitionPlan PlanPartition(const fabric::Partition& partition, const AgentRegistry& registry,
                            const ClusterLinks* links) {
  PartitionPlan plan;
  std::map<std::string, size_t> index_of;
  for (const fabric::PartitionIpu& ipu : partition.ipus) {
    auto [it, inserted] = index_of.try_emplace(ipu.ipu.agent_id, plan.machines.size());
    if (inserted) {
      plan.machines.emplace_back();
      plan.machines.back().address.agent_id = ipu.ipu.agent_id;
    }
    plan.machines[it->second].config.ipus.push_back(ipu.ipu.ipu);
  }
  std::vector<AgentPartitionMember> members;
  for (MachinePlan& machine : plan.machines) {
    std::optional<AgentAddress> address = AgentAddressOf(registry, machine.address.agent_id);
    if (!address) continue;
    machine.address = *std::move(address);
    machine.connected = true;
    if (machine.address.port != 0) {
      members.push_back({machine.address.agent_id, machine.address.host, machine.address.port});
    }
  }
  std::map<std::string, std::vector<uint32_t>> ports;
  if (links != nullptr) ports = fabric::PartitionPorts(links->topology, partition);
  for (MachinePlan& machine : plan.machines) {
    AgentPartitionConfig& config = machine.config;
    config.partition = {partition.id, partition.generation};
    config.routing = partition.routing;
    config.gw_routing = partition.gw_routing;
    config.sync_type = partition.sync_type;
    config.partition_size = partition.size();
    config.num_ilds = partition.num_ilds;
    auto owned = ports.find(machine.address.agent_id);
    if (owned != ports.end()) config.link_ports = std::move(owned->second);
    config.members = members;
  }
  return plan;
}

PartitionPlan PlanOneMachine(const std::string& agent_id, const std::string& partition_id,
                             uint64_t generation, const AgentRegistry& registry) {
  MachinePlan machine;
  machine.address.agent_id = agent_id;
  if (std::optional<AgentAddress> address = AgentAddressOf(registry, agent_id)) {
    machine.address = *std::move(address);
    machine.connected = true;
  }
  machine.config.partition = {partition_id, generation};
  PartitionPlan plan;
  plan.machines.push_back(std::move(machine));
  return plan;
}

PartitionPlan OnlyMachine(const PartitionPlan& plan, const std::string& agent_id) {
  PartitionPlan one;
  for (const MachinePlan& machine : plan.machines) {
    if (machine.address.agent_id == agent_id) one.machines.push_back(machine);
  }
  return one;
}

PartitionPlan MachinesThatLostIt(const PartitionPlan& plan, const AgentDriver::Results& results) {
  PartitionPlan lost;
  for (size_t i = 0; i < plan.machines.size() && i < results.size(); ++i) {
    if (plan.machines[i].connected && absl::IsNotFound(results[i].status)) {
      lost.machines.push_back(plan.machines[i]);
    }
  }
  return lost;
}

std::vector<std::string> ErrorsOf(const PartitionPlan& plan, const AgentDriver::Results& results,
                                  bool lost_counts) {
  std::vector<std::string> errors;
  // A machine not connected was never called: named before those that
  // answered, as the driver found them before it called any.
  for (size_t i = 0; i < plan.machines.size() && i < results.size(); ++i) {
    if (!plan.machines[i].connected) errors.push_back(NotConnectedText(results[i].agent_id));
  }
  for (size_t i = 0; i < plan.machines.size() && i < results.size(); ++i) {
    const absl::Status& status = results[i].status;
    if (!plan.machines[i].connected || status.ok()) continue;
    if (!lost_counts && absl::IsNotFound(status)) continue;
    errors.push_back(DescribeAgentError(results[i].agent_id, status));
  }
  return errors;
}

}  // namespace vipu::server
