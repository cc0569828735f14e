// Watches the agents and what they report, and acts on the partitions:
// - an agent whose last heartbeat is older than three periods is Down;
// - a Down agent, an IPU in error or a downed link that a partition owns
//   puts that partition (and only it) in PS_ERROR, with errors naming the
//   machine and the IPU or link;
// - once the faults clear, a PS_ERROR partition is auto-reset within its
//   bounded retries (PartitionController::AutoReset);
// - every agent in a cluster is told its position and ports (SetTopology),
//   again whenever it re-registers or the cluster changes; in parallel and
//   in the background (TopologyPusher), so a tick never waits for agents.
// One thread, one pass per tick; all state changes go through the
// PartitionController and so the Store.
#ifndef VIPU_SERVER_HEALTH_MONITOR_H_
#define VIPU_SERVER_HEALTH_MONITOR_H_

#include <map>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/agent_client.h"
#include "server/agent_registry.h"
#include "server/cluster_links_cache.h"
#include "server/partition_controller.h"
#include "server/topology_push.h"
#include "storage/store.h"

namespace vipu::server {

class HealthMonitor {
 public:
  struct Options {
    absl::Duration tick = absl::Milliseconds(100);
    absl::Duration push_deadline = absl::Milliseconds(500);  // one SetTopology call
    size_t max_pushes_in_flight = 256;                       // SetTopology calls at once
  };

  // Everything passed in is the caller's and must outlive this.
  HealthMonitor(storage::Store* store, ClusterLinksCache* cluster_links, AgentRegistry* registry,
                AgentClient* agents, PartitionController* controller, Options options);
  ~HealthMonitor();  // Stop()s.

  void Start();
  // Joins the thread. Idempotent.
  void Stop() ABSL_LOCKS_EXCLUDED(mu_);

  // One pass, on the caller's thread (also what the thread runs each tick).
  // Topology pushes it starts go on in the background.
  void CheckOnce();
  // Waits until the topology pushes started so far have ended, or
  // `deadline`; true when they have (tests).
  bool AwaitTopologyPushed(absl::Time deadline);

 private:
  void Run() ABSL_LOCKS_EXCLUDED(mu_);

  storage::Store* store_;
  ClusterLinksCache* cluster_links_;
  AgentRegistry* registry_;
  PartitionController* controller_;
  const Options options_;

  std::map<std::string, bool> up_;  // last liveness seen, for transition logs
  TopologyPusher pusher_;

  vipu::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_HEALTH_MONITOR_H_
