// Watches the agents and what they report, and acts on the partitions:
// - an agent whose last heartbeat is older than three periods is Down;
// - a Down agent, an IPU in error or a downed link that a partition owns
//   puts that partition (and only it) in PS_ERROR, with errors naming the
//   machine and the IPU or link;
// - once the faults clear, a PS_ERROR partition is auto-reset within its
//   bounded retries (PartitionController::AutoReset);
// - a machine whose heartbeats lack a PS_ACTIVE partition placed on it, or
//   name an older generation, is pushed it again (HeldCheck); a machine
//   that refuses puts the partition in PS_ERROR naming it;
// - every agent in a cluster is told its position and ports (SetTopology),
//   again whenever it re-registers or the cluster changes; in parallel and
//   in the background (TopologyPusher), so a tick never waits for agents.
// One thread, one pass per tick; all state changes go through the
// PartitionController and so the Store.
//
// Borrows the store, links cache, registry, agent client and controller;
// owns its thread and the TopologyPusher. Not thread-safe: CheckOnce keeps
// unguarded state, so passes run on one thread at a time (the caller's
// before Start, the monitor's after); the owner calls Start and Stop.
#ifndef VIPU_SERVER_CONTROL_HEALTH_MONITOR_H_
#define VIPU_SERVER_CONTROL_HEALTH_MONITOR_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "base/repeated_warning.h"
#include "server/control/held_check.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_client.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/fleet/topology_push.h"
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
  bool AwaitTopologyPushedForTesting(absl::Time deadline);
  // Passes that ran to the end since construction (vipu_health_passes_total).
  // A pass that ends after another has ended began after it: once this has
  // grown by two, a whole pass saw what the registry held beforehand.
  uint64_t passes() const { return passes_.load(std::memory_order_acquire); }

 private:
  using LinksByCluster = std::map<std::string, std::shared_ptr<const ClusterLinks>>;

  // A store that refuses reads refuses every tick; passes run one at a
  // time (the first before Start()), so one thread at a time says it.
  RepeatedWarning read_failure_{spdlog::level::err};

  void Run() ABSL_LOCKS_EXCLUDED(mu_);
  // The parts of a pass, in order. Logs agents going Down and Up again.
  void TrackLiveness(absl::Time now);
  // The links of every cluster, pushed to their agents in the background.
  LinksByCluster PushTopology(const std::vector<std::shared_ptr<const fabric::Cluster>>& clusters);
  // Marks the faulty partitions in error, and starts the auto resets
  // DecideHealth asks for.
  void ActOnPartitions(const std::vector<fabric::Partition>& partitions,
                       const LinksByCluster& links, absl::Time now);

  storage::Store* store_;
  ClusterLinksCache* cluster_links_;
  AgentRegistry* registry_;
  PartitionController* controller_;
  const Options options_;

  std::map<std::string, bool> up_;  // last liveness seen, for transition logs
  HeldCheck held_check_;
  std::atomic<uint64_t> passes_{0};
  TopologyPusher pusher_;

  vipu::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_HEALTH_MONITOR_H_
