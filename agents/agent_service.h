// The vipuagent.Agent service of one simulated machine: thin, it checks the
// request is meant for this machine, translates, and calls SimulatedMachine.
//
// A hung machine answers nothing but InjectFault (which stands for the
// machine's BMC, so that a hang can be cleared); a crashed one refuses
// everything with UNAVAILABLE until its server is gone.
#ifndef VIPU_AGENTS_AGENT_SERVICE_H_
#define VIPU_AGENTS_AGENT_SERVICE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "agents/simulated_machine.h"
#include "base/mutex.h"
#include "grpcpp/security/credentials.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::agents {

class AgentService final : public vipuagent::Agent::Service {
 public:
  // `machine` must outlive the service. `on_crash` runs (once, after the
  // reply is on its way) when a crash is injected: the process decides how
  // the machine stops serving.
  explicit AgentService(SimulatedMachine* machine, std::function<void()> on_crash = nullptr)
      : machine_(machine), on_crash_(std::move(on_crash)) {}

  // Secure mode. Control calls (configure, reset, release, topology, faults,
  // link tests: everything that changes the machine or is the server's to
  // ask) are then accepted only from a peer whose certificate is the
  // server's (tls::kServerCertificateUri), others get PERMISSION_DENIED;
  // data-plane calls (GetInfo, RunWorkload, CheckPartition) from any
  // certificate of the pod CA, which the listener already checked. Other
  // machines are dialed with `peer_credentials`, verifying their
  // certificate against their agent id. Set before the service serves.
  void set_tls(std::shared_ptr<grpc::ChannelCredentials> peer_credentials) {
    peer_credentials_ = std::move(peer_credentials);
  }

  grpc::Status GetInfo(grpc::ServerContext* context, const vipuagent::GetInfoRequest* request,
                       vipuagent::GetInfoReply* reply) override;
  grpc::Status ConfigurePartition(grpc::ServerContext* context,
                                  const vipuagent::ConfigurePartitionRequest* request,
                                  vipuagent::ConfigurePartitionReply* reply) override;
  grpc::Status ResetPartition(grpc::ServerContext* context,
                              const vipuagent::ResetPartitionRequest* request,
                              vipuagent::ResetPartitionReply* reply) override;
  grpc::Status ReleasePartition(grpc::ServerContext* context,
                                const vipuagent::ReleasePartitionRequest* request,
                                vipuagent::ReleasePartitionReply* reply) override;
  grpc::Status SetTopology(grpc::ServerContext* context,
                           const vipuagent::SetTopologyRequest* request,
                           vipuagent::SetTopologyReply* reply) override;
  grpc::Status InjectFault(grpc::ServerContext* context,
                           const vipuagent::InjectFaultRequest* request,
                           vipuagent::InjectFaultReply* reply) override;
  grpc::Status TestLinks(grpc::ServerContext* context, const vipuagent::TestLinksRequest* request,
                         vipuagent::TestLinksReply* reply) override;
  // The data plane: served by the machine holding the GCD's first IPU. It
  // checks its own share, asks every other machine of the partition
  // (CheckPartition) and answers with the model's step times.
  grpc::Status RunWorkload(grpc::ServerContext* context,
                           const vipuagent::RunWorkloadRequest* request,
                           vipuagent::RunWorkloadReply* reply) override;
  grpc::Status CheckPartition(grpc::ServerContext* context,
                              const vipuagent::CheckPartitionRequest* request,
                              vipuagent::CheckPartitionReply* reply) override;

 private:
  // FAILED_PRECONDITION when `agent_id` is not this machine's: a stale
  // address must not act on the wrong machine.
  grpc::Status CheckAgentId(const std::string& agent_id) const;
  // UNAVAILABLE when crashed; waits while hung, DEADLINE_EXCEEDED when the
  // call's deadline passes first.
  grpc::Status Gate(grpc::ServerContext* context) const;
  // Secure mode: PERMISSION_DENIED unless the peer is vipu-server.
  grpc::Status RequireServer(const grpc::ServerContext* context, const char* call) const;
  std::shared_ptr<vipuagent::Agent::Stub> PeerStub(const PartitionMember& member);

  SimulatedMachine* const machine_;
  const std::function<void()> on_crash_;
  std::shared_ptr<grpc::ChannelCredentials> peer_credentials_;
  vipu::Mutex mu_;
  std::map<std::string, std::shared_ptr<vipuagent::Agent::Stub>> peers_
      ABSL_GUARDED_BY(mu_);  // by host:port
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_AGENT_SERVICE_H_
