// Translation between the agent API's wire messages (vipu_agent.proto) and
// the plain types of simulated_machine.h.
#ifndef VIPU_AGENTS_WIRE_TRANSLATION_H_
#define VIPU_AGENTS_WIRE_TRANSLATION_H_

#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "agents/simulated_machine.h"
#include "agents/workload_runner.h"
#include "vipu_agent.pb.h"

namespace vipu::agents {

// The machine as it registers and answers GetInfo (ipuof_port included).
vipuagent::Machine ToProto(const SimulatedMachine& machine);
void AppendHeld(const std::vector<fabric::HeldPartition>& held,
                google::protobuf::RepeatedPtrField<vipuagent::HeldPartition>* out);

// INVALID_ARGUMENT naming the field when an enum value is not one we know.
absl::StatusOr<PartitionConfig> FromProto(const vipuagent::ConfigurePartitionRequest& request);

// The machine's topology. INVALID_ARGUMENT for an unknown link kind; the rest is checked by
// ValidateTopology.
absl::StatusOr<MachineTopology> FromProto(const vipuagent::SetTopologyRequest& request);
WorkloadRequest FromProto(const vipuagent::WorkloadSpec& spec);
void ToProto(const IpuHealth& health, vipuagent::IpuHealth* out);
void ToProto(const PortHealth& health, vipuagent::LinkHealth* out);
// The machine's IPU and port health, as heartbeats carry it.
void AppendHealth(const SimulatedMachine& machine, vipuagent::HeartbeatRequest* out);

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_WIRE_TRANSLATION_H_
