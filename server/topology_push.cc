#include "server/topology_push.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::server {

absl::Status EnsureTopology(AgentDriver* driver, AgentRegistry* registry, const ClusterLinks& links,
                            const std::string& agent_id, absl::Duration deadline) {
  std::optional<LiveAgent> live = registry->Get(agent_id);
  if (!live) return absl::UnavailableError(absl::StrCat("agent ", agent_id, ": not connected"));
  vipuagent::SetTopologyRequest request = TopologyRequest(links, agent_id);
  const std::string fingerprint = TopologyFingerprint(request);
  if (live->topology_sent == fingerprint) return absl::OkStatus();
  auto stub = driver->Stub(agent_id);
  if (!stub) return absl::UnavailableError(absl::StrCat("agent ", agent_id, ": not connected"));
  grpc::ClientContext context;
  context.set_deadline(absl::ToChronoTime(absl::Now() + deadline));
  vipuagent::SetTopologyReply reply;
  grpc::Status s = stub->SetTopology(&context, request, &reply);
  if (!s.ok()) {
    return absl::UnavailableError(
        absl::StrCat("agent ", agent_id, ": SetTopology failed: ", s.error_message()));
  }
  registry->MarkTopologySent(agent_id, fingerprint);
  spdlog::info("agent {} told its place in cluster {} ({} ports)", agent_id, request.cluster_id(),
               request.ports_size());
  return absl::OkStatus();
}

}  // namespace vipu::server
