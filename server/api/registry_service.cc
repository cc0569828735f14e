// vipuagent.AgentRegistry: validates and records registrations and heartbeats, single or batched.
#include "server/api/registry_service.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"
#include "fabric/held_partition.h"
#include "fabric/link_topology.h"
#include "fabric/validation.h"
#include "spdlog/spdlog.h"
#include "tls/peer_identity.h"
#include "wire/metadata_keys.h"
#include "wire/status.h"

namespace vipu::server {
namespace {

// The inventory's view and the registry's view of one registering machine.
struct Registration {
  fabric::Agent agent;
  LiveAgent live;
  std::vector<fabric::HeldPartition> held;
};

// `field` prefixes the messages ("" for a single Register, "agents[3]." in a batch).
absl::StatusOr<Registration> ToRegistration(const vipuagent::RegisterRequest& request,
                                            const std::string& field) {
  const vipuagent::Machine& machine = request.machine();
  auto machine_type = fabric::ParseMachineType(machine.machine_type());
  if (!machine_type.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, "machine.machine_type: ", machine_type.status().message()));
  }
  if (machine.ipus_size() > static_cast<int>(fabric::kIpusPerMachine)) {
    return absl::InvalidArgumentError(absl::StrCat(field, "machine.ipus: a machine has at most ",
                                                   fabric::kIpusPerMachine, " IPUs, got ",
                                                   machine.ipus_size()));
  }
  Registration r;
  r.agent.id = request.agent_id();
  r.agent.host = request.host();
  r.agent.port = request.port();
  r.agent.machine_type = *machine_type;
  r.live.id = r.agent.id;
  r.live.host = r.agent.host;
  r.live.port = r.agent.port;
  r.live.ipuof_port = machine.ipuof_port();
  r.live.rdma_port = machine.rdma_port();
  r.live.machine_type = r.agent.machine_type;
  // Gathered as pairs, then packed once (server/fleet/attributes.h).
  std::vector<std::pair<std::string, std::string>> pairs;
  pairs.reserve(static_cast<size_t>(machine.details_size()));
  for (const auto& d : machine.details()) pairs.emplace_back(d.name(), d.value());
  r.live.details = Attributes(pairs);
  r.live.ipus.resize(machine.ipus_size());
  for (const auto& ipu : machine.ipus()) {
    if (ipu.index() >= r.live.ipus.size()) continue;
    pairs.clear();
    for (const auto& a : ipu.attributes()) pairs.emplace_back(a.name(), a.value());
    r.live.ipus[ipu.index()] = Attributes(pairs);
  }
  for (const auto& h : request.held()) {
    r.held.push_back({h.partition_id(), h.generation(), {h.ipus().begin(), h.ipus().end()}});
  }
  return r;
}

AgentHealth ToHealth(const vipuagent::HeartbeatRequest& request) {
  AgentHealth health;
  health.sequence = request.sequence();
  // Every heartbeat says what the machine holds, an empty list included:
  // the health monitor compares it with the state.
  auto held = std::make_shared<std::map<std::string, uint64_t>>();
  for (const vipuagent::HeldPartition& h : request.held()) {
    (*held)[h.partition_id()] = h.generation();
  }
  health.held = std::move(held);
  for (const vipuagent::IpuHealth& ipu : request.ipu_health()) {
    if (ipu.healthy()) continue;
    health.ipu_errors[ipu.index()] = ipu.error().empty() ? "error" : ipu.error();
  }
  for (const vipuagent::LinkHealth& link : request.link_health()) {
    if (link.state() != vipuagent::LINK_STATE_DOWN) continue;
    health.links_down[link.port()] = absl::StrCat(
        fabric::LinkKindName(static_cast<fabric::LinkKind>(link.kind())), " ", link.name());
  }
  return health;
}

// Size bounds and agent ids of a batch: valid, each once.
template <typename Entries>
absl::Status ValidateBatchIds(const Entries& entries) {
  if (entries.empty()) return absl::InvalidArgumentError("agents: must name at least one agent");
  if (static_cast<size_t>(entries.size()) > kMaxAgentsPerBatch) {
    return absl::InvalidArgumentError(
        absl::StrCat("agents: at most ", kMaxAgentsPerBatch, " per batch, got ", entries.size()));
  }
  std::set<std::string> seen;
  for (int i = 0; i < entries.size(); ++i) {
    const std::string& id = entries[i].agent_id();
    RETURN_IF_ERROR(fabric::ValidateId(absl::StrCat("agents[", i, "].agent_id"), id));
    if (!seen.insert(id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("agents[", i, "].agent_id: agent '", id, "' is listed twice"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

grpc::Status RegistryService::CheckCaller(const grpc::ServerContext* context,
                                          const std::vector<std::string>& agent_ids) const {
  if (!require_certificates_) return grpc::Status::OK;
  std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
  std::vector<std::string> names = tls::PeerNames(auth.get());
  std::string peer = tls::DescribePeer(auth.get());
  // A standby relays an agent's call with the names it verified; only a
  // holder of the server's own certificate may speak for an agent.
  if (tls::PeerHasName(auth.get(), tls::kServerCertificateUri)) {
    const auto& metadata = context->client_metadata();
    if (auto it = metadata.find(wire::kForwardedPeerMetadata); it != metadata.end()) {
      peer = std::string(it->second.data(), it->second.size());
      names = absl::StrSplit(peer, ',', absl::SkipEmpty());
    }
  }
  const std::set<std::string> named(names.begin(), names.end());
  for (const std::string& agent_id : agent_ids) {
    if (named.count(agent_id) > 0) continue;
    spdlog::warn("refused a call for agent {} from {} (certificate {})", agent_id, context->peer(),
                 peer);
    return grpc::Status(grpc::StatusCode::PERMISSION_DENIED,
                        absl::StrCat("agent certificate is for ", peer, ", not ", agent_id));
  }
  return grpc::Status::OK;
}

grpc::Status RegistryService::Register(grpc::ServerContext* context,
                                       const vipuagent::RegisterRequest* request,
                                       vipuagent::RegisterReply* reply) {
  if (grpc::Status s = CheckCaller(context, {request->agent_id()}); !s.ok()) return s;
  GRPC_ASSIGN_OR_RETURN(Registration r, ToRegistration(*request, ""));
  const fabric::Agent& agent = r.agent;
  if (absl::Status s = inventory_->RecordRegistration(agent, auto_add_agents_); !s.ok()) {
    spdlog::warn("agent {} at {}:{} refused: {}", agent.id, agent.host, agent.port, s.ToString());
    return wire::ToGrpc(s);
  }
  registry_->Register(std::move(r.live), absl::Now());
  spdlog::info("agent {} registered from {}:{} holding {} partitions", agent.id, agent.host,
               agent.port, request->held_size());
  controller_->ReconcileAgent(agent.id, std::move(r.held));
  reply->set_heartbeat_interval_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(registry_->heartbeat_interval())));
  return grpc::Status::OK;
}

grpc::Status RegistryService::Heartbeat(grpc::ServerContext* context,
                                        const vipuagent::HeartbeatRequest* request,
                                        vipuagent::HeartbeatReply* reply) {
  if (grpc::Status s = CheckCaller(context, {request->agent_id()}); !s.ok()) return s;
  // A member that may no longer lead must not keep the agents: refused, the
  // agent moves on to another member.
  if (absl::Status s = inventory_->Answerable(); !s.ok()) return wire::ToGrpc(s);
  if (!registry_->Heartbeat(request->agent_id(), absl::Now(), ToHealth(*request))) {
    reply->set_reregister(true);
  }
  return grpc::Status::OK;
}

grpc::Status RegistryService::RegisterBatch(grpc::ServerContext* context,
                                            const vipuagent::RegisterBatchRequest* request,
                                            vipuagent::RegisterBatchReply* reply) {
  GRPC_RETURN_IF_ERROR(ValidateBatchIds(request->agents()));
  std::vector<std::string> ids;
  for (const vipuagent::RegisterRequest& agent : request->agents()) ids.push_back(agent.agent_id());
  if (grpc::Status s = CheckCaller(context, ids); !s.ok()) return s;
  std::vector<Registration> batch;
  batch.reserve(request->agents_size());
  std::vector<fabric::Agent> agents;
  agents.reserve(request->agents_size());
  for (int i = 0; i < request->agents_size(); ++i) {
    GRPC_ASSIGN_OR_RETURN(Registration r,
                          ToRegistration(request->agents(i), absl::StrCat("agents[", i, "].")));
    agents.push_back(r.agent);
    batch.push_back(std::move(r));
  }
  absl::StatusOr<std::vector<absl::Status>> recorded =
      inventory_->RecordRegistrations(agents, auto_add_agents_);
  if (!recorded.ok()) {
    spdlog::error("batch of {} registrations (first {}) failed: {}", agents.size(), agents[0].id,
                  recorded.status().ToString());
    return wire::ToGrpc(recorded.status());
  }
  std::vector<LiveAgent> live;
  std::vector<size_t> taken;
  for (size_t i = 0; i < batch.size(); ++i) {
    const absl::Status& s = (*recorded)[i];
    if (!s.ok()) {
      spdlog::warn("agent {} at {}:{} refused: {}", agents[i].id, agents[i].host, agents[i].port,
                   s.ToString());
      vipuagent::AgentRefusal* refusal = reply->add_refused();
      refusal->set_agent_id(agents[i].id);
      refusal->set_code(wire::CodeNumber(s));
      refusal->set_message(std::string(s.message()));
      continue;
    }
    live.push_back(std::move(batch[i].live));
    taken.push_back(i);
  }
  registry_->RegisterMany(std::move(live), absl::Now());
  for (size_t i : taken) {
    spdlog::debug("agent {} registered from {}:{} holding {} partitions", agents[i].id,
                  agents[i].host, agents[i].port, batch[i].held.size());
    controller_->ReconcileAgent(agents[i].id, std::move(batch[i].held));
  }
  spdlog::info("{} agents registered in one batch (first {} from {}:{}), {} refused", taken.size(),
               agents[0].id, agents[0].host, agents[0].port, reply->refused_size());
  reply->set_heartbeat_interval_ms(
      static_cast<uint32_t>(absl::ToInt64Milliseconds(registry_->heartbeat_interval())));
  return grpc::Status::OK;
}

grpc::Status RegistryService::HeartbeatBatch(grpc::ServerContext* context,
                                             const vipuagent::HeartbeatBatchRequest* request,
                                             vipuagent::HeartbeatBatchReply* reply) {
  GRPC_RETURN_IF_ERROR(ValidateBatchIds(request->agents()));
  std::vector<std::string> ids;
  for (const vipuagent::HeartbeatRequest& beat : request->agents()) ids.push_back(beat.agent_id());
  if (grpc::Status s = CheckCaller(context, ids); !s.ok()) return s;
  if (absl::Status s = inventory_->Answerable(); !s.ok()) return wire::ToGrpc(s);
  std::vector<std::pair<std::string, AgentHealth>> beats;
  beats.reserve(request->agents_size());
  for (const vipuagent::HeartbeatRequest& beat : request->agents()) {
    beats.emplace_back(beat.agent_id(), ToHealth(beat));
  }
  for (std::string& id : registry_->HeartbeatMany(std::move(beats), absl::Now())) {
    reply->add_reregister(std::move(id));
  }
  return grpc::Status::OK;
}

}  // namespace vipu::server
