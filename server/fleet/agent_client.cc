// AgentClient's waiting wrappers: one asynchronous call and a wait for its callback.
#include "server/fleet/agent_client.h"

#include <utility>

#include "base/outcome.h"

namespace vipu::server {

absl::Status AgentClient::ReleaseSync(const AgentAddress& agent,
                                      const AgentPartitionRef& partition) {
  return vipu::Await<absl::Status>([&](Done done) { Release(agent, partition, std::move(done)); });
}

absl::Status AgentClient::SetTopologySync(const AgentAddress& agent, const AgentTopology& topology,
                                          absl::Duration deadline) {
  return vipu::Await<absl::Status>(
      [&](Done done) { SetTopology(agent, topology, deadline, std::move(done)); });
}

absl::StatusOr<AgentInfo> AgentClient::GetInfoSync(const AgentAddress& agent) {
  return vipu::Await<absl::StatusOr<AgentInfo>>(
      [&](DoneWith<AgentInfo> done) { GetInfo(agent, std::move(done)); });
}

absl::StatusOr<std::string> AgentClient::InjectFaultSync(const AgentAddress& agent,
                                                         const fabric::FaultRequest& fault) {
  return vipu::Await<absl::StatusOr<std::string>>(
      [&](DoneWith<std::string> done) { InjectFault(agent, fault, std::move(done)); });
}

absl::StatusOr<AgentLinkTestResult> AgentClient::TestLinksSync(const AgentAddress& agent,
                                                               AgentLinkTest test) {
  return vipu::Await<absl::StatusOr<AgentLinkTestResult>>(
      [&](DoneWith<AgentLinkTestResult> done) { TestLinks(agent, test, std::move(done)); });
}

}  // namespace vipu::server
