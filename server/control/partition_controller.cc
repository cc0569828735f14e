// PartitionController: start and stop, applying a generation to the agents and recording the
// outcome.
#include "server/control/partition_controller.h"

#include <memory>
#include <utility>

#include "absl/strings/str_join.h"
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
  while (background_ > 0) background_idle_.Wait(&background_mu_);
}

void PartitionController::ApplyIfCurrent(const std::string& id, uint64_t generation,
                                         AgentDriver::Op op) {
  auto partition = Get(id);
  if (!partition.ok() || partition->generation != generation) return;  // superseded
  StartApply(*partition, op);
}

void PartitionController::StartApply(const fabric::Partition& snapshot, AgentDriver::Op op) {
  // Once stopped, the operation stays pending as a crash would leave it;
  // Recover finishes it at the next start.
  if (!BeginBackground()) return;
  driver_->ApplyAsync(op, snapshot, snapshot.generation,
                      [this, snapshot, op](std::vector<std::string> errors) {
                        RecordOutcome(snapshot, op, std::move(errors));
                      });
}

void PartitionController::RecordOutcome(const fabric::Partition& snapshot, AgentDriver::Op op,
                                        std::vector<std::string> errors) {
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
  store_->WriteAsync(std::move(record), [this, snapshot, op, errors, superseded](absl::Status s) {
    const std::string& id = snapshot.id;
    const uint64_t generation = snapshot.generation;
    // Whatever the outcome, readers waiting for this partition look again.
    watch_.Announce(id);
    if (!s.ok()) {
      spdlog::error("partition {}: could not record outcome of generation {}: {}", id, generation,
                    s.ToString());
      EndBackground();
      return;
    }
    if (*superseded) {
      // A newer operation or a removal overtook this one: undo what we
      // pushed. Agents refuse the release if they already hold a newer
      // generation.
      driver_->ApplyAsync(AgentDriver::Op::kRelease, snapshot, generation,
                          [this, id, generation](std::vector<std::string>) {
                            spdlog::info("partition {}: generation {} superseded, released", id,
                                         generation);
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
