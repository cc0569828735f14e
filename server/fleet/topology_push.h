// Telling an agent its place in the cluster and its ports (SetTopology),
// once per registration and whenever the cluster changes: the registry
// remembers what each agent was told since it registered (a fingerprint).
//
// Two ways: EnsureTopology for one agent, waiting for its answer (a fault
// injection or a link test that needs the agent to know its links now), and
// TopologyPusher for whole clusters, in parallel and without blocking the
// caller (the health monitor; after a restart 16,384 agents are told again
// while the server already serves).
#ifndef VIPU_SERVER_FLEET_TOPOLOGY_PUSH_H_
#define VIPU_SERVER_FLEET_TOPOLOGY_PUSH_H_

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/fleet/agent_client.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links.h"
#include "server/fleet/topology_request.h"

namespace vipu::server {

// The fingerprint the registry keeps of what SetTopology told an agent
// (a hash of TopologyFingerprint; never 0, which means "nothing told").
uint64_t TopologyHash(const AgentTopology& topology);

// OK when the agent already knows this topology or took it now;
// UNAVAILABLE when it is not registered or did not answer within `deadline`.
absl::Status EnsureTopology(AgentClient* client, AgentRegistry* registry, const ClusterLinks& links,
                            const std::string& agent_id, absl::Duration deadline);

// Borrows `client` and `registry`, which must outlive it; holds the links of
// the clusters it is pushing. Thread-safe: Push, AwaitIdle and the counters
// may be called from any thread; the calls' callbacks finish on the
// client's threads, all under mu_ (push_mu_ lets one Push plan at a time).
class TopologyPusher {
 public:
  struct Options {
    absl::Duration deadline = absl::Milliseconds(500);  // one SetTopology call
    size_t max_in_flight = 256;                         // calls at once, all clusters
  };

  TopologyPusher(AgentClient* client, AgentRegistry* registry, Options options);
  ~TopologyPusher();  // Waits for the calls in flight; starts no more.

  // Queues SetTopology for every agent of `clusters` that is Up and has not
  // been told its topology since it registered, unless already queued, and
  // returns at once; calls run in the background, at most max_in_flight at
  // a time. A failed call is retried on a later Push. Clusters not in
  // `clusters` are forgotten (their queued calls dropped).
  void Push(const std::vector<std::shared_ptr<const ClusterLinks>>& clusters)
      ABSL_LOCKS_EXCLUDED(push_mu_, mu_);

  // Waits until nothing is queued or in flight, or `deadline` passes; true
  // when idle (tests, and a caller that wants the agents told now).
  bool AwaitIdleForTesting(absl::Time deadline) ABSL_LOCKS_EXCLUDED(mu_);

  // Calls that ended OK / failed since construction (logs, tests).
  uint64_t ToldForTesting() const;
  uint64_t FailedForTesting() const;

 private:
  // What each agent of one cluster should be told, computed once per links
  // (they change only when the cluster does).
  struct Plan {
    std::shared_ptr<const ClusterLinks> links;
    std::vector<uint64_t> fingerprints;  // by links->layout.cluster().agent_ids
  };
  struct Pending {
    std::shared_ptr<const ClusterLinks> links;
    std::string agent_id;
    AgentEndpoint endpoint;
    uint64_t fingerprint = 0;
  };
  struct Call;

  const Plan& PlanFor(const std::shared_ptr<const ClusterLinks>& links)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(push_mu_);
  // Starts queued calls while there is room. `reserved`: the caller has
  // counted this run in starting_ already.
  void Pump(bool reserved) ABSL_LOCKS_EXCLUDED(mu_);
  enum class Outcome { kTold, kFailed, kSkipped };
  void Finish(Call* call, Outcome outcome, const std::string& error) ABSL_LOCKS_EXCLUDED(mu_);
  // Logs the round once nothing is left. AwaitIdle and the destructor wait
  // on the conditions below, which mu_ re-evaluates on every release.
  void EndRoundIfIdle() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  bool NothingRunning() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return in_flight_ == 0 && starting_ == 0;
  }
  bool Idle() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return NothingRunning() && queue_.empty();
  }

  AgentClient* client_;
  AgentRegistry* registry_;
  const Options options_;

  vipu::Mutex push_mu_ ABSL_ACQUIRED_BEFORE(mu_);  // one Push at a time
  std::map<const ClusterLinks*, Plan> plans_ ABSL_GUARDED_BY(push_mu_);

  mutable vipu::Mutex mu_;
  std::deque<Pending> queue_ ABSL_GUARDED_BY(mu_);
  std::set<std::string> pending_ ABSL_GUARDED_BY(mu_);  // agents queued or in flight
  std::set<std::string> warned_ ABSL_GUARDED_BY(mu_);   // agents whose failure was logged
  size_t in_flight_ ABSL_GUARDED_BY(mu_) = 0;
  // Threads inside Pump: the object must outlive them.
  size_t starting_ ABSL_GUARDED_BY(mu_) = 0;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  uint64_t told_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t failed_ ABSL_GUARDED_BY(mu_) = 0;
  uint64_t round_told_ ABSL_GUARDED_BY(mu_) = 0;  // since the queue was last idle
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_FLEET_TOPOLOGY_PUSH_H_
