// The vipuagent.Agent service of many simulated machines on one gRPC port:
// 16,384 machines cannot each have a server and a port on two cores. Every
// request names its machine (agent_id); this service hands it to that machine's
// AgentService, which does everything else. A request for a machine this port
// does not serve is refused as the single-machine service refuses a wrong id
// (FAILED_PRECONDITION), so a stale address cannot act on another machine.
#ifndef VIPU_AGENTS_SHARED_PORT_SERVICE_H_
#define VIPU_AGENTS_SHARED_PORT_SERVICE_H_

#include <string>
#include <unordered_map>
#include <vector>

#include "agents/agent_service.h"
#include "agents/simulated_machine.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::agents {

class SharedPortService final : public vipuagent::Agent::Service {
 public:
  // One entry per machine: the machine and its service, both outliving this.
  struct Member {
    SimulatedMachine* machine = nullptr;
    AgentService* service = nullptr;
  };
  explicit SharedPortService(const std::vector<Member>& members);

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
  // An empty agent_id (applications know a machine by its endpoint, which
  // all machines here share) goes to the first machine, by id, that holds
  // the partition; NOT_FOUND when none does.
  grpc::Status RunWorkload(grpc::ServerContext* context,
                           const vipuagent::RunWorkloadRequest* request,
                           vipuagent::RunWorkloadReply* reply) override;
  grpc::Status CheckPartition(grpc::ServerContext* context,
                              const vipuagent::CheckPartitionRequest* request,
                              vipuagent::CheckPartitionReply* reply) override;

  size_t size() const { return members_.size(); }

 private:
  // The member serving `agent_id`, or nullptr with `*refusal` set.
  const Member* Find(const std::string& agent_id, grpc::Status* refusal) const;
  template <typename Request, typename Reply>
  grpc::Status Forward(grpc::Status (AgentService::*method)(grpc::ServerContext*, const Request*,
                                                            Reply*),
                       grpc::ServerContext* context, const Request* request, Reply* reply) const;

  std::unordered_map<std::string, Member> members_;
  std::vector<std::string> ids_;  // sorted, for RunWorkload's choice
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_SHARED_PORT_SERVICE_H_
