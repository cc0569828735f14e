// AgentDriver: one operation on a partition's machines, in parallel, with a result per machine.
#include "server/fleet/agent_driver.h"

#include <atomic>
#include <memory>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "base/outcome.h"

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

struct AgentDriver::Operation {
  std::shared_ptr<const PartitionPlan> plan;
  Results results;
  Done done;
  // One count more than the calls, taken back once all are started, so
  // that a call completing inside its start cannot finish the operation
  // early. The last count-down (acquire-release) makes every callback's
  // result visible to the thread that reports.
  std::atomic<size_t> remaining{1};

  void CountDown() {
    if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) {
      Done report = std::move(done);
      report(std::move(results));
    }
  }
};

void AgentDriver::ApplyAsync(Op op, std::shared_ptr<const PartitionPlan> plan, Done done) {
  auto operation = std::make_shared<Operation>();
  operation->plan = std::move(plan);
  operation->done = std::move(done);
  const std::vector<MachinePlan>& machines = operation->plan->machines;
  operation->results.resize(machines.size());
  size_t calls = 0;
  for (size_t i = 0; i < machines.size(); ++i) {
    operation->results[i].agent_id = machines[i].address.agent_id;
    if (machines[i].connected) {
      ++calls;
    } else {
      operation->results[i].status = NotConnectedError(machines[i].address.agent_id);
    }
  }
  operation->remaining.fetch_add(calls, std::memory_order_relaxed);
  for (size_t i = 0; i < machines.size(); ++i) {
    const MachinePlan& machine = machines[i];
    if (!machine.connected) continue;
    // Each callback writes only its own machine's result.
    auto finished = [operation, i](absl::Status s) {
      operation->results[i].status = std::move(s);
      operation->CountDown();
    };
    switch (op) {
      case Op::kConfigure:
        client_->Configure(machine.address, machine.config, std::move(finished));
        break;
      case Op::kReset:
        client_->Reset(machine.address, machine.config.partition, std::move(finished));
        break;
      case Op::kRelease:
        client_->Release(machine.address, machine.config.partition, std::move(finished));
        break;
    }
  }
  operation->CountDown();
}

AgentDriver::Results AgentDriver::Apply(Op op, std::shared_ptr<const PartitionPlan> plan) {
  return vipu::Await<Results>([&](Done done) { ApplyAsync(op, std::move(plan), std::move(done)); });
}

}  // namespace vipu::server
