// HealthMonitor: marks agents Down, fails and auto-resets partitions, pushes topology.
#include "server/health_monitor.h"

#include "absl/strings/str_join.h"
#include "base/thread_name.h"
#include "server/partition_problems.h"
#include "server/topology_push.h"
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

bool HealthMonitor::AwaitTopologyPushed(absl::Time deadline) { return pusher_.AwaitIdle(deadline); }

void HealthMonitor::CheckOnce() {
  std::vector<fabric::Cluster> clusters;
  std::vector<fabric::Partition> partitions;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto c = txn.ListClusters();
    if (!c.ok()) return c.status();
    clusters = std::move(*c);
    auto p = txn.ListPartitions();
    if (!p.ok()) return p.status();
    partitions = std::move(*p);
    return absl::OkStatus();
  });
  if (!s.ok()) {
    spdlog::error("health: cannot read state: {}", s.ToString());
    return;
  }

  const absl::Time now = absl::Now();
  // Liveness only: copying every agent's reports each tick costs more than
  // the rest of the pass at 16,384 agents. Pulses come sorted by id, as up_
  // is: one walk over both.
  auto seen = up_.begin();
  for (const AgentPulse& agent : registry_->Pulses()) {
    const bool up = now - agent.last_heartbeat < registry_->timeout();
    while (seen != up_.end() && seen->first < agent.id) ++seen;
    const bool known = seen != up_.end() && seen->first == agent.id;
    if (!known || seen->second != up) {
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

  std::map<std::string, std::shared_ptr<const ClusterLinks>> by_cluster;
  std::vector<std::shared_ptr<const ClusterLinks>> to_push;
  for (const fabric::Cluster& cluster : clusters) {
    auto links = cluster_links_->LinksOf(cluster);
    if (!links.ok()) {
      spdlog::error("health: cluster {}: {}", cluster.id, links.status().ToString());
      continue;
    }
    by_cluster[cluster.id] = *links;
    to_push.push_back(*links);
  }
  pusher_.Push(to_push);

  std::vector<PartitionController::FaultReport> faults;
  for (const fabric::Partition& p : partitions) {
    if (p.ready_state == fabric::ReadyState::kPending ||
        p.operation_state == fabric::OperationState::kRemoving) {
      continue;  // an operation in flight reports its own outcome
    }
    auto links = by_cluster.find(p.cluster_id);
    if (links == by_cluster.end()) continue;
    std::vector<std::string> problems = PartitionProblems(p, *links->second, *registry_, now);
    if (!problems.empty()) {
      if (p.ready_state != fabric::ReadyState::kError || p.errors != problems) {
        faults.push_back({p.id, p.generation, std::move(problems)});
      } else if (p.relocatable && !p.disable_auto_reset &&
                 p.auto_reset_retry_count < p.max_auto_reset_retries) {
        // A relocatable partition does not wait for its faults to clear:
        // its auto reset moves it to healthy IPUs.
        auto moved = controller_->AutoReset(p.id, p.generation);
        if (!moved.ok()) spdlog::error("health: partition {}: {}", p.id, moved.status().ToString());
      }
      continue;
    }
    if (p.ready_state == fabric::ReadyState::kError && !p.disable_auto_reset &&
        p.auto_reset_retry_count < p.max_auto_reset_retries) {
      auto reset = controller_->AutoReset(p.id, p.generation);
      if (!reset.ok()) spdlog::error("health: partition {}: {}", p.id, reset.status().ToString());
    }
  }
  if (!faults.empty()) {
    auto changed = controller_->MarkFaulty(faults);
    if (!changed.ok()) spdlog::error("health: {}", changed.status().ToString());
  }
}

}  // namespace vipu::server
