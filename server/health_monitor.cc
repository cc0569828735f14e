#include "server/health_monitor.h"

#include <grpcpp/grpcpp.h>

#include "absl/strings/str_join.h"
#include "server/topology_push.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

HealthMonitor::HealthMonitor(storage::Store* store, AgentRegistry* registry, AgentDriver* driver,
                             PartitionController* controller, Options options)
    : store_(store),
      registry_(registry),
      driver_(driver),
      controller_(controller),
      options_(options) {}

HealthMonitor::~HealthMonitor() { Stop(); }

void HealthMonitor::Start() {
  thread_ = std::thread([this] { Run(); });
}

void HealthMonitor::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void HealthMonitor::Run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    CheckOnce();
    lock.lock();
    cv_.wait_for(lock, absl::ToChronoMilliseconds(options_.tick), [this] { return stopping_; });
  }
}

void HealthMonitor::PushTopology(const ClusterLinks& links, const std::string& agent_id) {
  if (!registry_->IsUp(agent_id, absl::Now())) return;
  absl::Status s = EnsureTopology(driver_, registry_, links, agent_id, options_.push_deadline);
  if (!s.ok()) spdlog::warn("health: {}", std::string(s.message()));
}

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
  for (const LiveAgent& agent : registry_->All()) {
    const bool up = registry_->IsUp(agent.id, now);
    auto it = up_.find(agent.id);
    if (it == up_.end() || it->second != up) {
      if (up) {
        if (it != up_.end()) spdlog::info("health: agent {} is Up again", agent.id);
      } else {
        spdlog::warn("health: agent {} is Down: no heartbeat for {} ms (timeout {} ms)", agent.id,
                     absl::ToInt64Milliseconds(now - agent.last_heartbeat),
                     absl::ToInt64Milliseconds(registry_->timeout()));
      }
      up_[agent.id] = up;
    }
  }

  std::map<std::string, std::shared_ptr<const ClusterLinks>> by_cluster;
  for (const fabric::Cluster& cluster : clusters) {
    auto links = LinksOf(cluster);
    if (!links.ok()) {
      spdlog::error("health: cluster {}: {}", cluster.id, links.status().ToString());
      continue;
    }
    by_cluster[cluster.id] = *links;
    for (const std::string& agent : cluster.agent_ids) PushTopology(**links, agent);
  }

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
