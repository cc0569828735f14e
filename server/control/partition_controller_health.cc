// PartitionController's health transitions: faults mark partitions in error; auto reset when
// allowed.
#include <utility>

#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "fabric/enum_names.h"
#include "server/control/health_decisions.h"
#include "server/control/partition_controller.h"
#include "server/control/partition_transitions.h"
#include "server/control/placement_view.h"
#include "spdlog/spdlog.h"

namespace vipu::server {

absl::StatusOr<size_t> PartitionController::MarkFaulty(const std::vector<FaultReport>& reports) {
  struct Change {
    const FaultReport* report;
    fabric::ReadyState before;
  };
  std::vector<Change> changes;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    for (const FaultReport& report : reports) {
      auto p = txn.GetPartition(report.id);
      if (!p.ok()) {
        if (absl::IsNotFound(p.status())) continue;
        return p.status();
      }
      if (p->generation != report.generation) continue;
      const bool active = p->ready_state == fabric::ReadyState::kActive &&
                          p->operation_state == fabric::OperationState::kIdle;
      const bool failed = p->ready_state == fabric::ReadyState::kError &&
                          p->operation_state != fabric::OperationState::kRemoving &&
                          p->errors != report.errors;
      if (!active && !failed) continue;
      const fabric::ReadyState before = p->ready_state;
      ToError(&*p, report.errors, NowUnixMs());
      RETURN_IF_ERROR(txn.UpdatePartitionState(*p));
      changes.push_back({&report, before});
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  for (const Change& c : changes) {
    spdlog::warn("partition {}: {} -> PS_ERROR (generation {}): {}", c.report->id,
                 fabric::WireName(c.before), c.report->generation,
                 absl::StrJoin(c.report->errors, "; "));
  }
  return changes.size();
}

absl::StatusOr<bool> PartitionController::AutoReset(const std::string& id, uint64_t generation) {
  std::optional<Restart> restart;
  uint32_t attempt = 0;
  uint32_t max = 0;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto p = txn.GetPartition(id);
    if (!p.ok()) return absl::IsNotFound(p.status()) ? absl::OkStatus() : p.status();
    if (p->generation != generation || !MayAutoReset(*p)) return absl::OkStatus();
    std::optional<std::vector<fabric::PartitionIpu>> target;
    if (p->relocatable) {
      auto found = RelocationTarget(txn, cluster_links_, *p, *registry_, absl::Now());
      // No healthy room yet: wait, without spending a retry.
      if (!found.ok()) {
        return absl::IsResourceExhausted(found.status()) ? absl::OkStatus() : found.status();
      }
      target = *std::move(found);
    }
    const int64_t now_ms = NowUnixMs();
    attempt = ++p->auto_reset_retry_count;
    max = p->max_auto_reset_retries;
    p->last_auto_reset_unix_ms = now_ms;
    ASSIGN_OR_RETURN(restart, CommitRestart(txn, &*p, std::move(target), now_ms));
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  if (!restart) return false;
  spdlog::info("partition {}: auto reset {} of {} (generation {})", id, attempt, max,
               restart->generation);
  ApplyRestart(id, *restart);
  return true;
}

}  // namespace vipu::server
