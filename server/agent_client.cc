// AgentClient's waiting wrappers: one asynchronous call and a wait for its callback.
#include "server/agent_client.h"

#include <memory>
#include <optional>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "base/mutex.h"

namespace vipu::server {
namespace {

// The outcome of one call, handed from its callback to the waiting caller.
// Shared with the callback: a callback that runs after Wait returned (it
// cannot, but nothing needs it not to) finds it alive.
template <typename Result>
class Outcome {
 public:
  void Set(Result result) ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    result_ = std::move(result);
    done_ = true;
  }
  Result Wait() ABSL_LOCKS_EXCLUDED(mu_) {
    vipu::MutexLock lock(&mu_);
    mu_.Await(absl::Condition(&done_));
    return std::move(*result_);
  }

 private:
  vipu::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<Result> result_ ABSL_GUARDED_BY(mu_);
};

// Starts `call` with a callback that fills an Outcome, and waits for it.
template <typename Result, typename Call>
Result Await(Call call) {
  auto outcome = std::make_shared<Outcome<Result>>();
  call([outcome](Result r) { outcome->Set(std::move(r)); });
  return outcome->Wait();
}

}  // namespace

absl::Status AgentClient::ConfigureSync(const AgentAddress& agent,
                                        const AgentPartitionConfig& config) {
  return Await<absl::Status>([&](Done done) { Configure(agent, config, std::move(done)); });
}

absl::Status AgentClient::ReleaseSync(const AgentAddress& agent,
                                      const AgentPartitionRef& partition) {
  return Await<absl::Status>([&](Done done) { Release(agent, partition, std::move(done)); });
}

absl::Status AgentClient::SetTopologySync(const AgentAddress& agent, const AgentTopology& topology,
                                          absl::Duration deadline) {
  return Await<absl::Status>(
      [&](Done done) { SetTopology(agent, topology, deadline, std::move(done)); });
}

absl::StatusOr<AgentInfo> AgentClient::GetInfoSync(const AgentAddress& agent) {
  return Await<absl::StatusOr<AgentInfo>>(
      [&](DoneWith<AgentInfo> done) { GetInfo(agent, std::move(done)); });
}

absl::StatusOr<std::string> AgentClient::InjectFaultSync(const AgentAddress& agent,
                                                         const fabric::FaultRequest& fault) {
  return Await<absl::StatusOr<std::string>>(
      [&](DoneWith<std::string> done) { InjectFault(agent, fault, std::move(done)); });
}

absl::StatusOr<AgentLinkTestResult> AgentClient::TestLinksSync(const AgentAddress& agent,
                                                               AgentLinkTest test) {
  return Await<absl::StatusOr<AgentLinkTestResult>>(
      [&](DoneWith<AgentLinkTestResult> done) { TestLinks(agent, test, std::move(done)); });
}

}  // namespace vipu::server
