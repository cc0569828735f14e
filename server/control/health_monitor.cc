// HealthMonitor: marks agents Down, fails and auto-resets partitions, pushes topology.
#include "server/control/health_monitor.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "base/thread_name.h"
#include "server/control/health_decisions.h"
#include "server/control/partition_problems.h"
#include "server/fleet/topology_push.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

HealthMonitor::HealthMonitor(storage::Store* store, ClusterLinksCache* cluster_links,
                             AgentRegistry* registry, AgentClient* agents,
                             PartitionController* controller, Options options)
    : store_(store),
      cluster_links_(cluster_links),
      registry_(registry),
      controller_(controller),
      options_(options),
      pusher_(agents, registry, {options.push_deadline, options.max_pushes_in_flight}) {}

HealthMonitor::~HealthMonitor() { Stop(); }

void HealthMonitor::Start() {
  thread_ = std::thread([this] { Run(); });
  NameThread(thread_, "vipu-health");
}

void HealthMonitor::Stop() {
  {
    vipu::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void HealthMonitor::Run() {
  for (;;) {
    {
      vipu::MutexLock lock(&mu_);
      if (stopping_) return;
    }
    CheckOnce();
    // One tick between passes; Stop() ends the wait at once.
    vipu::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.tick);
  }
}

bool HealthMonitor::AwaitTopologyPushedForTesting(absl::Time deadline) {
  return pusher_.AwaitIdleForTesting(deadline);
}

void HealthMonitor::CheckOnce() {
  // Outcomes of finished operations the store refused are written again
  // first: their partitions are PS_PENDING and the pass leaves them alone.
  controller_->RecordRefusedOutcomes(absl::Now());
  std::vector<std::shared_ptr<const fabric::Cluster>> clusters;
  std::vector<fabric::Partition> partitions;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    // Shared and cached: no row of the clusters' members is read per tick.
    ASSIGN_OR_RETURN(clusters, txn.ClusterRefs());
    ASSIGN_OR_RETURN(partitions, txn.ListPartitions());
    return absl::OkStatus();
  });
  if (!s.ok()) {
    // Every tick while the store refuses (etcd away, a lease in doubt).
    read_failure_.Say(absl::StrCat("health: cannot read state: ", s.ToString()));
    return;
  }
  read_failure_.Clear();
  const absl::Time now = absl::Now();
  TrackLiveness(now);
  const LinksByCluster links = PushTopology(clusters);
  ActOnPartitions(partitions, links, now);
  passes_.fetch_add(1, std::memory_order_release);
}

void HealthMonitor::TrackLiveness(absl::Time now) {
  // Liveness only: copying every agent's reports each tick costs more than
  // the rest of the pass at 16,384 agents. Pulses come sorted by id, as up_
  // is: one walk over both.
  auto seen = up_.begin();
  for (const AgentPulse& agent : registry_->Pulses()) {
    const bool up = now - agent.last_heartbeat < registry_->timeout();
    while (seen != up_.end() && seen->first < agent.id) ++seen;
    const bool known = seen != up_.end() && seen->first == agent.id;
    if (known && seen->second == up) continue;
    if (up) {
      if (known) spdlog::info("health: agent {} is Up again", agent.id);
    } else {
      spdlog::warn("health: agent {} is Down: no heartbeat for {} ms (timeout {} ms)", agent.id,
                   absl::ToInt64Milliseconds(now - agent.last_heartbeat),
                   absl::ToInt64Milliseconds(registry_->timeout()));
    }
    if (known) {
      seen->second = up;
    } else {
      seen = up_.emplace_hint(seen, agent.id, up);
    }
  }
}

HealthMonitor::LinksByCluster HealthMonitor::PushTopology(
    const std::vector<std::shared_ptr<const fabric::Cluster>>& clusters) {
  LinksByCluster by_cluster;
  std::vector<std::shared_ptr<const ClusterLinks>> to_push;
  for (const std::shared_ptr<const fabric::Cluster>& cluster : clusters) {
    auto links = cluster_links_->LinksOf(cluster);  // the same pointer: no comparison
    if (!links.ok()) {
      spdlog::error("health: cluster {}: {}", cluster->id, links.status().ToString());
      continue;
    }
    by_cluster[cluster->id] = *links;
    to_push.push_back(*links);
  }
  pusher_.Push(to_push);
  return by_cluster;
}

void HealthMonitor::ActOnPartitions(const std::vector<fabric::Partition>& partitions,
                                    const LinksByCluster& links, absl::Time now) {
  std::vector<PartitionController::FaultReport> faults;
  for (const fabric::Partition& p : partitions) {
    if (OperationInFlight(p)) continue;  // it reports its own outcome
    auto cluster = links.find(p.cluster_id);
    if (cluster == links.end()) continue;
    std::vector<std::string> problems = PartitionProblems(p, *cluster->second, *registry_, now);
    switch (DecideHealth(p, problems)) {
      case HealthAction::kNone:
        break;
      case HealthAction::kMarkFaulty:
        faults.push_back({p.id, p.generation, std::move(problems)});
        break;
      case HealthAction::kAutoReset:
        if (auto reset = controller_->AutoReset(p.id, p.generation); !reset.ok()) {
          spdlog::error("health: partition {}: {}", p.id, reset.status().ToString());
        }
        break;
    }
  }
  if (!faults.empty()) {
    auto changed = controller_->MarkFaulty(faults);
    if (!changed.ok()) spdlog::error("health: {}", changed.status().ToString());
  }
  // After the faults: a partition just marked is no longer ACTIVE when the
  // push reads it again.
  for (const HeldCheck::Missing& m : held_check_.Check(partitions, *registry_, now)) {
    controller_->PushAgain(m.agent_id, m.partition_id, m.generation);
  }
}

}  // namespace vipu::server
