#include "agents/wire_translation.h"

#include <string>

#include "absl/strings/str_cat.h"

namespace vipu::agents {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  // absl and gRPC share the canonical code numbers.
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()), std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), status.error_message());
}

vipuagent::Machine ToProto(const SimulatedMachine& machine) {
  vipuagent::Machine out;
  out.set_agent_id(machine.agent_id());
  out.set_machine_type(MachineTypeName(machine.machine_type()));
  for (const Attribute& detail : machine.details()) {
    vipuagent::Attribute* a = out.add_details();
    a->set_name(detail.name);
    a->set_value(detail.value);
  }
  for (const IpuInfo& ipu : machine.ipus()) {
    vipuagent::Ipu* wire = out.add_ipus();
    wire->set_index(ipu.index);
    for (const Attribute& attribute : ipu.attributes) {
      vipuagent::Attribute* a = wire->add_attributes();
      a->set_name(attribute.name);
      a->set_value(attribute.value);
    }
  }
  out.set_ipuof_port(machine.ipuof_port());
  return out;
}

void AppendHeld(const std::vector<HeldPartition>& held,
                google::protobuf::RepeatedPtrField<vipuagent::HeldPartition>* out) {
  for (const HeldPartition& h : held) {
    vipuagent::HeldPartition* wire = out->Add();
    wire->set_partition_id(h.partition_id);
    wire->set_generation(h.generation);
    for (uint32_t ipu : h.ipus) wire->add_ipus(ipu);
  }
}

absl::StatusOr<PartitionConfig> FromProto(const vipuagent::ConfigurePartitionRequest& request) {
  if (!virmgrpc::IpuLinkRoutingType_IsValid(request.ipulink_routing_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("ipulink_routing_type: unknown value ", request.ipulink_routing_type()));
  }
  if (!virmgrpc::GatewayRoutingType_IsValid(request.gw_routing_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("gw_routing_type: unknown value ", request.gw_routing_type()));
  }
  if (!virmgrpc::SyncType_IsValid(request.sync_type())) {
    return absl::InvalidArgumentError(
        absl::StrCat("sync_type: unknown value ", request.sync_type()));
  }
  PartitionConfig config;
  config.partition_id = request.partition_id();
  config.generation = request.generation();
  config.ipus.assign(request.ipus().begin(), request.ipus().end());
  // Enum numbers equal the wire numbers (fabric/types.h).
  config.routing = static_cast<fabric::RoutingType>(request.ipulink_routing_type());
  config.gw_routing = static_cast<fabric::GwRoutingType>(request.gw_routing_type());
  config.sync_type = static_cast<fabric::SyncType>(request.sync_type());
  config.partition_size = request.partition_size();
  return config;
}

}  // namespace vipu::agents
