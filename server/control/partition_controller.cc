// PartitionController: start and stop, applying a generation to the agents and recording the
// outcome.
#include "server/control/partition_controller.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <utility>

#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "server/control/partition_access.h"
#include "server/control/partition_transitions.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

PartitionController::PartitionController(storage::Store* store, ClusterLinksCache* cluster_links,
                                         const AgentRegistry* registry, AgentDriver* driver,
                                         int worker_threads)
    : store_(store),
      cluster_links_(cluster_links),
      registry_(registry),
      driver_(driver),
      work_(worker_threads) {}

PartitionController::~PartitionController() { Stop(); }

void PartitionController::Stop() {
  work_.Stop();
  // Jobs may have started operations that finish on other threads.
  vipu::MutexLock lock(&background_mu_);
  stopped_ = true;
  // Outcomes still refused are left for the next start's Recover.
  background_ -= static_cast<int>(refused_.size());
  refused_.clear();
  while (background_ > 0) background_idle_.Wait(&background_mu_);
}

void PartitionController::ApplyIfCurrent(const std::string& id, uint64_t generation,
                                         AgentDriver::Op op) {
  std::optional<fabric::Partition> current;
  absl::StatusOr<std::shared_ptr<const fabric::Cluster>> cluster;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(fabric::Partition p, LoadPartition(txn, id));
    if (p.generation != generation) return absl::OkStatus();  // superseded
    cluster = txn.ClusterRef(p.cluster_id);
    current = std::move(p);
    return absl::OkStatus();
  });
  if (!s.ok() || !current) return;
  StartApply(*current, PlanFor(*current, cluster), op);
}

std::shared_ptr<const PartitionPlan> PartitionController::PlanFor(
    const fabric::Partition& p,
    const absl::StatusOr<std::shared_ptr<const fabric::Cluster>>& cluster) const {
  absl::StatusOr<std::shared_ptr<const ClusterLinks>> links =
      cluster.ok() ? cluster_links_->LinksOf(*cluster) : cluster.status();
  if (!links.ok()) {
    spdlog::warn("partition {}: no link ports claimed: {}", p.id,
                 std::string(links.status().message()));
  }
  return std::make_shared<const PartitionPlan>(
      PlanPartition(p, *registry_, links.ok() ? links->get() : nullptr));
}

void PartitionController::StartApply(const fabric::Partition& snapshot,
                                     std::shared_ptr<const PartitionPlan> plan,
                                     AgentDriver::Op op) {
  // Once stopped, the operation stays pending as a crash would leave it;
  // Recover finishes it at the next start.
  if (!BeginBackground()) return;
  driver_->ApplyAsync(op, plan, [this, snapshot, plan, op](AgentDriver::Results results) {
    auto lost = op == AgentDriver::Op::kReset
                    ? std::make_shared<const PartitionPlan>(MachinesThatLostIt(*plan, results))
                    : nullptr;
    if (lost == nullptr || lost->machines.empty()) {
      RecordOutcome(snapshot, op, ErrorsOf(*plan, results));
      return;
    }
    // Machines that lost the partition (an agent restart) get it configured
    // afresh at the same generation; their errors are those of that.
    std::vector<std::string> errors = ErrorsOf(*plan, results, /*lost_counts=*/false);
    driver_->ApplyAsync(AgentDriver::Op::kConfigure, lost,
                        [this, snapshot, op, lost, errors](AgentDriver::Results again) mutable {
                          for (std::string& e : ErrorsOf(*lost, again)) {
                            errors.push_back(std::move(e));
                          }
                          RecordOutcome(snapshot, op, std::move(errors));
                        });
  });
}

std::vector<std::string> PartitionController::ReleaseOn(const std::string& agent_id,
                                                        const std::string& partition_id,
                                                        uint64_t generation) {
  auto plan = std::make_shared<const PartitionPlan>(
      PlanOneMachine(agent_id, partition_id, generation, *registry_));
  return ErrorsOf(*plan, driver_->Apply(AgentDriver::Op::kRelease, plan));
}

void PartitionController::RecordOutcome(const fabric::Partition& snapshot, AgentDriver::Op op,
                                        std::vector<std::string> errors, int attempts) {
  const std::string id = snapshot.id;
  const uint64_t generation = snapshot.generation;
  // Set by the write and read in its callback, both on the writer thread.
  auto superseded = std::make_shared<bool>(false);
  auto record = [id, generation, errors, superseded](storage::WriteTxn& txn) -> absl::Status {
    auto current = txn.GetPartition(id);
    if (!current.ok()) {
      *superseded = true;
      return absl::IsNotFound(current.status()) ? absl::OkStatus() : current.status();
    }
    if (current->generation != generation ||
        current->operation_state == fabric::OperationState::kRemoving) {
      *superseded = true;
      return absl::OkStatus();
    }
    ToOutcome(&*current, errors, NowUnixMs());
    return txn.UpdatePartitionState(*current);
  };
  store_->WriteAsync(std::move(record), [this, snapshot, op, errors, superseded,
                                         attempts](absl::Status s) {
    const std::string& id = snapshot.id;
    const uint64_t generation = snapshot.generation;
    // Whatever the outcome, readers waiting for this partition look again.
    watch_.Announce(id);
    if (!s.ok()) {
      // Said once; the retries that fail too only to the debug log.
      if (attempts == 0) {
        spdlog::error(
            "partition {}: could not record outcome of generation {}: {}; it stays PS_PENDING "
            "until the outcome is written, tried again every second",
            id, generation, s.ToString());
      } else {
        spdlog::debug("partition {}: outcome of generation {} refused again ({} times): {}", id,
                      generation, attempts + 1, s.ToString());
      }
      KeepRefused({snapshot, op, errors, absl::Now(), attempts + 1});
      return;
    }
    if (attempts > 0) {
      spdlog::info("partition {}: outcome of generation {} recorded after {} refusals", id,
                   generation, attempts);
    }
    if (*superseded) {
      // A newer operation or a removal overtook this one: undo what we
      // pushed. Agents refuse the release if they already hold a newer
      // generation.
      auto plan = std::make_shared<const PartitionPlan>(
          PlanPartition(snapshot, *registry_, /*links=*/nullptr));
      driver_->ApplyAsync(
          AgentDriver::Op::kRelease, std::move(plan), [this, id, generation](AgentDriver::Results) {
            spdlog::info("partition {}: generation {} superseded, released", id, generation);
            EndBackground();
          });
      return;
    }
    if (errors.empty()) {
      spdlog::info("partition {}: {} -> PS_ACTIVE (generation {})", id,
                   op == AgentDriver::Op::kReset ? "reset" : "configured", generation);
    } else {
      spdlog::warn("partition {}: -> PS_ERROR (generation {}): {}", id, generation,
                   absl::StrJoin(errors, "; "));
    }
    EndBackground();
  });
}

void PartitionController::KeepRefused(RefusedOutcome refused) {
  vipu::MutexLock lock(&background_mu_);
  if (stopped_) {
    if (--background_ == 0) background_idle_.SignalAll();
    return;
  }
  refused_.push_back(std::move(refused));
}

size_t PartitionController::RecordRefusedOutcomes(absl::Time now, absl::Duration retry_after) {
  std::vector<RefusedOutcome> due;
  {
    vipu::MutexLock lock(&background_mu_);
    auto not_due = std::partition(refused_.begin(), refused_.end(), [&](const RefusedOutcome& r) {
      return now - r.refused_at < retry_after;
    });
    std::move(not_due, refused_.end(), std::back_inserter(due));
    refused_.erase(not_due, refused_.end());
  }
  // Each is still counted as background work: RecordOutcome ends it, or
  // keeps it again.
  for (RefusedOutcome& r : due) {
    RecordOutcome(r.snapshot, r.op, std::move(r.errors), r.attempts);
  }
  return due.size();
}

bool PartitionController::AwaitRefusedOutcomesForTesting(size_t n, absl::Time deadline) {
  vipu::MutexLock lock(&background_mu_);
  auto counted = [this, n]()
                     ABSL_EXCLUSIVE_LOCKS_REQUIRED(background_mu_) { return refused_.size() == n; };
  return background_mu_.AwaitWithDeadline(absl::Condition(&counted), deadline);
}

bool PartitionController::BeginBackground() {
  vipu::MutexLock lock(&background_mu_);
  if (stopped_) return false;
  ++background_;
  return true;
}

void PartitionController::EndBackground() {
  vipu::MutexLock lock(&background_mu_);
  if (--background_ == 0) background_idle_.SignalAll();
}

}  // namespace vipu::server
