// FaultInjector::Inject: checks a fault request against the database and forwards it.
#include "server/fleet/fault_injector.h"

#include "absl/strings/str_cat.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/cluster_links_loader.h"
#include "server/fleet/topology_push.h"
#include "spdlog/spdlog.h"

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
            EnsureTopology(agents_, registry_, *links, request.agent_id, agents_->deadline());
        !t.ok()) {
      return t;
    }
  }
  std::optional<AgentAddress> address = AgentAddressOf(*registry_, request.agent_id);
  if (!address) {
    return absl::UnavailableError(
        absl::StrCat("agent_id: agent '", request.agent_id, "' is not connected"));
  }
  absl::StatusOr<std::string> description = agents_->InjectFaultSync(*address, request);
  if (!description.ok()) {
    if (absl::IsInvalidArgument(description.status()) ||
        absl::IsFailedPrecondition(description.status())) {
      return description.status();
    }
    return absl::UnavailableError(
        absl::StrCat("agent_id: agent '", request.agent_id,
                     "' did not take the fault: ", description.status().message()));
  }
  spdlog::warn("fault injected by an administrator: {}", *description);
  return description;
}

}  // namespace vipu::server
