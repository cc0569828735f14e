// GrpcAgentClient: AgentClient over the agent API (vipuagent.Agent), the one
// place where vipu-server holds channels and stubs to its agents.
#ifndef VIPU_SERVER_FLEET_GRPC_AGENT_CLIENT_H_
#define VIPU_SERVER_FLEET_GRPC_AGENT_CLIENT_H_

#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "grpcpp/channel.h"
#include "grpcpp/security/credentials.h"
#include "server/fleet/agent_client.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::server {

class CallTracker;

// Calls agents over gRPC with a deadline per call, translating between
// AgentClient's types and the agent API's messages. Agents at one address
// (a process serving many machines on a shared port) share one channel:
// 16,384 machines in 16 processes are 16 channels, not 16,384. A channel
// goes when no agent was last seen at its address.
//
// Owns its channels and the state of its calls in flight.
// Thread-safe. Must outlive the callbacks
// of the calls made to it: destroying it cancels the calls still in flight
// and waits until gRPC has freed the state of every call, so that no gRPC
// thread is still tearing a call down once it is gone.
class GrpcAgentClient : public AgentClient {
 public:
  // Calls time out after `deadline`. Secure mode: channels to agents use
  // `credentials` (mutual TLS with the server's certificate) and verify the
  // agent's certificate against the agent id
  // (GRPC_SSL_TARGET_NAME_OVERRIDE_ARG), not its host. Null: plaintext.
  GrpcAgentClient(absl::Duration deadline, std::shared_ptr<grpc::ChannelCredentials> credentials);
  ~GrpcAgentClient() override;

  // The channel calls to `agent` use, created when needed; records that
  // the agent is at that address now (tests look at the sharing).
  std::shared_ptr<grpc::Channel> ChannelAtForTesting(const AgentAddress& agent)
      ABSL_LOCKS_EXCLUDED(mu_);

  absl::Duration deadline() const override { return deadline_; }
  void Configure(const AgentAddress& agent, const AgentPartitionConfig& config, Done done) override;
  void Reset(const AgentAddress& agent, const AgentPartitionRef& partition, Done done) override;
  void Release(const AgentAddress& agent, const AgentPartitionRef& partition, Done done) override;
  void SetTopology(const AgentAddress& agent, const AgentTopology& topology,
                   absl::Duration deadline, Done done) override;
  void GetInfo(const AgentAddress& agent, DoneWith<AgentInfo> done) override;
  void InjectFault(const AgentAddress& agent, const fabric::FaultRequest& fault,
                   DoneWith<std::string> done) override;
  void TestLinks(const AgentAddress& agent, AgentLinkTest test,
                 DoneWith<AgentLinkTestResult> done) override;
  void RunWorkload(const AgentAddress& agent, const AgentWorkloadRun& run,
                   DoneWith<AgentWorkloadResult> done) override;
  void CheckPartition(const AgentAddress& agent, const AgentPartitionRef& partition,
                      Done done) override;

 private:
  struct Channel {
    std::shared_ptr<grpc::Channel> channel;
    std::shared_ptr<vipuagent::Agent::Stub> stub;
    size_t agents = 0;  // agents last seen at this address; the channel goes at 0
  };
  Channel& ChannelFor(const AgentAddress& agent) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  std::shared_ptr<vipuagent::Agent::Stub> StubFor(const AgentAddress& agent)
      ABSL_LOCKS_EXCLUDED(mu_);

  const absl::Duration deadline_;
  std::unique_ptr<CallTracker> calls_;  // before the channels: it goes after them
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  vipu::Mutex mu_;
  std::map<std::string, std::string> address_of_ ABSL_GUARDED_BY(mu_);  // agent id -> host:port
  std::map<std::string, Channel> channels_ ABSL_GUARDED_BY(mu_);        // host:port -> channel
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_GRPC_AGENT_CLIENT_H_
