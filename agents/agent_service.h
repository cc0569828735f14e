// The vipuagent.Agent service of one simulated machine: thin, it checks the
// request is meant for this machine, translates, and calls SimulatedMachine.
#ifndef VIPU_AGENTS_AGENT_SERVICE_H_
#define VIPU_AGENTS_AGENT_SERVICE_H_

#include "agents/simulated_machine.h"
#include "vipu_agent.grpc.pb.h"

namespace vipu::agents {

class AgentService final : public vipuagent::Agent::Service {
 public:
  // `machine` must outlive the service.
  explicit AgentService(SimulatedMachine* machine) : machine_(machine) {}

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

 private:
  // FAILED_PRECONDITION when `agent_id` is not this machine's: a stale
  // address must not act on the wrong machine.
  grpc::Status CheckAgentId(const std::string& agent_id) const;

  SimulatedMachine* const machine_;
};

}  // namespace vipu::agents

#endif  // VIPU_AGENTS_AGENT_SERVICE_H_
