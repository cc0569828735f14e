// vipuagent.Agent of a process's simulated machines: routes by agent id,
// translates, calls the machine.
#include "agents/agent_service.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "agents/wire_translation.h"
#include "agents/workload_runner.h"
#include "base/host_port.h"
#include "fabric/fault_request.h"
#include "grpcpp/create_channel.h"
#include "grpcpp/security/credentials.h"
#include "grpcpp/support/channel_arguments.h"
#include "spdlog/spdlog.h"
#include "tls/peer_identity.h"
#include "wire/status.h"

namespace vipu::agents {
namespace {

// How long the lead machine waits for each other machine of a partition.
constexpr auto kPeerCheckTimeout = std::chrono::seconds(2);

bool PortInTest(const PortInfo& p, vipuagent::LinkTestKind kind) {
  switch (kind) {
    case vipuagent::LINK_TEST_CABLING:
      return p.kind == fabric::LinkKind::kIpuLink && !p.internal;
    case vipuagent::LINK_TEST_SYNC:
      return p.kind == fabric::LinkKind::kSyncLink;
    case vipuagent::LINK_TEST_TRAINING:
    case vipuagent::LINK_TEST_TRAFFIC:
      return p.kind == fabric::LinkKind::kIpuLink;
    case vipuagent::LINK_TEST_GW:
      return p.kind == fabric::LinkKind::kGwLink;
    default:
      return false;
  }
}

std::vector<SimulatedMachine*> SortedById(std::vector<SimulatedMachine*> machines) {
  std::sort(machines.begin(), machines.end(),
            [](const SimulatedMachine* a, const SimulatedMachine* b) {
              return a->agent_id() < b->agent_id();
            });
  return machines;
}

std::unordered_map<std::string, SimulatedMachine*> IndexById(
    const std::vector<SimulatedMachine*>& machines) {
  std::unordered_map<std::string, SimulatedMachine*> by_id;
  by_id.reserve(machines.size());
  for (SimulatedMachine* m : machines) by_id[m->agent_id()] = m;
  return by_id;
}

// The request's own fields, checked before any machine state is read.
grpc::Status ValidateWorkloadRequest(const vipuagent::RunWorkloadRequest& request) {
  if (request.partition_id().empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "partition_id: must not be empty");
  }
  if (!request.has_workload()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "workload: is required");
  }
  return grpc::Status::OK;
}

PartitionShape ShapeOf(const SimulatedMachine& machine, const PartitionConfig& config) {
  PartitionShape shape;
  shape.machine_type = machine.machine_type();
  shape.size = config.partition_size;
  shape.ilds = config.num_ilds;
  shape.torus = config.routing == fabric::RoutingType::kRingSwnc;
  return shape;
}

// The partition's other machines asked, all at once, whether they hold it
// healthy at this generation: gRPC's callback calls, so a step costs no
// thread per machine. Wait() returns every answer, in the order asked.
class PeerChecks {
 public:
  void Ask(const std::shared_ptr<vipuagent::Agent::Stub>& stub, const PartitionMember& member,
           const PartitionConfig& config) {
    auto call = std::make_unique<Call>();
    call->agent_id = member.agent_id;
    call->request.set_agent_id(member.agent_id);
    call->request.set_partition_id(config.partition_id);
    call->request.set_generation(config.generation);
    call->context.set_deadline(std::chrono::system_clock::now() + kPeerCheckTimeout);
    Call* c = call.get();
    calls_.push_back(std::move(call));
    {
      vipu::MutexLock lock(&mu_);
      ++pending_;
    }
    stub->async()->CheckPartition(&c->context, &c->request, &c->reply,
                                  [this, c](grpc::Status status) {
                                    vipu::MutexLock lock(&mu_);
                                    c->status = std::move(status);
                                    --pending_;
                                  });
  }

  // Every machine's answer, once all have come (or their deadline passed).
  std::vector<std::pair<std::string, grpc::Status>> Wait() {
    {
      vipu::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(
          +[](int* pending) { return *pending == 0; }, &pending_));
    }
    std::vector<std::pair<std::string, grpc::Status>> answers;
    for (const auto& c : calls_) answers.emplace_back(c->agent_id, c->status);
    return answers;
  }

 private:
  struct Call {
    std::string agent_id;
    grpc::ClientContext context;
    vipuagent::CheckPartitionRequest request;
    vipuagent::CheckPartitionReply reply;
    grpc::Status status;
  };

  std::vector<std::unique_ptr<Call>> calls_;
  vipu::Mutex mu_;
  int pending_ ABSL_GUARDED_BY(mu_) = 0;
};

// The peers' answers and this machine's own (`local`, first) in one status:
// FAILED_PRECONDITION, or UNAVAILABLE when a peer did not answer. OK when
// the partition can run.
grpc::Status PartitionFaults(const SimulatedMachine& machine, const PartitionConfig& config,
                             const absl::Status& local,
                             const std::vector<std::pair<std::string, grpc::Status>>& answers) {
  std::vector<std::string> faults;
  bool unreachable = false;
  if (!local.ok()) faults.push_back(std::string(local.message()));
  for (const auto& [agent_id, s] : answers) {
    if (s.ok()) continue;
    const bool fault = s.error_code() == grpc::StatusCode::FAILED_PRECONDITION ||
                       s.error_code() == grpc::StatusCode::NOT_FOUND;
    if (!fault) unreachable = true;
    faults.push_back(
        fault ? s.error_message()
              : absl::StrCat("agent ", agent_id, ": unreachable (",
                             s.error_message().empty() ? "no answer" : s.error_message(), ")"));
  }
  if (faults.empty()) return grpc::Status::OK;
  std::string message =
      absl::StrCat("partition ", config.partition_id, " cannot run: ", absl::StrJoin(faults, "; "));
  spdlog::warn("agent {}: {}", machine.agent_id(), message);
  return grpc::Status(
      unreachable ? grpc::StatusCode::UNAVAILABLE : grpc::StatusCode::FAILED_PRECONDITION, message);
}

void FillWorkloadReply(const SimulatedMachine& machine, const PartitionConfig& config,
                       const WorkloadRun& run, vipuagent::RunWorkloadReply* reply) {
  for (double t : run.step_time_s) reply->add_step_time_s(t);
  reply->set_samples_per_sec(run.samples_per_sec);
  reply->set_ipulink_routing_type(static_cast<virmgrpc::IpuLinkRoutingType>(config.routing));
  reply->set_sync_type(static_cast<virmgrpc::SyncType>(config.sync_type));
  reply->set_gw_routing_type(static_cast<virmgrpc::GatewayRoutingType>(config.gw_routing));
  reply->set_generation(config.generation);
  if (config.members.empty()) {
    reply->add_agent_ids(machine.agent_id());
  } else {
    for (const PartitionMember& m : config.members) reply->add_agent_ids(m.agent_id);
  }
}

}  // namespace

AgentService::AgentService(SimulatedMachine* machine, PeerPolicy peers,
                           std::function<void()> on_crash)
    : AgentService(std::vector<SimulatedMachine*>{machine},
                   /*shared_port=*/false, std::move(peers), std::move(on_crash)) {}

std::unique_ptr<AgentService> AgentService::SharedPort(
    const std::vector<SimulatedMachine*>& machines, PeerPolicy peers) {
  // An injected crash only marks the machine crashed: the port serves on.
  return std::unique_ptr<AgentService>(
      new AgentService(machines, /*shared_port=*/true, std::move(peers), /*on_crash=*/nullptr));
}

AgentService::AgentService(std::vector<SimulatedMachine*> machines, bool shared_port,
                           PeerPolicy peers, std::function<void()> on_crash)
    : shared_port_(shared_port),
      peer_policy_(std::move(peers)),
      machines_(SortedById(std::move(machines))),
      by_id_(IndexById(machines_)),
      on_crash_(std::move(on_crash)) {}

grpc::Status AgentService::Route(const std::string& agent_id, SimulatedMachine** machine) const {
  if (!shared_port_) {
    *machine = machines_.front();
    return grpc::Status::OK;
  }
  if (agent_id.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        "agent_id: must name the machine on a port shared by machines");
  }
  auto it = by_id_.find(agent_id);
  if (it != by_id_.end()) {
    *machine = it->second;
    return grpc::Status::OK;
  }
  spdlog::warn("shared port: refused a request for agent '{}', not served here", agent_id);
  return grpc::Status(
      grpc::StatusCode::FAILED_PRECONDITION,
      absl::StrCat("agent_id: request for agent '", agent_id,
                   "' reached a port that does not serve it (", by_id_.size(), " machines)"));
}

grpc::Status AgentService::RouteDataPlane(const std::string& agent_id,
                                          const std::string& partition_id,
                                          SimulatedMachine** machine) const {
  if (!shared_port_ || !agent_id.empty()) return Route(agent_id, machine);
  if (partition_id.empty()) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "partition_id: must not be empty");
  }
  for (SimulatedMachine* m : machines_) {
    if (!m->Config(partition_id).ok()) continue;
    *machine = m;
    return grpc::Status::OK;
  }
  return grpc::Status(
      grpc::StatusCode::NOT_FOUND,
      absl::StrCat("partition_id: no machine on this port holds partition '", partition_id, "'"));
}

grpc::Status AgentService::CheckAgentId(const SimulatedMachine& machine,
                                        const std::string& agent_id) {
  if (agent_id == machine.agent_id()) return grpc::Status::OK;
  spdlog::warn("agent {}: refused a request for agent '{}'", machine.agent_id(), agent_id);
  return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                      absl::StrCat("agent_id: request for agent '", agent_id, "' reached agent '",
                                   machine.agent_id(), "'"));
}

grpc::Status AgentService::Gate(const SimulatedMachine& machine, grpc::ServerContext* context) {
  if (machine.crashed()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("agent ", machine.agent_id(), ": crashed"));
  }
  if (!machine.hung()) return grpc::Status::OK;
  // Like a hung machine, take the call and never answer it in time: wait in
  // slices so that a cancelled call frees its thread.
  const auto remaining = context->deadline() - std::chrono::system_clock::now();
  const auto deadline =
      remaining > std::chrono::hours(1)
          ? std::chrono::steady_clock::now() + std::chrono::hours(1)
          : std::chrono::steady_clock::now() +
                std::chrono::duration_cast<std::chrono::steady_clock::duration>(remaining);
  while (!context->IsCancelled()) {
    const auto slice =
        std::min(deadline, std::chrono::steady_clock::now() + std::chrono::milliseconds(100));
    if (machine.AwaitNotHung(slice)) return grpc::Status::OK;
    if (std::chrono::steady_clock::now() >= deadline) break;
  }
  return grpc::Status(grpc::StatusCode::DEADLINE_EXCEEDED,
                      absl::StrCat("agent ", machine.agent_id(), ": not answering (hung)"));
}

grpc::Status AgentService::RequireServer(const SimulatedMachine& machine,
                                         const grpc::ServerContext* context,
                                         const char* call) const {
  if (!peer_policy_.secure()) return grpc::Status::OK;
  std::shared_ptr<const grpc::AuthContext> auth = context->auth_context();
  if (tls::PeerHasName(auth.get(), tls::kServerCertificateUri)) return grpc::Status::OK;
  const std::string peer = tls::DescribePeer(auth.get());
  spdlog::warn("agent {}: refused {} from {} (certificate {}): not vipu-server", machine.agent_id(),
               call, context->peer(), peer);
  return grpc::Status(
      grpc::StatusCode::PERMISSION_DENIED,
      absl::StrCat("agent ", machine.agent_id(), ": ", call,
                   " is accepted only from vipu-server's certificate, not from ", peer));
}

grpc::Status AgentService::GetInfo(grpc::ServerContext* context,
                                   const vipuagent::GetInfoRequest* request,
                                   vipuagent::GetInfoReply* reply) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  *reply->mutable_machine() = ToProto(*machine);
  AppendHeld(machine->Held(), reply->mutable_held());
  return grpc::Status::OK;
}

grpc::Status AgentService::ConfigurePartition(grpc::ServerContext* context,
                                              const vipuagent::ConfigurePartitionRequest* request,
                                              vipuagent::ConfigurePartitionReply*) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  if (grpc::Status s = RequireServer(*machine, context, "ConfigurePartition"); !s.ok()) return s;
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  GRPC_ASSIGN_OR_RETURN(PartitionConfig config, FromProto(*request));
  absl::Status status = machine->Configure(config);
  if (!status.ok()) {
    spdlog::warn("agent {}: configure partition {} generation {} refused: {}", machine->agent_id(),
                 request->partition_id(), request->generation(), std::string(status.message()));
  }
  return wire::ToGrpc(status);
}

grpc::Status AgentService::ResetPartition(grpc::ServerContext* context,
                                          const vipuagent::ResetPartitionRequest* request,
                                          vipuagent::ResetPartitionReply*) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  if (grpc::Status s = RequireServer(*machine, context, "ResetPartition"); !s.ok()) return s;
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  absl::Status status = machine->Reset(request->partition_id(), request->generation());
  if (!status.ok()) {
    spdlog::warn("agent {}: reset partition {} generation {} refused: {}", machine->agent_id(),
                 request->partition_id(), request->generation(), std::string(status.message()));
  }
  return wire::ToGrpc(status);
}

grpc::Status AgentService::ReleasePartition(grpc::ServerContext* context,
                                            const vipuagent::ReleasePartitionRequest* request,
                                            vipuagent::ReleasePartitionReply*) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  if (grpc::Status s = RequireServer(*machine, context, "ReleasePartition"); !s.ok()) return s;
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  absl::Status status = machine->Release(request->partition_id(), request->generation());
  // The partition is gone: its IPUs are free for whoever comes next, though
  // an application still holding its attach call has not yet noticed.
  if (status.ok()) attachments_.DetachPartition(machine->agent_id(), request->partition_id());
  if (!status.ok()) {
    spdlog::warn("agent {}: release partition {} generation {} refused: {}", machine->agent_id(),
                 request->partition_id(), request->generation(), std::string(status.message()));
  }
  return wire::ToGrpc(status);
}

grpc::Status AgentService::SetTopology(grpc::ServerContext* context,
                                       const vipuagent::SetTopologyRequest* request,
                                       vipuagent::SetTopologyReply*) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  if (grpc::Status s = RequireServer(*machine, context, "SetTopology"); !s.ok()) return s;
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  GRPC_ASSIGN_OR_RETURN(MachineTopology topology, FromProto(*request));
  return wire::ToGrpc(machine->SetTopology(std::move(topology)));
}

grpc::Status AgentService::InjectFault(grpc::ServerContext* context,
                                       const vipuagent::InjectFaultRequest* request,
                                       vipuagent::InjectFaultReply* reply) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  // No Gate: the BMC answers while the machine hangs.
  if (grpc::Status s = RequireServer(*machine, context, "InjectFault"); !s.ok()) return s;
  if (machine->crashed()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("agent ", machine->agent_id(), ": crashed"));
  }
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  if (!vipuagent::FaultKind_IsValid(request->kind())) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("kind: unknown value ", request->kind()));
  }
  fabric::FaultRequest fault;
  fault.agent_id = request->agent_id();
  fault.kind = static_cast<fabric::FaultKind>(request->kind());  // numbers equal
  if (request->has_ipu()) fault.ipu = request->ipu();
  if (request->has_link()) fault.link = request->link();
  fault.duration_ms = request->duration_ms();
  GRPC_RETURN_IF_ERROR(fabric::ValidateFaultRequest(fault));

  absl::StatusOr<std::string> description;
  switch (fault.kind) {
    case fabric::FaultKind::kIpuError:
      description = machine->InjectIpuError(*fault.ipu);
      break;
    case fabric::FaultKind::kLinkDown:
      description = machine->InjectLinkDown(*fault.link);
      break;
    case fabric::FaultKind::kAgentHang:
      description = machine->Hang(std::chrono::milliseconds(fault.duration_ms));
      break;
    case fabric::FaultKind::kClear:
      description = machine->ClearFaults();
      break;
    case fabric::FaultKind::kPartitionLost:
      description = machine->LosePartitions();
      break;
    case fabric::FaultKind::kAgentCrash:
      description = machine->MarkCrashed();
      if (on_crash_) on_crash_();
      break;
    default:
      break;
  }
  GRPC_RETURN_IF_ERROR(description);
  reply->set_description(*description);
  return grpc::Status::OK;
}

grpc::Status AgentService::TestLinks(grpc::ServerContext* context,
                                     const vipuagent::TestLinksRequest* request,
                                     vipuagent::TestLinksReply* reply) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  if (grpc::Status s = RequireServer(*machine, context, "TestLinks"); !s.ok()) return s;
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  if (!vipuagent::LinkTestKind_IsValid(request->kind()) ||
      request->kind() == vipuagent::LINK_TEST_UNDEFINED) {
    return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT,
                        absl::StrCat("kind: must be a defined link test, got ", request->kind()));
  }
  if (!machine->topology()) {
    return grpc::Status(
        grpc::StatusCode::FAILED_PRECONDITION,
        absl::StrCat("agent ", machine->agent_id(), ": no topology yet (it is not in a cluster)"));
  }
  for (const PortHealth& h : machine->PortHealthReport()) {
    if (PortInTest(h.info, request->kind())) ToProto(h, reply->add_links());
  }
  for (const IpuHealth& h : machine->IpuHealthReport()) ToProto(h, reply->add_ipus());
  return grpc::Status::OK;
}

grpc::Status AgentService::CheckPartition(grpc::ServerContext* context,
                                          const vipuagent::CheckPartitionRequest* request,
                                          vipuagent::CheckPartitionReply*) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = Route(request->agent_id(), &machine); !s.ok()) return s;
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  return wire::ToGrpc(machine->CheckPartition(request->partition_id(), request->generation()));
}

std::shared_ptr<vipuagent::Agent::Stub> AgentService::PeerStub(const PartitionMember& member) {
  const std::string address = HostPort(member.host, member.port);
  vipu::MutexLock lock(&mu_);
  auto& stub = peers_[address];
  if (!stub) {
    if (peer_policy_.secure()) {
      // The other machine proves its agent id (SAN DNS:<agent-id>).
      grpc::ChannelArguments args;
      args.SetSslTargetNameOverride(member.agent_id);
      stub = vipuagent::Agent::NewStub(
          grpc::CreateCustomChannel(address, peer_policy_.credentials(), args));
    } else {
      stub = vipuagent::Agent::NewStub(
          grpc::CreateChannel(address, grpc::InsecureChannelCredentials()));
    }
  }
  return stub;
}

grpc::Status AgentService::RunWorkload(grpc::ServerContext* context,
                                       const vipuagent::RunWorkloadRequest* request,
                                       vipuagent::RunWorkloadReply* reply) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = RouteDataPlane(request->agent_id(), request->partition_id(), &machine);
      !s.ok()) {
    return s;
  }
  if (grpc::Status s = Gate(*machine, context); !s.ok()) return s;
  // Applications know machines by their IPUoF endpoint, not by agent id:
  // an empty id means "this machine".
  if (!request->agent_id().empty()) {
    if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) return s;
  }
  if (grpc::Status s = ValidateWorkloadRequest(*request); !s.ok()) return s;
  GRPC_ASSIGN_OR_RETURN(PartitionConfig config, machine->Config(request->partition_id()));
  if (request->generation() != 0 && request->generation() != config.generation) {
    return grpc::Status(grpc::StatusCode::FAILED_PRECONDITION,
                        absl::StrCat("generation: partition ", request->partition_id(),
                                     " is at generation ", config.generation, " on agent ",
                                     machine->agent_id(), ", got ", request->generation()));
  }
  GRPC_ASSIGN_OR_RETURN(WorkloadRun run, PredictRun(FromProto(request->workload()),
                                                    ShapeOf(*machine, config), request->steps()));

  // Every machine of the partition must hold it healthy at this generation.
  const absl::Status local = machine->CheckPartition(config.partition_id, config.generation);
  PeerChecks checks;
  for (const PartitionMember& member : config.members) {
    if (member.agent_id == machine->agent_id()) continue;
    checks.Ask(PeerStub(member), member, config);
  }
  if (grpc::Status s = PartitionFaults(*machine, config, local, checks.Wait()); !s.ok()) return s;
  FillWorkloadReply(*machine, config, run, reply);
  // A training loop runs a step a call: one line a call would bury the log.
  spdlog::debug("agent {}: ran {} steps of {} on partition {} ({:.6f} s/step)", machine->agent_id(),
                request->steps(), request->workload().model(), config.partition_id,
                run.step_time_s.front());
  return grpc::Status::OK;
}

namespace {

// An Attach call that ends at once with `status`.
class RefusedAttach : public grpc::ServerWriteReactor<vipuagent::AttachReply> {
 public:
  explicit RefusedAttach(grpc::Status status) { Finish(std::move(status)); }
  void OnDone() override { delete this; }
};

// An attachment that holds while its call is open: the first reply says
// it is attached; the call ends when the application cancels it or its
// connection goes (or the agent stops), and then the IPUs are free.
class HeldAttach : public grpc::ServerWriteReactor<vipuagent::AttachReply> {
 public:
  HeldAttach(Attachments* attachments, uint64_t ticket, uint64_t generation)
      : attachments_(attachments), ticket_(ticket) {
    reply_.set_generation(generation);
    StartWrite(&reply_);
  }
  void OnWriteDone(bool ok) override {
    if (!ok) End(grpc::Status(grpc::StatusCode::CANCELLED, "the application went away"));
  }
  void OnCancel() override { End(grpc::Status(grpc::StatusCode::CANCELLED, "detached")); }
  void OnDone() override {
    attachments_->Detach(ticket_);
    delete this;
  }

 private:
  // Finish once, whichever of a failed write and a cancellation comes first.
  void End(grpc::Status status) {
    if (!ended_.exchange(true)) Finish(std::move(status));
  }

  Attachments* const attachments_;
  const uint64_t ticket_;
  vipuagent::AttachReply reply_;
  std::atomic<bool> ended_{false};
};

}  // namespace

grpc::ServerWriteReactor<vipuagent::AttachReply>* AgentService::Attach(
    grpc::CallbackServerContext* /*context*/, const vipuagent::AttachRequest* request) {
  SimulatedMachine* machine = nullptr;
  if (grpc::Status s = RouteDataPlane(request->agent_id(), request->partition_id(), &machine);
      !s.ok()) {
    return new RefusedAttach(s);
  }
  // A machine that is down or hung takes no attachment; the application
  // is told at once rather than left waiting on a callback thread.
  if (machine->silenced()) {
    return new RefusedAttach(grpc::Status(
        grpc::StatusCode::UNAVAILABLE,
        absl::StrCat("agent ", machine->agent_id(), machine->crashed() ? ": crashed" : ": hung")));
  }
  if (!request->agent_id().empty()) {
    if (grpc::Status s = CheckAgentId(*machine, request->agent_id()); !s.ok()) {
      return new RefusedAttach(s);
    }
  }
  absl::StatusOr<PartitionConfig> config = machine->Config(request->partition_id());
  if (!config.ok()) return new RefusedAttach(wire::ToGrpc(config.status()));
  // A GCD's devices are numbered within the partition: none is beyond it.
  for (uint32_t ipu : request->ipus()) {
    if (config->partition_size != 0 && ipu >= config->partition_size) {
      return new RefusedAttach(grpc::Status(
          grpc::StatusCode::INVALID_ARGUMENT,
          absl::StrCat("ipus: IPU ", ipu, " is beyond partition ", request->partition_id(), "'s ",
                       config->partition_size, " IPUs")));
    }
  }
  absl::StatusOr<uint64_t> ticket = attachments_.Attach(
      {machine->agent_id(), request->partition_id(), request->gcd()},
      std::vector<uint32_t>(request->ipus().begin(), request->ipus().end()), request->owner());
  if (!ticket.ok()) return new RefusedAttach(wire::ToGrpc(ticket.status()));
  spdlog::info("agent {}: {} attached to IPUs {} of partition {} GCD {}", machine->agent_id(),
               request->owner().empty() ? "an application" : request->owner(),
               absl::StrJoin(request->ipus(), ","), request->partition_id(), request->gcd());
  return new HeldAttach(&attachments_, *ticket, config->generation);
}

}  // namespace vipu::agents
