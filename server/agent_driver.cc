// AgentDriver: configure, reset and release a partition on its machines in parallel.
#include "server/agent_driver.h"

#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "base/mutex.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

// Counts outstanding callbacks; Wait() returns when all have completed.
class Latch {
 public:
  explicit Latch(int n) : n_(n) {}
  void CountDown() ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    --n_;
  }
  void Wait() ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(this, &Latch::Done));
  }

 private:
  bool Done() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return n_ == 0; }

  vipu::Mutex mu_;
  int n_ ABSL_GUARDED_BY(mu_);
};

std::string NotConnected(const std::string& agent_id) {
  return absl::StrCat("agent ", agent_id, ": not connected");
}

}  // namespace

std::optional<AgentAddress> AgentAddressOf(const AgentRegistry& registry,
                                           const std::string& agent_id) {
  std::optional<AgentEndpoint> endpoint = registry.EndpointOf(agent_id);
  if (!endpoint) return std::nullopt;
  return AgentAddress{agent_id, endpoint->host, endpoint->port};
}

std::string DescribeAgentError(const std::string& agent_id, const absl::Status& status) {
  return absl::StrCat("agent ", agent_id, ": ",
                      status.message().empty() ? "call failed" : status.message(), " (",
                      static_cast<int>(status.code()), ")");
}

std::vector<AgentDriver::MachineCall> AgentDriver::GroupByMachine(
    const fabric::Partition& partition) {
  std::vector<MachineCall> calls;
  std::map<std::string, size_t> index_of;
  for (const fabric::PartitionIpu& ipu : partition.ipus) {
    auto [it, inserted] = index_of.try_emplace(ipu.ipu.agent_id, calls.size());
    if (inserted) {
      calls.emplace_back();
      calls.back().address.agent_id = ipu.ipu.agent_id;
    }
    calls[it->second].ipus.push_back(ipu.ipu.ipu);
  }
  return calls;
}

std::vector<AgentDriver::MachineCall*> AgentDriver::Connected(
    std::vector<MachineCall>* calls, std::vector<std::string>* errors) const {
  std::vector<MachineCall*> connected;
  for (MachineCall& call : *calls) {
    std::optional<LiveAgent> agent = registry_->Get(call.address.agent_id);
    if (!agent) {
      errors->push_back(NotConnected(call.address.agent_id));
      continue;
    }
    call.address.host = agent->host;
    call.address.port = agent->port;
    connected.push_back(&call);
  }
  return connected;
}

AgentDriver::ConfigPlan AgentDriver::PlanConfig(const fabric::Partition& partition,
                                                const std::vector<MachineCall>& calls) const {
  ConfigPlan plan;
  if (link_ports_) {
    auto planned = link_ports_(partition);
    if (planned.ok()) {
      plan.ports = std::move(*planned);
    } else {
      spdlog::warn("partition {}: no link ports claimed: {}", partition.id,
                   std::string(planned.status().message()));
    }
  }
  for (const MachineCall& call : calls) {
    std::optional<LiveAgent> live = registry_->Get(call.address.agent_id);
    if (!live || live->port == 0) continue;
    plan.members.push_back({call.address.agent_id, live->host, live->port});
  }
  return plan;
}

AgentPartitionConfig AgentDriver::ConfigFor(const fabric::Partition& partition, uint64_t generation,
                                            const MachineCall& call, const ConfigPlan& plan) {
  AgentPartitionConfig config;
  config.partition = {partition.id, generation};
  config.ipus = call.ipus;
  config.routing = partition.routing;
  config.gw_routing = partition.gw_routing;
  config.sync_type = partition.sync_type;
  config.partition_size = partition.size();
  config.num_ilds = partition.num_ilds;
  auto ports = plan.ports.find(call.address.agent_id);
  if (ports != plan.ports.end()) config.link_ports = ports->second;
  config.members = plan.members;
  return config;
}

void AgentDriver::RunAll(Op op, const fabric::Partition& partition, uint64_t generation,
                         const ConfigPlan& plan, const std::vector<MachineCall*>& calls) {
  Latch latch(static_cast<int>(calls.size()));
  const AgentPartitionRef ref{partition.id, generation};
  for (MachineCall* c : calls) {
    auto done = [c, &latch](absl::Status s) {
      c->status = std::move(s);
      latch.CountDown();
    };
    switch (op) {
      case Op::kConfigure:
        client_->Configure(c->address, ConfigFor(partition, generation, *c, plan), done);
        break;
      case Op::kReset:
        client_->Reset(c->address, ref, done);
        break;
      case Op::kRelease:
        client_->Release(c->address, ref, done);
        break;
    }
  }
  latch.Wait();
}

std::vector<std::string> AgentDriver::Apply(Op op, const fabric::Partition& partition,
                                            uint64_t generation) {
  std::vector<MachineCall> calls = GroupByMachine(partition);
  std::vector<std::string> errors;
  std::vector<MachineCall*> connected = Connected(&calls, &errors);
  ConfigPlan plan;
  if (op != Op::kRelease) plan = PlanConfig(partition, calls);
  RunAll(op, partition, generation, plan, connected);

  std::vector<MachineCall*> reconfigure;
  for (MachineCall* c : connected) {
    if (c->status.ok()) continue;
    if (op == Op::kReset && absl::IsNotFound(c->status)) {
      reconfigure.push_back(c);
      continue;
    }
    errors.push_back(DescribeAgentError(c->address.agent_id, c->status));
  }
  // Machines that lost the partition get it configured afresh, one at a
  // time: this is the rare path after an agent restart.
  for (MachineCall* c : reconfigure) {
    absl::Status s = client_->ConfigureSync(c->address, ConfigFor(partition, generation, *c, plan));
    if (!s.ok()) errors.push_back(DescribeAgentError(c->address.agent_id, s));
  }
  return errors;
}

std::vector<std::string> AgentDriver::ReleaseOn(const std::string& agent_id,
                                                const std::string& partition_id,
                                                uint64_t generation) {
  std::optional<LiveAgent> agent = registry_->Get(agent_id);
  if (!agent) return {NotConnected(agent_id)};
  absl::Status s =
      client_->ReleaseSync({agent_id, agent->host, agent->port}, {partition_id, generation});
  if (!s.ok()) return {DescribeAgentError(agent_id, s)};
  return {};
}

}  // namespace vipu::server
