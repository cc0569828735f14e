// FaultInjector::Inject: checks a fault request against the database and forwards it.
#include "server/fault_injector.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "server/cluster_links_loader.h"
#include "server/grpc_status.h"
#include "server/topology_push.h"
#include "spdlog/spdlog.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::server {

absl::StatusOr<std::string> FaultInjector::Inject(const fabric::FaultRequest& request) {
  if (absl::Status s = fabric::ValidateFaultRequest(request); !s.ok()) return s;
  std::string cluster_id;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto agent = txn.GetAgent(request.agent_id);
    if (!agent.ok()) {
      if (absl::IsNotFound(agent.status())) {
        return absl::NotFoundError(
            absl::StrCat("agent_id: agent '", request.agent_id, "' not found"));
      }
      return agent.status();
    }
    auto cluster = txn.ClusterOfAgent(request.agent_id);
    if (!cluster.ok()) return cluster.status();
    cluster_id = *cluster;
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (request.kind == fabric::FaultKind::kLinkDown) {
    if (cluster_id.empty()) {
      return absl::FailedPreconditionError(absl::StrCat("link: agent '", request.agent_id,
                                                        "' is in no cluster, so it has no links"));
    }
    auto loaded = LoadClusterLinks(cluster_links_, store_, cluster_id);
    if (!loaded.ok()) return loaded.status();
    const ClusterLinks* links = loaded->get();
    if (links->topology.Find(request.agent_id, *request.link) == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("link: agent '", request.agent_id, "' has no link on port ", *request.link,
                       " (", fabric::PortName(*request.link), ") in cluster '", cluster_id, "'"));
    }
    // The agent names the link from its topology: make sure it has it.
    if (absl::Status t =
            EnsureTopology(driver_, registry_, *links, request.agent_id, driver_->deadline());
        !t.ok()) {
      return t;
    }
  }
  auto stub = driver_->Stub(request.agent_id);
  if (!stub) {
    return absl::UnavailableError(
        absl::StrCat("agent_id: agent '", request.agent_id, "' is not connected"));
  }
  vipuagent::InjectFaultRequest wire;
  wire.set_agent_id(request.agent_id);
  wire.set_kind(static_cast<vipuagent::FaultKind>(request.kind));  // numbers equal
  if (request.ipu) wire.set_ipu(*request.ipu);
  if (request.link) wire.set_link(*request.link);
  wire.set_duration_ms(request.duration_ms);
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + driver_->deadline()));
  vipuagent::InjectFaultReply reply;
  grpc::Status status = stub->InjectFault(&context, wire, &reply);
  if (!status.ok()) {
    if (status.error_code() == grpc::StatusCode::INVALID_ARGUMENT ||
        status.error_code() == grpc::StatusCode::FAILED_PRECONDITION) {
      return FromGrpc(status);
    }
    return absl::UnavailableError(
        absl::StrCat("agent_id: agent '", request.agent_id,
                     "' did not take the fault: ", status.error_message()));
  }
  spdlog::warn("fault injected by an administrator: {}", reply.description());
  return reply.description();
}

}  // namespace vipu::server
