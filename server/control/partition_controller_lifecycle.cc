// PartitionController's operations on one partition: create, remove and reset, each in the order it
// runs.
#include <memory>
#include <optional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/outcome.h"
#include "base/status_macros.h"
#include "fabric/placement.h"
#include "fabric/validation.h"
#include "server/control/partition_access.h"
#include "server/control/partition_controller.h"
#include "server/control/partition_transitions.h"
#include "server/control/placement_view.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

// The partition `request` describes once placed at `ipus` in `allocation`,
// PS_PENDING/POS_CREATING at `generation`.
fabric::Partition NewPartition(const fabric::PartitionRequest& resolved,
                               std::vector<fabric::PartitionIpu> ipus,
                               const fabric::Allocation& allocation, const std::string& owner,
                               uint64_t generation, int64_t now_ms) {
  fabric::Partition p = fabric::PartitionFromRequest(resolved, std::move(ipus));
  p.cluster_id = allocation.cluster_id;
  p.allocation_id = allocation.id;
  p.owner = owner;
  ToPending(&p, generation, fabric::OperationState::kCreating, now_ms);
  p.created_unix_ms = now_ms;
  return p;
}

// Placement's refusal in one allocation, for the message that lists them
// all: "in allocation 'a', no ILD of cluster c has a free aligned block of
// 16 IPUs (agents down: ag3)". Placement's clause already says what was
// asked, so it is not said again.
std::string ExhaustedIn(const fabric::Allocation& allocation, const absl::Status& refusal,
                        const std::vector<std::string>& down) {
  std::string why = absl::StrCat("in allocation '", allocation.id, "', ", refusal.message());
  if (!down.empty()) absl::StrAppend(&why, " (agents down: ", absl::StrJoin(down, ","), ")");
  return why;
}

}  // namespace

// ---- Create: validate once; then, in one write, place in the first
// candidate allocation with room and commit PS_PENDING; reply; the agents
// are configured afterwards.

absl::StatusOr<fabric::Partition> PartitionController::Create(
    const fabric::PartitionRequest& request, const Caller& caller, bool shared) {
  RETURN_IF_ERROR(fabric::ValidatePartitionRequest(request));

  fabric::Partition created;
  std::shared_ptr<const fabric::Cluster> placed_in;  // as placement read it
  absl::Status status = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto existing = txn.GetPartition(request.id);
    if (existing.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("partition id: partition '", request.id, "' already exists"));
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();

    // Shared with the store's membership cache: no allocation is copied.
    ASSIGN_OR_RETURN(AllocationRefs candidates, CandidateAllocations(txn, request));
    RETURN_IF_ERROR(FilterAllocations(caller, request, &candidates));

    const absl::Time now = absl::Now();
    std::vector<std::string> exhausted;
    for (const std::shared_ptr<const fabric::Allocation>& candidate : candidates) {
      const fabric::Allocation& allocation = *candidate;
      ASSIGN_OR_RETURN(PlacementView view,
                       ViewOf(txn, cluster_links_, allocation, *registry_, now));
      // Defaults depend on the candidate's layout: resolved per allocation.
      ASSIGN_OR_RETURN(fabric::PartitionRequest resolved,
                       fabric::ResolveValidatedDefaults(request, *view.layout));
      fabric::PlacementRequest placement{resolved.size, resolved.num_ilds, resolved.ipus};
      auto ipus = fabric::Place(*view.layout, view.masks, placement);
      if (!ipus.ok()) {
        if (!absl::IsResourceExhausted(ipus.status())) return ipus.status();
        exhausted.push_back(ExhaustedIn(allocation, ipus.status(), view.down));
        continue;
      }
      ASSIGN_OR_RETURN(uint64_t generation, txn.NextGeneration());
      fabric::Partition p = NewPartition(resolved, *std::move(ipus), allocation, caller.user_id,
                                         generation, absl::ToUnixMillis(now));
      RETURN_IF_ERROR(txn.InsertPartition(p));
      if (shared) RETURN_IF_ERROR(txn.SetPartitionShared(p.id, true));
      created = std::move(p);
      placed_in = std::move(view.cluster);
      return absl::OkStatus();
    }
    // The field the refusal is about: the IPUs named, or the size asked.
    return absl::ResourceExhaustedError(
        absl::StrCat(request.ipus.empty() ? "size: " : "ipus: ", absl::StrJoin(exhausted, "; ")));
  });
  if (!status.ok()) {
    spdlog::info("create partition {} for {}: refused: {}", request.id, caller.Name(),
                 status.ToString());
    return status;
  }
  spdlog::info("partition {} created: {} IPUs in allocation {}, generation {}, state PS_PENDING",
               created.id, created.size(), created.allocation_id, created.generation);
  // The snapshot just committed saves reading it back; the outcome is
  // written only if the partition is still at this generation. StartApply
  // only starts the agents' calls: the reply does not wait for them.
  StartApply(created, PlanFor(created, placed_in), AgentDriver::Op::kConfigure);
  return created;
}

// ---- Remove: commit POS_REMOVING; the agents release; the row is deleted.
// Each step is started by the thread that finished the one before (the
// writer after a commit, an agent call's callback after the release); the
// caller's thread only waits for the end.

class PartitionController::Removal : public std::enable_shared_from_this<Removal> {
 public:
  Removal(PartitionController* controller, std::string id, bool force, Caller caller)
      : c_(controller), id_(std::move(id)), force_(force), caller_(std::move(caller)) {}

  // Runs the steps below and returns the answer of the last one.
  absl::Status Run() {
    MarkRemoving();
    return outcome_.Wait();
  }

 private:
  // 1. Commit POS_REMOVING, once the caller's access is checked. A second
  // remove of one being removed needs force.
  void MarkRemoving() {
    auto self = shared_from_this();
    c_->store_->WriteAsync(
        [self](storage::WriteTxn& txn) -> absl::Status {
          ASSIGN_OR_RETURN(fabric::Partition p, LoadPartition(txn, self->id_));
          RETURN_IF_ERROR(CheckAccess(txn, self->caller_, p, "remove"));
          if (p.operation_state == fabric::OperationState::kRemoving && !self->force_) {
            return absl::FailedPreconditionError(absl::StrCat(
                "partition '", self->id_, "' is already being removed; use force to remove it"));
          }
          ToRemoving(&p, NowUnixMs());
          self->partition_ = p;
          return txn.UpdatePartitionState(p);
        },
        [self](absl::Status s) { self->Release(std::move(s)); });
  }

  // 2. Every machine holding the partition releases it.
  void Release(absl::Status marked) {
    if (!marked.ok()) return outcome_.Set(std::move(marked));
    spdlog::info("partition {}: POS_REMOVING (generation {})", id_, partition_.generation);
    auto self = shared_from_this();
    auto plan = std::make_shared<const PartitionPlan>(
        PlanPartition(partition_, *c_->registry_, /*links=*/nullptr));
    c_->driver_->ApplyAsync(
        AgentDriver::Op::kRelease, plan,
        [self, plan](AgentDriver::Results results) { self->Released(ErrorsOf(*plan, results)); });
  }

  // 3. The machines answered: delete the row; with errors and no force,
  // the partition is in error instead.
  void Released(std::vector<std::string> errors) {
    if (!errors.empty() && !force_) return RecordRefusal(std::move(errors));
    if (!errors.empty()) {
      spdlog::warn("partition {}: forced removal ignores agent errors: {}", id_,
                   absl::StrJoin(errors, "; "));
    }
    auto self = shared_from_this();
    c_->store_->WriteAsync(
        [self](storage::WriteTxn& txn) -> absl::Status {
          auto p = txn.GetPartition(self->id_);
          if (!p.ok()) return absl::IsNotFound(p.status()) ? absl::OkStatus() : p.status();
          return txn.DeletePartition(self->id_);
        },
        [self](absl::Status s) { self->Deleted(std::move(s)); });
  }

  // 4. Gone: its IPUs are free, and readers waiting for it look again.
  void Deleted(absl::Status s) {
    if (!s.ok()) return outcome_.Set(std::move(s));
    c_->watch_.Announce(id_);
    spdlog::info("partition {}: removed, {} IPUs free", id_, partition_.size());
    outcome_.Set(absl::OkStatus());
  }

  // 3'. The agents did not release it: PS_ERROR with their errors (if it
  // is still at this generation), and the caller is told to retry or force.
  void RecordRefusal(std::vector<std::string> errors) {
    const uint64_t generation = partition_.generation;
    std::string message = absl::StrJoin(errors, "; ");
    auto self = shared_from_this();
    c_->store_->WriteAsync(
        [self, generation, errors = std::move(errors)](storage::WriteTxn& txn) -> absl::Status {
          auto p = txn.GetPartition(self->id_);
          if (!p.ok() || p->generation != generation) return absl::OkStatus();
          ToError(&*p, errors, NowUnixMs());
          return txn.UpdatePartitionState(*p);
        },
        [self, message](absl::Status) {
          spdlog::warn("partition {}: remove failed: {}", self->id_, message);
          self->outcome_.Set(absl::UnavailableError(
              absl::StrCat("agents did not release partition '", self->id_, "': ", message,
                           "; retry, or remove with force")));
        });
  }

  PartitionController* const c_;
  const std::string id_;
  const bool force_;
  const Caller caller_;
  fabric::Partition partition_;  // as marked removing; set on the writer thread
  vipu::Outcome<absl::Status> outcome_;
};

absl::Status PartitionController::Remove(const std::string& id, bool force, const Caller& caller) {
  return std::make_shared<Removal>(this, id, force, caller)->Run();
}

// ---- Reset: commit a new generation, PS_PENDING; reply; the agents reset
// it in place, or configure the healthy IPUs a relocatable one moved to.

absl::StatusOr<PartitionController::Restart> PartitionController::CommitRestart(
    storage::WriteTxn& txn, fabric::Partition* p,
    std::optional<std::vector<fabric::PartitionIpu>> target, int64_t now_ms) {
  Restart restart;
  if (target) {
    restart.left = MachinesLeft(p->ipus, *target);
    p->ipus = std::move(*target);
    restart.moved = true;
  }
  ASSIGN_OR_RETURN(restart.generation, txn.NextGeneration());
  ToPending(p, restart.generation,
            restart.moved ? fabric::OperationState::kCreating : fabric::OperationState::kResetting,
            now_ms);
  RETURN_IF_ERROR(restart.moved ? txn.UpdatePartition(*p) : txn.UpdatePartitionState(*p));
  return restart;
}

absl::Status PartitionController::Reset(const std::string& id, const Caller& caller,
                                        bool relocatable) {
  Restart restart;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(fabric::Partition p, LoadPartition(txn, id));
    RETURN_IF_ERROR(CheckAccess(txn, caller, p, "reset"));
    if (p.operation_state == fabric::OperationState::kRemoving) {
      return absl::FailedPreconditionError(absl::StrCat("partition '", id, "' is being removed"));
    }
    std::optional<std::vector<fabric::PartitionIpu>> target;
    if (relocatable || p.relocatable) {
      auto found = RelocationTarget(txn, cluster_links_, p, *registry_, absl::Now());
      if (!found.ok()) {
        // Asked for on this reset, a move that cannot happen is an answer
        // the caller needs; a partition created relocatable is reset in
        // place, as any other, and may recover when its faults clear.
        if (relocatable) return found.status();
        spdlog::warn("partition {}: {}; resetting in place", id,
                     std::string(found.status().message()));
      } else {
        target = *std::move(found);
      }
    }
    p.auto_reset_retry_count = 0;  // a manual reset starts a fresh retry budget
    ASSIGN_OR_RETURN(restart, CommitRestart(txn, &p, std::move(target), NowUnixMs()));
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  if (!restart.moved) {
    spdlog::info("partition {}: POS_RESETTING (generation {})", id, restart.generation);
  }
  ApplyRestart(id, restart);
  return absl::OkStatus();
}

void PartitionController::ApplyRestart(const std::string& id, const Restart& restart) {
  if (restart.moved) {
    ApplyMove(id, restart.generation, restart.left);
    return;
  }
  const uint64_t generation = restart.generation;
  work_.Post([this, id, generation] { ApplyIfCurrent(id, generation, AgentDriver::Op::kReset); });
}

void PartitionController::ApplyMove(const std::string& id, uint64_t generation,
                                    std::vector<std::string> left) {
  spdlog::info("partition {}: moved to healthy IPUs (generation {}), leaving [{}]", id, generation,
               absl::StrJoin(left, ","));
  // The new IPUs are configured afresh (a machine that keeps some of them
  // replaces its older generation); the machines left behind release it. A
  // crash before the release is mended when those agents register again
  // (ReconcileAgent drops what the database no longer places there).
  work_.Post([this, id, generation, left = std::move(left)] {
    for (const std::string& agent : left) {
      for (const std::string& e : ReleaseOn(agent, id, generation)) {
        spdlog::warn("partition {}: release after the move: {}", id, e);
      }
    }
    ApplyIfCurrent(id, generation, AgentDriver::Op::kConfigure);
  });
}

}  // namespace vipu::server
