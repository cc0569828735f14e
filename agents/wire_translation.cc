// Agent API messages to and from the types of simulated_machine.h.
#include "agents/wire_translation.h"

#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "fabric/enum_names.h"

namespace vipu::agents {

vipuagent::Machine ToProto(const SimulatedMachine& machine) {
  vipuagent::Machine out;
  out.set_agent_id(machine.agent_id());
  out.set_machine_type(fabric::CliName(machine.machine_type()));
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
  out.set_rdma_port(machine.rdma_port());
  return out;
}

void AppendHeld(const std::vector<fabric::HeldPartition>& held,
                google::protobuf::RepeatedPtrField<vipuagent::HeldPartition>* out) {
  for (const fabric::HeldPartition& h : held) {
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
  config.num_ilds = request.num_ilds();
  config.link_ports.assign(request.link_ports().begin(), request.link_ports().end());
  for (const vipuagent::PartitionMember& m : request.members()) {
    config.members.push_back({m.agent_id(), m.host(), m.port()});
  }
  return config;
}

absl::StatusOr<MachineTopology> FromProto(const vipuagent::SetTopologyRequest& request) {
  MachineTopology t;
  t.cluster_id = request.cluster_id();
  t.ild = request.ild();
  t.num_ilds = request.num_ilds();
  t.machine_index = request.machine_index();
  t.machines_per_ild = request.machines_per_ild();
  t.torus = request.torus();
  for (const vipuagent::LinkPort& p : request.ports()) {
    if (!vipuagent::LinkKind_IsValid(p.kind()) || p.kind() == vipuagent::LINK_KIND_UNDEFINED) {
      return absl::InvalidArgumentError(
          absl::StrCat("ports.kind: port ", p.port(), " has unknown link kind ", p.kind()));
    }
    PortInfo info;
    info.port = p.port();
    info.kind = static_cast<fabric::LinkKind>(p.kind());  // numbers equal
    info.name = p.name();
    info.local_ipu = p.local_ipu();
    info.peer_agent_id = p.peer_agent_id();
    info.peer_port = p.peer_port();
    info.internal = p.internal();
    t.ports.push_back(std::move(info));
  }
  return t;
}

WorkloadRequest FromProto(const vipuagent::WorkloadSpec& spec) {
  WorkloadRequest w;
  w.model = spec.model();
  w.micro_batch = spec.micro_batch();
  w.grad_accum = spec.grad_accum();
  w.device_iterations = spec.device_iterations();
  w.replicas = spec.replicas();
  w.ipus_per_replica = spec.ipus_per_replica();
  w.seq_len = spec.seq_len();
  w.layers_per_ipu.assign(spec.layers_per_ipu().begin(), spec.layers_per_ipu().end());
  w.optimizer = spec.optimizer();
  if (spec.has_optimizer_state_offchip())
    w.optimizer_state_offchip = spec.optimizer_state_offchip();
  if (spec.has_replicated_tensor_sharding()) {
    w.replicated_tensor_sharding = spec.replicated_tensor_sharding();
  }
  if (spec.has_recompute()) w.recompute = spec.recompute();
  w.packing = spec.packing();
  w.host_loader_samples_per_s = spec.host_loader_samples_per_s();
  for (const vipuagent::TracedLayer& l : spec.layers()) {
    model::TracedLayer layer;
    layer.name = l.name();
    for (const vipuagent::TracedProduct& p : l.products()) {
      layer.products.push_back({p.m(), p.k(), p.n(), p.count() == 0 ? 1.0 : p.count()});
    }
    layer.elementwise_bytes = l.elementwise_bytes();
    layer.ops = l.ops();
    layer.params = l.params();
    layer.param_tensors = l.param_tensors();
    layer.output_bytes = l.output_bytes();
    w.layers.push_back(std::move(layer));
  }
  w.input_bytes_per_sample = spec.input_bytes_per_sample();
  w.network_name = spec.network_name();
  w.inference = spec.inference();
  return w;
}

void ToProto(const IpuHealth& health, vipuagent::IpuHealth* out) {
  out->set_index(health.index);
  out->set_healthy(health.healthy);
  out->set_error(health.error);
}

void ToProto(const PortHealth& health, vipuagent::LinkHealth* out) {
  out->set_port(health.info.port);
  out->set_name(health.info.name);
  out->set_kind(static_cast<vipuagent::LinkKind>(health.info.kind));
  out->set_state(health.trained ? vipuagent::LINK_STATE_TRAINED : vipuagent::LINK_STATE_DOWN);
  out->set_error_count(health.error_count);
  out->set_peer_agent_id(health.info.peer_agent_id);
  out->set_peer_port(health.info.peer_port);
}

void AppendHealth(const SimulatedMachine& machine, vipuagent::HeartbeatRequest* out) {
  for (const IpuHealth& h : machine.IpuHealthReport()) ToProto(h, out->add_ipu_health());
  for (const PortHealth& h : machine.PortHealthReport()) ToProto(h, out->add_link_health());
}

}  // namespace vipu::agents
