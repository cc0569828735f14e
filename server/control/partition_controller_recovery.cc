// PartitionController after a start or a registration: recover interrupted operations, reconcile an
// agent.
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_join.h"
#include "server/control/partition_controller.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

void PartitionController::ReconcileAgent(const std::string& agent_id,
                                         std::vector<fabric::HeldPartition> held) {
  {
    vipu::MutexLock lock(&reconcile_mu_);
    ++reconciling_;
  }
  // Counts the job done when it has run, or when the queue drops it at
  // shutdown: the last copy of the job going away either way.
  struct Done {
    PartitionController* self;
    ~Done() {
      vipu::MutexLock lock(&self->reconcile_mu_);
      --self->reconciling_;
      ++self->reconciled_;
    }
  };
  std::shared_ptr<Done> done(new Done{this});
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
      auto it = wanted_generation.find(h.partition_id);
      if (it == wanted_generation.end() || it->second > h.generation) {
        if (it == wanted_generation.end()) {
          spdlog::info("reconcile agent {}: releasing {} (generation {}), unknown to the database",
                       agent_id, h.partition_id, h.generation);
          ReleaseOn(agent_id, h.partition_id, h.generation);
        }
      }
    }
    for (const fabric::Partition& p : wanted) {
      if (p.operation_state == fabric::OperationState::kRemoving) continue;
      if (p.ready_state != fabric::ReadyState::kActive) continue;
      auto it = held_generation.find(p.id);
      if (it != held_generation.end() && it->second == p.generation) continue;
      spdlog::info("reconcile agent {}: re-pushing partition {} (generation {})", agent_id, p.id,
                   p.generation);
      std::shared_ptr<const PartitionPlan> plan = PlanFor(p, clusters.at(p.cluster_id));
      std::vector<std::string> errors =
          ErrorsOf(*plan, driver_->Apply(AgentDriver::Op::kConfigure, plan));
      if (!errors.empty()) {
        spdlog::warn("reconcile agent {}: partition {}: {}", agent_id, p.id,
                     absl::StrJoin(errors, "; "));
      }
    }
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
