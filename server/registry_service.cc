#include "server/registry_service.h"

#include "absl/strings/str_cat.h"
#include "fabric/enum_names.h"
#include "fabric/link_topology.h"
#include "fabric/validation.h"
#include "server/grpc_status.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

grpc::Status RegistryService::Register(grpc::ServerContext*,
                                       const vipuagent::RegisterRequest* request,
                                       vipuagent::RegisterReply* reply) {
  const vipuagent::Machine& machine = request->machine();
  auto machine_type = fabric::ParseMachineType(machine.machine_type());
  if (!machine_type.ok()) {
    return ToGrpc(absl::InvalidArgumentError(
        absl::StrCat("machine.machine_type: ", machine_type.status().message())));
  }
  if (machine.ipus_size() > static_cast<int>(fabric::kIpusPerMachine)) {
    return ToGrpc(absl::InvalidArgumentError(absl::StrCat("machine.ipus: a machine has at most ",
                                                          fabric::kIpusPerMachine, " IPUs, got ",
                                                          machine.ipus_size())));
  }
  fabric::Agent agent;
  agent.id = request->agent_id();
  agent.host = request->host();
  agent.port = request->port();
  agent.machine_type = *machine_type;
  if (absl::Status s = inventory_->RecordRegistration(agent, auto_add_agents_); !s.ok()) {
    spdlog::warn("agent {} at {}:{} refused: {}", agent.id, agent.host, agent.port, s.ToString());
    return ToGrpc(s);
  }

  LiveAgent live;
  live.id = agent.id;
  live.host = agent.host;
  live.port = agent.port;
  live.ipuof_port = machine.ipuof_port();
  live.machine_type = agent.machine_type;
  for (const auto& d : machine.details()) live.details.emplace_back(d.name(), d.value());
  live.ipus.resize(machine.ipus_size());
  for (const auto& ipu : machine.ipus()) {
    if (ipu.index() >= live.ipus.size()) continue;
    for (const auto& a : ipu.attributes()) live.ipus[ipu.index()].emplace_back(a.name(), a.value());
  }
  registry_->Register(std::move(live), absl::Now());
  spdlog::info("agent {} registered from {}:{} holding {} partitions", agent.id, agent.host,
               agent.port, request->held_size());

  std::vector<HeldPartition> held;
  for (const auto& h : request->held()) held.push_back({h.partition_id(), h.generation()});
  controller_->ReconcileAgent(agent.id, std::move(held));
  reply->set_heartbeat_interval_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(registry_->heartbeat_interval())));
  return grpc::Status::OK;
}

grpc::Status RegistryService::Heartbeat(grpc::ServerContext*,
                                        const vipuagent::HeartbeatRequest* request,
                                        vipuagent::HeartbeatReply* reply) {
  AgentHealth health;
  for (const vipuagent::IpuHealth& ipu : request->ipu_health()) {
    if (ipu.healthy()) continue;
    health.ipu_errors[ipu.index()] = ipu.error().empty() ? "error" : ipu.error();
  }
  for (const vipuagent::LinkHealth& link : request->link_health()) {
    if (link.state() != vipuagent::LINK_STATE_DOWN) continue;
    health.links_down[link.port()] = absl::StrCat(
        fabric::LinkKindName(static_cast<fabric::LinkKind>(link.kind())), " ", link.name());
  }
  if (!registry_->Heartbeat(request->agent_id(), absl::Now(), std::move(health))) {
    reply->set_reregister(true);
  }
  return grpc::Status::OK;
}

}  // namespace vipu::server
