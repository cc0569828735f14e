// AgentDriver: configure, reset and release a partition on its machines in parallel.
#include "server/fleet/agent_driver.h"

#include <atomic>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/outcome.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

std::optional<AgentAddress> AgentAddressOf(const AgentRegistry& registry,
                                           const std::string& agent_id) {
  std::optional<AgentEndpoint> endpoint = registry.EndpointOf(agent_id);
  if (!endpoint) return std::nullopt;
  return AgentAddress{agent_id, endpoint->host, endpoint->port};
}

std::string DescribeAgentError(const std::string& agent_id, const absl::Status& status) {
  const std::string prefix = absl::StrCat("agent ", agent_id, ": ");
  // An agent reporting on its own machine already names it; the machine is
  // named once.
  if (absl::StartsWith(status.message(), prefix)) return std::string(status.message());
  if (!status.message().empty()) return absl::StrCat(prefix, status.message());
  // With nothing else to go on, the code in words says what went wrong.
  std::string code = absl::AsciiStrToLower(absl::StatusCodeToString(status.code()));
  absl::StrReplaceAll({{"_", " "}}, &code);
  return absl::StrCat(prefix, "call failed (", code, ")");
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
      errors->push_back(NotConnectedText(call.address.agent_id));
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

struct AgentDriver::Operation {
  Op op;
  fabric::Partition partition;
  uint64_t generation;
  ConfigPlan plan;
  std::vector<MachineCall> calls;
  std::vector<MachineCall*> connected;
  std::vector<std::string> errors;  // machines not connected, then failures
  ApplyDone done;
};

void AgentDriver::StartAll(const std::shared_ptr<Operation>& operation, Op op,
                           const std::vector<MachineCall*>& calls, std::function<void()> then) {
  // One count more than the calls, taken back once all are started, so that
  // a call completing inside its start cannot finish the operation early.
  auto remaining = std::make_shared<std::atomic<int>>(static_cast<int>(calls.size()) + 1);
  auto count_down = [remaining, then = std::move(then)] {
    if (remaining->fetch_sub(1, std::memory_order_acq_rel) == 1) then();
  };
  const AgentPartitionRef ref{operation->partition.id, operation->generation};
  for (MachineCall* c : calls) {
    // Each callback writes only its own call's status; the last count-down
    // (acquire-release) makes them all visible to `then`.
    auto done = [c, count_down](absl::Status s) {
      c->status = std::move(s);
      count_down();
    };
    switch (op) {
      case Op::kConfigure:
        client_->Configure(
            c->address, ConfigFor(operation->partition, operation->generation, *c, operation->plan),
            done);
        break;
      case Op::kReset:
        client_->Reset(c->address, ref, done);
        break;
      case Op::kRelease:
        client_->Release(c->address, ref, done);
        break;
    }
  }
  count_down();
}

std::vector<std::string> AgentDriver::Apply(Op op, const fabric::Partition& partition,
                                            uint64_t generation) {
  return vipu::Await<std::vector<std::string>>(
      [&](ApplyDone done) { ApplyAsync(op, partition, generation, std::move(done)); });
}

void AgentDriver::ApplyAsync(Op op, const fabric::Partition& partition, uint64_t generation,
                             ApplyDone done) {
  auto operation = std::make_shared<Operation>();
  operation->op = op;
  operation->partition = partition;
  operation->generation = generation;
  operation->done = std::move(done);
  operation->calls = GroupByMachine(partition);
  operation->connected = Connected(&operation->calls, &operation->errors);
  if (op != Op::kRelease) operation->plan = PlanConfig(partition, operation->calls);
  StartAll(operation, op, operation->connected, [this, operation] { Conclude(operation); });
}

void AgentDriver::Conclude(const std::shared_ptr<Operation>& operation) {
  std::vector<MachineCall*> reconfigure;
  for (MachineCall* c : operation->connected) {
    if (c->status.ok()) continue;
    if (operation->op == Op::kReset && absl::IsNotFound(c->status)) {
      reconfigure.push_back(c);
      continue;
    }
    operation->errors.push_back(DescribeAgentError(c->address.agent_id, c->status));
  }
  auto report = [operation] {
    ApplyDone done = std::move(operation->done);
    done(std::move(operation->errors));
  };
  if (reconfigure.empty()) {
    report();
    return;
  }
  // Machines that lost the partition (an agent restart) get it configured
  // afresh at the same generation.
  StartAll(operation, Op::kConfigure, reconfigure, [operation, reconfigure, report] {
    for (MachineCall* c : reconfigure) {
      if (!c->status.ok()) {
        operation->errors.push_back(DescribeAgentError(c->address.agent_id, c->status));
      }
    }
    report();
  });
}

std::vector<std::string> AgentDriver::ReleaseOn(const std::string& agent_id,
                                                const std::string& partition_id,
                                                uint64_t generation) {
  std::optional<LiveAgent> agent = registry_->Get(agent_id);
  if (!agent) return {NotConnectedText(agent_id)};
  absl::Status s =
      client_->ReleaseSync({agent_id, agent->host, agent->port}, {partition_id, generation});
  if (!s.ok()) return {DescribeAgentError(agent_id, s)};
  return {};
}

}  // namespace vipu::server
