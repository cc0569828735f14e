// The vipuagent.Agent service of the simulated machines of one process: thin,
// it finds the machine a request is meant for, translates, and calls
// SimulatedMachine. Either one machine on its own port, or every machine of
// the process on one shared port (--shared-port: 16,384 machines cannot each
// have a server and a port on two cores), where each request goes to the
// machine its agent_id names. Every RPC is written once, for whichever
// machine the request reaches.
//
// A hung machine answers nothing but InjectFault (which stands for the
// machine's BMC, so that a hang can be cleared); a crashed one refuses
// everything with UNAVAILABLE until its server is gone.
//
// Borrows its machines, which must outlive it; owns the stubs it dials other
// machines with. Thread safety: the RPCs may run concurrently, as gRPC calls
// them.
#ifndef VIPU_AGENTS_AGENT_SERVICE_H_
#define VIPU_AGENTS_AGENT_SERVICE_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "agents/attachments.h"
#include "agents/peer_policy.h"
#include "agents/simulated_machine.h"
#include "base/mutex.h"
#include "grpcpp/security/credentials.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::agents {

// Attach is a callback method: an attachment holds its call open for as
// long as the application runs, which must not hold a thread.
class AgentService final
    : public vipuagent::Agent::WithCallbackMethod_Attach<vipuagent::Agent::Service> {
 public:
  // One machine on its own port; a request naming another agent id is
  // refused (FAILED_PRECONDITION), so a stale address cannot act on the
  // wrong machine. `machine` must outlive the service. `peers` says who may
  // make the server's calls and how other machines are dialed. `on_crash`
  // runs (once, after the reply is on its way) when a crash is injected: the
  // process decides how the machine stops serving.
  AgentService(SimulatedMachine* machine, PeerPolicy peers,
               std::function<void()> on_crash = nullptr);

  // Every machine in `machines` (distinct agent ids, each outliving the
  // service) behind one port. A request is served by the machine its
  // agent_id names; an empty id is refused with INVALID_ARGUMENT and an id
  // not served here with FAILED_PRECONDITION, except that RunWorkload
  // without an id (applications know a machine by its endpoint, which all
  // machines here share) goes to the first machine, by id, that holds the
  // partition, NOT_FOUND when none does. An injected crash marks the
  // machine crashed: it refuses calls while the others serve on.
  static std::unique_ptr<AgentService> SharedPort(const std::vector<SimulatedMachine*>& machines,
                                                  PeerPolicy peers);

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
  // An application attaches to IPUs of a GCD (agents/attachments.h):
  // served, like RunWorkload, by the machine holding the GCD's first IPU.
  // Refused with UNAVAILABLE by a crashed or hung machine, NOT_FOUND for a
  // partition it does not hold, FAILED_PRECONDITION naming the holder for
  // IPUs in use.
  grpc::ServerWriteReactor<vipuagent::AttachReply>* Attach(
      grpc::CallbackServerContext* context, const vipuagent::AttachRequest* request) override;

 private:
  AgentService(std::vector<SimulatedMachine*> machines, bool shared_port, PeerPolicy peers,
               std::function<void()> on_crash);

  // The machine to serve a request naming `agent_id`, in `*machine`. On its
  // own port that is the machine whatever the id (CheckAgentId refuses a
  // wrong one after Gate); on a shared port an empty or unknown id is
  // refused.
  grpc::Status Route(const std::string& agent_id, SimulatedMachine** machine) const;
  // Route for the data plane (RunWorkload, Attach), whose calls may name
  // no agent (see SharedPort).
  grpc::Status RouteDataPlane(const std::string& agent_id, const std::string& partition_id,
                              SimulatedMachine** machine) const;
  // FAILED_PRECONDITION when `agent_id` is not `machine`'s: a stale
  // address must not act on the wrong machine.
  static grpc::Status CheckAgentId(const SimulatedMachine& machine, const std::string& agent_id);
  // UNAVAILABLE when crashed; waits while hung, DEADLINE_EXCEEDED when the
  // call's deadline passes first.
  static grpc::Status Gate(const SimulatedMachine& machine, grpc::ServerContext* context);
  // Secure mode: PERMISSION_DENIED unless the peer is vipu-server.
  grpc::Status RequireServer(const SimulatedMachine& machine, const grpc::ServerContext* context,
                             const char* call) const;
  std::shared_ptr<vipuagent::Agent::Stub> PeerStub(const PartitionMember& member);

  const bool shared_port_;
  const PeerPolicy peer_policy_;
  const std::vector<SimulatedMachine*> machines_;  // sorted by agent id
  const std::unordered_map<std::string, SimulatedMachine*> by_id_;
  const std::function<void()> on_crash_;
  Attachments attachments_;
  vipu::Mutex mu_;
  // By host:port, for every machine served here: a shared-port peer's
  // certificate names every agent id behind its port.
  std::map<std::string, std::shared_ptr<vipuagent::Agent::Stub>> peers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_AGENT_SERVICE_H_
