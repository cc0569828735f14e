// PartitionController after a start or a registration: recover interrupted operations, reconcile an
// agent.
#include <map>
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_join.h"
#include "server/control/partition_controller.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

namespace {

// True when the machine answered and said no; false when it agreed or the
// call never reached it (not connected, gone, too slow).
bool Refused(const absl::Status& status) {
  return !status.ok() && !absl::IsUnavailable(status) && !absl::IsDeadlineExceeded(status) &&
         !absl::IsCancelled(status);
}

// Settled PS_ACTIVE: what a machine must hold.
bool ShouldBeHeld(const fabric::Partition& p) {
  return p.ready_state == fabric::ReadyState::kActive &&
         p.operation_state != fabric::OperationState::kRemoving;
}

}  // namespace

std::shared_ptr<void> PartitionController::CountReconciliation() {
  {
    vipu::MutexLock lock(&reconcile_mu_);
    ++reconciling_;
  }
  struct Done {
    PartitionController* self;
    ~Done() {
      vipu::MutexLock lock(&self->reconcile_mu_);
      --self->reconciling_;
      ++self->reconciled_;
    }
  };
  // Made in place: a temporary Done would count the job done at once.
  return std::shared_ptr<Done>(new Done{this});
}

void PartitionController::ConfigureAgain(const fabric::Partition& p,
                                         std::shared_ptr<const PartitionPlan> plan,
                                         const std::string& agent_id) {
  AgentDriver::Results results = driver_->Apply(AgentDriver::Op::kConfigure, plan);
  std::vector<std::string> others;
  for (size_t i = 0; i < plan->machines.size() && i < results.size(); ++i) {
    const MachineResult& r = results[i];
    if (r.status.ok()) continue;
    if (r.agent_id != agent_id || !Refused(r.status)) {
      others.push_back(DescribeAgentError(r.agent_id, r.status));
      continue;
    }
    const std::string error = DescribeAgentError(r.agent_id, r.status);
    spdlog::warn("partition {} (generation {}): agent {} refused to hold it again: {}", p.id,
                 p.generation, agent_id, error);
    auto marked = MarkFaulty({{p.id, p.generation, {error}}});
    if (!marked.ok()) {
      spdlog::error("partition {}: cannot record the refusal: {}", p.id,
                    marked.status().ToString());
    }
  }
  if (!others.empty()) {
    spdlog::info("partition {} pushed again for agent {}; left to their own reports: {}", p.id,
                 agent_id, absl::StrJoin(others, "; "));
  }
}

void PartitionController::ReconcileAgent(const std::string& agent_id,
                                         std::vector<fabric::HeldPartition> held) {
  std::shared_ptr<void> done = CountReconciliation();
  work_.Post([this, agent_id, held = std::move(held), done] {
    std::vector<fabric::Partition> wanted;
    // The clusters of those partitions, read with them: a re-push plans
    // each machine's link ports from its cluster's links.
    std::map<std::string, absl::StatusOr<std::shared_ptr<const fabric::Cluster>>> clusters;
    absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
      auto list = txn.PartitionsOnAgent(agent_id);
      if (!list.ok()) return list.status();
      wanted = std::move(*list);
      for (const fabric::Partition& p : wanted) {
        if (!clusters.count(p.cluster_id))
          clusters.emplace(p.cluster_id, txn.ClusterRef(p.cluster_id));
      }
      return absl::OkStatus();
    });
    if (!s.ok()) {
      spdlog::error("reconcile agent {}: {}", agent_id, s.ToString());
      return;
    }
    std::map<std::string, uint64_t> wanted_generation;
    for (const fabric::Partition& p : wanted) wanted_generation[p.id] = p.generation;
    std::map<std::string, uint64_t> held_generation;
    for (const fabric::HeldPartition& h : held) {
      held_generation[h.partition_id] = h.generation;
      if (wanted_generation.find(h.partition_id) == wanted_generation.end()) {
        spdlog::info("reconcile agent {}: releasing {} (generation {}), unknown to the database",
                     agent_id, h.partition_id, h.generation);
        ReleaseOn(agent_id, h.partition_id, h.generation);
      }
    }
    for (const fabric::Partition& p : wanted) {
      if (!ShouldBeHeld(p)) continue;
      auto it = held_generation.find(p.id);
      if (it != held_generation.end() && it->second == p.generation) continue;
      spdlog::info("reconcile agent {}: re-pushing partition {} (generation {})", agent_id, p.id,
                   p.generation);
      ConfigureAgain(p, PlanFor(p, clusters.at(p.cluster_id)), agent_id);
    }
  });
}

void PartitionController::PushAgain(const std::string& agent_id, const std::string& partition_id,
                                    uint64_t generation) {
  std::shared_ptr<void> done = CountReconciliation();
  work_.Post([this, agent_id, partition_id, generation, done] {
    std::optional<fabric::Partition> current;
    absl::StatusOr<std::shared_ptr<const fabric::Cluster>> cluster;
    absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
      auto p = txn.GetPartition(partition_id);
      if (!p.ok()) return absl::IsNotFound(p.status()) ? absl::OkStatus() : p.status();
      if (p->generation != generation || !ShouldBeHeld(*p)) return absl::OkStatus();
      cluster = txn.ClusterRef(p->cluster_id);
      current = *std::move(p);
      return absl::OkStatus();
    });
    if (!s.ok()) {
      spdlog::error("partition {}: cannot read it to push it again to agent {}: {}", partition_id,
                    agent_id, s.ToString());
      return;
    }
    if (!current) return;  // moved on since the reports were compared
    auto plan =
        std::make_shared<const PartitionPlan>(OnlyMachine(*PlanFor(*current, cluster), agent_id));
    if (plan->machines.empty() || !plan->machines[0].connected) return;
    spdlog::warn("partition {} (generation {}): agent {} reports not holding it; pushing it again",
                 partition_id, generation, agent_id);
    ConfigureAgain(*current, std::move(plan), agent_id);
  });
}

bool PartitionController::AwaitReconciled(absl::Time deadline) {
  vipu::MutexLock lock(&reconcile_mu_);
  return reconcile_mu_.AwaitWithDeadline(
      absl::Condition(this, &PartitionController::NoneReconciling), deadline);
}

uint64_t PartitionController::reconciled() const {
  vipu::MutexLock lock(&reconcile_mu_);
  return reconciled_;
}

void PartitionController::Recover() {
  std::vector<fabric::Partition> all;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto list = txn.ListPartitions();
    if (!list.ok()) return list.status();
    all = std::move(*list);
    return absl::OkStatus();
  });
  if (!s.ok()) {
    spdlog::error("recover: {}", s.ToString());
    return;
  }
  for (const fabric::Partition& p : all) {
    const std::string id = p.id;
    const uint64_t generation = p.generation;
    switch (p.operation_state) {
      case fabric::OperationState::kCreating:
        spdlog::info("recover: partition {} was being created; configuring", id);
        work_.Post([this, id, generation] {
          ApplyIfCurrent(id, generation, AgentDriver::Op::kConfigure);
        });
        break;
      case fabric::OperationState::kResetting:
        spdlog::info("recover: partition {} was being reset; resetting", id);
        work_.Post(
            [this, id, generation] { ApplyIfCurrent(id, generation, AgentDriver::Op::kReset); });
        break;
      case fabric::OperationState::kRemoving:
        spdlog::info("recover: partition {} was being removed; removing", id);
        work_.Post([this, id] {
          if (absl::Status r = Remove(id, /*force=*/true); !r.ok()) {
            spdlog::error("recover: remove {}: {}", id, r.ToString());
          }
        });
        break;
      default:
        break;
    }
  }
}

}  // namespace vipu::server
