// PartitionController: create, reset, remove, reconcile, recover and health of partitions.
#include "server/partition_controller.h"

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/outcome.h"
#include "fabric/enum_names.h"
#include "fabric/placement.h"
#include "fabric/topology.h"
#include "fabric/validation.h"
#include "server/cluster_links.h"
#include "server/partition_problems.h"
#include "spdlog/spdlog.h"
#include "wire/attribute_names.h"

namespace vipu::server {
namespace {

int64_t NowMs() { return absl::ToUnixMillis(absl::Now()); }

// The partition, or NOT_FOUND naming the id as the caller gave it.
absl::StatusOr<fabric::Partition> LoadPartition(storage::ReadTxn& txn, const std::string& id) {
  auto p = txn.GetPartition(id);
  if (absl::IsNotFound(p.status())) {
    return absl::NotFoundError(absl::StrCat("partition id: partition '", id, "' not found"));
  }
  return p;
}

// PERMISSION_DENIED (logged with the user and the action) unless `caller`
// may act on `p`: own or shared, in a granted allocation.
absl::Status CheckAccess(storage::ReadTxn& txn, const auth::Caller& caller,
                         const fabric::Partition& p, const char* action) {
  if (caller.Unrestricted()) return absl::OkStatus();
  bool shared = false;
  if (p.owner != caller.user_id) {
    auto s = txn.IsPartitionShared(p.id);
    if (!s.ok()) return s.status();
    shared = *s;
  }
  if (caller.MaySee(p, shared)) return absl::OkStatus();
  spdlog::warn("refused {} partition {} for {}: not its partition (owner '{}', allocation {})",
               action, p.id, caller.Name(), p.owner, p.allocation_id);
  return absl::PermissionDeniedError(
      absl::StrCat("permission denied: partition id: user '", caller.user_id, "' may not ", action,
                   " partition '", p.id, "' (neither its own nor shared in a granted allocation)"));
}

// Keeps the allocations `caller` may use; PERMISSION_DENIED when the request
// names one it may not, or none is left.
absl::Status FilterAllocations(const auth::Caller& caller, const fabric::PartitionRequest& request,
                               std::vector<fabric::Allocation>* candidates) {
  if (caller.Unrestricted()) return absl::OkStatus();
  std::vector<fabric::Allocation> allowed;
  for (fabric::Allocation& a : *candidates) {
    if (caller.MayUseAllocation(a.id)) allowed.push_back(std::move(a));
  }
  if (allowed.empty()) {
    std::string what = request.allocation_id.empty()
                           ? std::string("any allocation here")
                           : absl::StrCat("allocation '", request.allocation_id, "'");
    spdlog::warn("refused create partition {} for {}: no access to {}", request.id, caller.Name(),
                 what);
    return absl::PermissionDeniedError(absl::StrCat("permission denied: allocation_id: user '",
                                                    caller.user_id, "' has no access to ", what));
  }
  *candidates = std::move(allowed);
  return absl::OkStatus();
}

// Allocations a request may be placed in, in the order they are tried.
absl::StatusOr<std::vector<fabric::Allocation>> CandidateAllocations(
    storage::ReadTxn& txn, const fabric::PartitionRequest& request) {
  if (!request.allocation_id.empty()) {
    auto allocation = txn.GetAllocation(request.allocation_id);
    if (!allocation.ok()) {
      if (absl::IsNotFound(allocation.status())) {
        return absl::NotFoundError(
            absl::StrCat("allocation_id: allocation '", request.allocation_id, "' not found"));
      }
      return allocation.status();
    }
    if (!request.cluster_id.empty() && allocation->cluster_id != request.cluster_id) {
      return absl::InvalidArgumentError(absl::StrCat("cluster_id: allocation '", allocation->id,
                                                     "' is on cluster '", allocation->cluster_id,
                                                     "', not '", request.cluster_id, "'"));
    }
    return std::vector<fabric::Allocation>{*allocation};
  }
  if (!request.cluster_id.empty()) {
    auto cluster = txn.GetCluster(request.cluster_id);
    if (!cluster.ok()) {
      if (absl::IsNotFound(cluster.status())) {
        return absl::NotFoundError(
            absl::StrCat("cluster_id: cluster '", request.cluster_id, "' not found"));
      }
      return cluster.status();
    }
  }
  auto all = txn.ListAllocations();
  if (!all.ok()) return all.status();
  std::vector<fabric::Allocation> out;
  for (fabric::Allocation& a : *all) {
    if (request.cluster_id.empty() || a.cluster_id == request.cluster_id)
      out.push_back(std::move(a));
  }
  if (out.empty()) {
    return absl::FailedPreconditionError(
        request.cluster_id.empty()
            ? std::string("allocation_id: no allocation exists; create one with vipu-admin")
            : absl::StrCat("cluster_id: cluster '", request.cluster_id, "' has no allocation"));
  }
  return out;
}

// The machines of `layout` (by index) placement may use: in `allocation` and
// Up at `now`; the allocation's agents that are not Up go to *down. One
// registry lock (Pulses, by id) swept against the layout in id order, and the
// allocation matched in the cluster's order, instead of a locked map lookup
// and a hash lookup for each of up to 16,384 machines per create.
std::vector<bool> AllowedMachines(const fabric::ClusterLayout& layout,
                                  const fabric::Allocation& allocation,
                                  const AgentRegistry& registry, absl::Time now,
                                  std::vector<std::string>* down) {
  const std::vector<std::string>& ids = layout.cluster().agent_ids;
  std::vector<bool> up(ids.size(), false);
  fabric::SortedAgentCursor cursor(layout);
  for (const AgentPulse& pulse : registry.Pulses()) {
    if (now - pulse.last_heartbeat >= registry.timeout()) continue;  // as IsUp
    if (auto index = cursor.Find(pulse.id)) up[*index] = true;
  }
  std::vector<bool> allowed(ids.size(), false);
  size_t next = 0;  // where the allocation's next agent usually is
  for (const std::string& agent : allocation.agent_ids) {
    std::optional<uint32_t> index;
    if (next < ids.size() && ids[next] == agent) {
      index = static_cast<uint32_t>(next);
    } else {
      index = layout.MachineIndex(agent);
    }
    if (!index) {  // not in the cluster: never placed on, down only if not Up
      if (!registry.IsUp(agent, now)) down->push_back(agent);
      continue;
    }
    next = *index + 1;
    if (up[*index]) {
      allowed[*index] = true;
    } else {
      down->push_back(agent);
    }
  }
  return allowed;
}

// What placement in `allocation` sees at `now`: the cluster's layout as the
// database has it, and the masks of the IPUs it may use and of those held.
// Create and Capacity both place from this, so the console's capacity is
// what a create would get.
struct PlacementView {
  std::shared_ptr<const fabric::ClusterLayout> layout;
  fabric::IldMasks masks;
  std::vector<std::string> down;  // the allocation's agents that are not Up
};

absl::StatusOr<PlacementView> ViewOf(storage::ReadTxn& txn, ClusterLinksCache* cluster_links,
                                     const fabric::Allocation& allocation,
                                     const AgentRegistry& registry, absl::Time now) {
  auto cluster = txn.GetCluster(allocation.cluster_id);
  if (!cluster.ok()) return cluster.status();
  auto layout = cluster_links->LayoutOf(*cluster);
  if (!layout.ok()) return layout.status();
  auto used = txn.UsedIpus(cluster->id);
  if (!used.ok()) return used.status();
  PlacementView view;
  view.layout = *std::move(layout);
  const std::vector<bool> allowed =
      AllowedMachines(*view.layout, allocation, registry, now, &view.down);
  view.masks = fabric::MasksOf(*view.layout, allowed, *used);
  return view;
}

// Marks every IPU of `agent_id` used in `masks` (a machine whose Sync-Link
// or GW-Link is down is avoided as a whole).
void MarkMachineUsed(const fabric::ClusterLayout& layout, const std::string& agent_id,
                     fabric::IldMasks* masks) {
  std::optional<uint32_t> machine = layout.MachineIndex(agent_id);
  if (!machine) return;
  for (uint32_t ipu = 0; ipu < fabric::kIpusPerMachine; ++ipu) {
    auto [ild, topology_id] = layout.PositionAt(*machine, ipu);
    masks->used[ild] |= uint64_t{1} << topology_id;
  }
}

void MarkIpuUsed(const fabric::ClusterLayout& layout, const fabric::IpuRef& ipu,
                 fabric::IldMasks* masks) {
  if (auto position = layout.PositionOf(ipu)) {
    masks->used[position->first] |= uint64_t{1} << position->second;
  }
}

// Where a relocatable partition goes when it is reset. nullopt when nothing
// is wrong where it is (a reset then keeps it there). Otherwise IPUs of its
// allocation on Up machines, held by no other partition, with no IPU error
// and no downed link: its own healthy IPUs may be reused. RESOURCE_EXHAUSTED
// when no such aligned block is free.
absl::StatusOr<std::optional<std::vector<fabric::PartitionIpu>>> RelocationTarget(
    storage::ReadTxn& txn, ClusterLinksCache* cluster_links, const fabric::Partition& p,
    const AgentRegistry& registry, absl::Time now) {
  auto cluster = txn.GetCluster(p.cluster_id);
  if (!cluster.ok()) return cluster.status();
  auto links = cluster_links->LinksOf(*cluster);
  if (!links.ok()) return links.status();
  const std::vector<std::string> problems = PartitionProblems(p, **links, registry, now);
  if (problems.empty()) return std::nullopt;
  auto allocation = txn.GetAllocation(p.allocation_id);
  if (!allocation.ok()) return allocation.status();
  auto view = ViewOf(txn, cluster_links, *allocation, registry, now);
  if (!view.ok()) return view.status();
  const fabric::ClusterLayout& layout = *view->layout;
  fabric::IldMasks& masks = view->masks;
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    masks.used[ipu.ild] &= ~(uint64_t{1} << ipu.topology_id);
  }
  for (const std::string& agent : allocation->agent_ids) {
    std::optional<LiveAgent> live = registry.Get(agent);
    if (!live) continue;  // not Up: ViewOf did not allow it
    for (const auto& [ipu, error] : live->health.ipu_errors) {
      MarkIpuUsed(layout, fabric::IpuRef{agent, ipu}, &masks);
    }
    for (const auto& [port, what] : live->health.links_down) {
      const fabric::Link* link = (*links)->topology.Find(agent, port);
      if (link == nullptr) continue;
      for (const fabric::LinkEnd* end : {&link->a, &link->b}) {
        if (link->kind == fabric::LinkKind::kIpuLink) {
          MarkIpuUsed(layout, fabric::IpuRef{end->agent_id, end->ipu}, &masks);
        } else {
          MarkMachineUsed(layout, end->agent_id, &masks);
        }
      }
    }
  }
  fabric::PlacementRequest request{p.size(), p.num_ilds, {}};
  auto ipus = fabric::Place(layout, masks, request);
  if (!ipus.ok()) {
    return absl::Status(ipus.status().code(),
                        absl::StrCat("cannot move partition '", p.id, "' away from ",
                                     absl::StrJoin(problems, "; "), ": ", ipus.status().message()));
  }
  return std::optional<std::vector<fabric::PartitionIpu>>(*std::move(ipus));
}

// Machines of `before` that `after` no longer uses.
std::vector<std::string> MachinesLeft(const std::vector<fabric::PartitionIpu>& before,
                                      const std::vector<fabric::PartitionIpu>& after) {
  std::set<std::string> kept, left;
  for (const fabric::PartitionIpu& ipu : after) kept.insert(ipu.ipu.agent_id);
  for (const fabric::PartitionIpu& ipu : before) {
    if (!kept.count(ipu.ipu.agent_id)) left.insert(ipu.ipu.agent_id);
  }
  return {left.begin(), left.end()};
}

}  // namespace

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

absl::StatusOr<fabric::Partition> PartitionController::Create(
    const fabric::PartitionRequest& request, const auth::Caller& caller, bool shared) {
  const std::string& owner = caller.user_id;
  if (absl::Status s = fabric::ValidatePartitionRequest(request); !s.ok()) return s;

  fabric::Partition created;
  absl::Status status = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto existing = txn.GetPartition(request.id);
    if (existing.ok()) {
      return absl::AlreadyExistsError(
          absl::StrCat("partition id: partition '", request.id, "' already exists"));
    }
    if (!absl::IsNotFound(existing.status())) return existing.status();

    auto candidates = CandidateAllocations(txn, request);
    if (!candidates.ok()) return candidates.status();
    if (absl::Status s = FilterAllocations(caller, request, &*candidates); !s.ok()) return s;

    const absl::Time now = absl::Now();
    std::vector<std::string> exhausted;
    for (const fabric::Allocation& allocation : *candidates) {
      auto view = ViewOf(txn, cluster_links_, allocation, *registry_, now);
      if (!view.ok()) return view.status();
      const fabric::ClusterLayout& layout = *view->layout;
      auto resolved = fabric::ResolveDefaults(request, layout);
      if (!resolved.ok()) return resolved.status();
      fabric::PlacementRequest placement{resolved->size, resolved->num_ilds, resolved->ipus};
      auto ipus = fabric::Place(layout, view->masks, placement);
      if (!ipus.ok()) {
        if (!absl::IsResourceExhausted(ipus.status())) return ipus.status();
        std::string why =
            absl::StrCat("allocation '", allocation.id, "': ", ipus.status().message());
        if (!view->down.empty()) {
          absl::StrAppend(&why, " (agents down: ", absl::StrJoin(view->down, ","), ")");
        }
        exhausted.push_back(std::move(why));
        continue;
      }

      auto generation = txn.NextGeneration();
      if (!generation.ok()) return generation.status();
      fabric::Partition p = fabric::PartitionFromRequest(*resolved, std::move(*ipus));
      p.cluster_id = allocation.cluster_id;
      p.allocation_id = allocation.id;
      p.owner = owner;
      p.ready_state = fabric::ReadyState::kPending;
      p.operation_state = fabric::OperationState::kCreating;
      p.generation = *generation;
      p.created_unix_ms = p.updated_unix_ms = absl::ToUnixMillis(now);
      if (absl::Status s = txn.InsertPartition(p); !s.ok()) return s;
      if (shared) {
        if (absl::Status s = txn.SetPartitionShared(p.id, true); !s.ok()) return s;
      }
      created = std::move(p);
      return absl::OkStatus();
    }
    return absl::ResourceExhaustedError(absl::StrCat("size: no free block of ", request.size,
                                                     " IPUs: ", absl::StrJoin(exhausted, "; ")));
  });
  if (!status.ok()) {
    spdlog::info("create partition {} for {}: refused: {}", request.id, caller.Name(),
                 status.ToString());
    return status;
  }
  spdlog::info("partition {} created: {} IPUs in allocation {}, generation {}, state PS_PENDING",
               created.id, created.size(), created.allocation_id, created.generation);
  // The snapshot just committed saves reading it back; the outcome is
  // written only if the partition is still at this generation. Converge
  // only starts the agents' calls: the reply does not wait for them.
  Converge(created, Job::kConfigure);
  return created;
}

void PartitionController::Converge(const std::string& id, uint64_t generation, Job job) {
  auto partition = Get(id);
  if (!partition.ok() || partition->generation != generation) return;  // superseded
  Converge(*partition, job);
}

void PartitionController::Converge(const fabric::Partition& snapshot, Job job) {
  // Once stopped, the operation stays pending as a crash would leave it;
  // Recover finishes it at the next start.
  if (!BeginBackground()) return;
  driver_->ApplyAsync(job == Job::kReset ? AgentDriver::Op::kReset : AgentDriver::Op::kConfigure,
                      snapshot, snapshot.generation,
                      [this, snapshot, job](std::vector<std::string> errors) {
                        RecordOutcome(snapshot, job, std::move(errors));
                      });
}

void PartitionController::RecordOutcome(const fabric::Partition& snapshot, Job job,
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
    current->ready_state =
        errors.empty() ? fabric::ReadyState::kActive : fabric::ReadyState::kError;
    current->operation_state =
        errors.empty() ? fabric::OperationState::kIdle : fabric::OperationState::kFailed;
    current->errors = errors;
    current->updated_unix_ms = NowMs();
    return txn.UpdatePartitionState(*current);
  };
  store_->WriteAsync(std::move(record), [this, snapshot, job, errors, superseded](absl::Status s) {
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
                   job == Job::kReset ? "reset" : "configured", generation);
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

absl::Status PartitionController::Remove(const std::string& id, bool force,
                                         const auth::Caller& caller) {
  // Each step is started by the thread that finished the one before (the
  // writer after a commit, an agent call's callback after the release);
  // this thread only waits for the end.
  struct Removal {
    fabric::Partition partition;  // as marked removing; set on the writer thread
    vipu::Outcome<absl::Status> outcome;
  };
  auto removal = std::make_shared<Removal>();

  auto forget = [this, removal, id](absl::Status s) {
    if (!s.ok()) {
      removal->outcome.Set(std::move(s));
      return;
    }
    watch_.Announce(id);
    spdlog::info("partition {}: removed, {} IPUs free", id, removal->partition.size());
    removal->outcome.Set(absl::OkStatus());
  };
  auto released = [this, removal, id, force, forget](std::vector<std::string> errors) {
    const uint64_t generation = removal->partition.generation;
    if (!errors.empty() && !force) {
      std::string message = absl::StrJoin(errors, "; ");
      store_->WriteAsync(
          [id, generation, errors](storage::WriteTxn& txn) -> absl::Status {
            auto p = txn.GetPartition(id);
            if (!p.ok() || p->generation != generation) return absl::OkStatus();
            p->ready_state = fabric::ReadyState::kError;
            p->operation_state = fabric::OperationState::kFailed;
            p->errors = errors;
            p->updated_unix_ms = NowMs();
            return txn.UpdatePartitionState(*p);
          },
          [removal, id, message](absl::Status) {
            spdlog::warn("partition {}: remove failed: {}", id, message);
            removal->outcome.Set(absl::UnavailableError(
                absl::StrCat("agents did not release partition '", id, "': ", message,
                             "; retry, or remove with force")));
          });
      return;
    }
    if (!errors.empty()) {
      spdlog::warn("partition {}: forced removal ignores agent errors: {}", id,
                   absl::StrJoin(errors, "; "));
    }
    store_->WriteAsync(
        [id](storage::WriteTxn& txn) -> absl::Status {
          auto p = txn.GetPartition(id);
          if (!p.ok()) return absl::IsNotFound(p.status()) ? absl::OkStatus() : p.status();
          return txn.DeletePartition(id);
        },
        forget);
  };
  store_->WriteAsync(
      [removal, id, force, caller](storage::WriteTxn& txn) -> absl::Status {
        auto p = LoadPartition(txn, id);
        if (!p.ok()) return p.status();
        if (absl::Status a = CheckAccess(txn, caller, *p, "remove"); !a.ok()) return a;
        if (p->operation_state == fabric::OperationState::kRemoving && !force) {
          return absl::FailedPreconditionError(absl::StrCat(
              "partition '", id, "' is already being removed; use force to remove it"));
        }
        p->operation_state = fabric::OperationState::kRemoving;
        p->updated_unix_ms = NowMs();
        removal->partition = *p;
        return txn.UpdatePartitionState(*p);
      },
      [this, removal, id, released](absl::Status s) {
        if (!s.ok()) {
          removal->outcome.Set(std::move(s));
          return;
        }
        spdlog::info("partition {}: POS_REMOVING (generation {})", id,
                     removal->partition.generation);
        driver_->ApplyAsync(AgentDriver::Op::kRelease, removal->partition,
                            removal->partition.generation, released);
      });

  return removal->outcome.Wait();
}

absl::Status PartitionController::Reset(const std::string& id, const auth::Caller& caller,
                                        bool relocatable) {
  uint64_t generation = 0;
  std::vector<std::string> left;
  bool moved = false;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto p = LoadPartition(txn, id);
    if (!p.ok()) return p.status();
    if (absl::Status a = CheckAccess(txn, caller, *p, "reset"); !a.ok()) return a;
    if (p->operation_state == fabric::OperationState::kRemoving) {
      return absl::FailedPreconditionError(absl::StrCat("partition '", id, "' is being removed"));
    }
    if (relocatable || p->relocatable) {
      auto target = RelocationTarget(txn, cluster_links_, *p, *registry_, absl::Now());
      if (!target.ok()) {
        // Asked for on this reset, a move that cannot happen is an answer
        // the caller needs; a partition created relocatable is reset in
        // place, as any other, and may recover when its faults clear.
        if (relocatable) return target.status();
        spdlog::warn("partition {}: {}; resetting in place", id,
                     std::string(target.status().message()));
      } else if (target->has_value()) {
        left = MachinesLeft(p->ipus, **target);
        p->ipus = std::move(**target);
        moved = true;
      }
    }
    auto g = txn.NextGeneration();
    if (!g.ok()) return g.status();
    generation = *g;
    p->generation = generation;
    p->ready_state = fabric::ReadyState::kPending;
    p->operation_state =
        moved ? fabric::OperationState::kCreating : fabric::OperationState::kResetting;
    p->errors.clear();
    p->auto_reset_retry_count = 0;  // a manual reset starts a fresh retry budget
    p->updated_unix_ms = NowMs();
    return moved ? txn.UpdatePartition(*p) : txn.UpdatePartitionState(*p);
  });
  if (!s.ok()) return s;
  if (!moved) spdlog::info("partition {}: POS_RESETTING (generation {})", id, generation);
  PostMoveOrReset(id, generation, moved, std::move(left));
  return absl::OkStatus();
}

void PartitionController::PostMoveOrReset(const std::string& id, uint64_t generation, bool moved,
                                          std::vector<std::string> left) {
  if (moved) {
    PostMove(id, generation, std::move(left));
  } else {
    work_.Post([this, id, generation] { Converge(id, generation, Job::kReset); });
  }
}

void PartitionController::PostMove(const std::string& id, uint64_t generation,
                                   std::vector<std::string> left) {
  spdlog::info("partition {}: moved to healthy IPUs (generation {}), leaving [{}]", id, generation,
               absl::StrJoin(left, ","));
  // The new IPUs are configured afresh (a machine that keeps some of them
  // replaces its older generation); the machines left behind release it. A
  // crash before the release is mended when those agents register again
  // (ReconcileAgent drops what the database no longer places there).
  work_.Post([this, id, generation, left = std::move(left)] {
    for (const std::string& agent : left) {
      for (const std::string& e : driver_->ReleaseOn(agent, id, generation)) {
        spdlog::warn("partition {}: release after the move: {}", id, e);
      }
    }
    Converge(id, generation, Job::kConfigure);
  });
}

absl::StatusOr<fabric::Partition> PartitionController::GetSettled(const std::string& id,
                                                                  absl::Time deadline,
                                                                  const auth::Caller& caller) {
  // The ticket is taken before the first read, so an outcome committed
  // between that read and the wait still wakes it.
  PartitionWatch::Ticket ticket = watch_.Watch(id);
  auto partition = Get(id, caller);
  if (!partition.ok() || partition->ready_state != fabric::ReadyState::kPending) return partition;
  if (!ticket.Wait(deadline)) return partition;
  return Get(id, caller);
}

absl::StatusOr<fabric::Partition> PartitionController::Get(const std::string& id,
                                                           const auth::Caller& caller) {
  fabric::Partition out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto p = LoadPartition(txn, id);
    if (!p.ok()) return p.status();
    if (absl::Status a = CheckAccess(txn, caller, *p, "get"); !a.ok()) return a;
    out = std::move(*p);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<fabric::Partition>> PartitionController::List(
    const std::string& allocation_id, const auth::Caller& caller) {
  std::vector<fabric::Partition> out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    if (!allocation_id.empty()) {
      auto a = txn.GetAllocation(allocation_id);
      if (!a.ok()) {
        if (absl::IsNotFound(a.status())) {
          return absl::NotFoundError(
              absl::StrCat("allocation_id: allocation '", allocation_id, "' not found"));
        }
        return a.status();
      }
    }
    if (!allocation_id.empty() && !caller.MayUseAllocation(allocation_id)) {
      spdlog::warn("refused list partitions of allocation {} for {}: not granted", allocation_id,
                   caller.Name());
      return absl::PermissionDeniedError(
          absl::StrCat("permission denied: allocation_id: user '", caller.user_id,
                       "' has no access to allocation '", allocation_id, "'"));
    }
    auto list = txn.ListPartitions(allocation_id);
    if (!list.ok()) return list.status();
    if (caller.Unrestricted()) {
      out = std::move(*list);
      return absl::OkStatus();
    }
    auto shared = txn.SharedPartitions();
    if (!shared.ok()) return shared.status();
    // Filtered in place: no second vector grown one partition at a time.
    list->erase(std::remove_if(list->begin(), list->end(),
                               [&](const fabric::Partition& p) {
                                 return !caller.MaySee(p, shared->count(p.id) > 0);
                               }),
                list->end());
    out = std::move(*list);
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  return out;
}

absl::StatusOr<std::vector<fabric::GcdConfig>> PartitionController::IpuofConfigs(
    const std::string& id, std::optional<uint32_t> gcd, const auth::Caller& caller) {
  fabric::Partition partition;
  fabric::Cluster cluster;
  std::map<std::string, fabric::MachineEndpoint> endpoints;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto p = LoadPartition(txn, id);
    if (!p.ok()) return p.status();
    if (absl::Status a = CheckAccess(txn, caller, *p, "get the ipuof config of"); !a.ok()) {
      return a;
    }
    partition = std::move(*p);
    auto c = txn.GetCluster(partition.cluster_id);
    if (!c.ok()) return c.status();
    cluster = std::move(*c);
    for (const fabric::PartitionIpu& ipu : partition.ipus) {
      const std::string& agent_id = ipu.ipu.agent_id;
      if (endpoints.count(agent_id)) continue;
      fabric::MachineEndpoint e;
      if (std::optional<LiveAgent> live = registry_->Get(agent_id)) {
        e.host = live->host;
        e.ipuof_port = live->ipuof_port != 0 ? live->ipuof_port : live->port;
        e.machine_type = live->machine_type;
        for (const auto& [name, value] : live->details) {
          if (name == wire::kMachineGwswVersion) e.gwsw_version = value;
          if (name == wire::kMachineRuntimeVersion) e.ipum_sw_version = value;
        }
        for (const Attributes& attrs : live->ipus) {
          std::string chip;
          for (const auto& [name, value] : attrs) {
            if (name == wire::kIpuBoardSerialNumber && chip.empty()) chip = value;
          }
          e.chip_ids.push_back(chip);
        }
      } else {
        auto a = txn.GetAgent(agent_id);
        if (!a.ok()) return a.status();
        e.host = a->host;
        e.ipuof_port = a->port;
        e.machine_type = a->machine_type;
      }
      endpoints[agent_id] = std::move(e);
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  if (gcd && *gcd >= partition.num_gcds) {
    return absl::InvalidArgumentError(absl::StrCat("gcd_id: partition '", id, "' has ",
                                                   partition.num_gcds, " GCDs, got GCD ", *gcd));
  }
  auto layout = fabric::ClusterLayout::Build(cluster);
  if (!layout.ok()) return layout.status();
  std::vector<fabric::GcdConfig> all = fabric::BuildIpuofConfigs(partition, *layout, endpoints);
  if (!gcd) return all;
  return std::vector<fabric::GcdConfig>{all.at(*gcd)};
}

void PartitionController::ReconcileAgent(const std::string& agent_id,
                                         std::vector<HeldPartition> held) {
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
    absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
      auto list = txn.PartitionsOnAgent(agent_id);
      if (!list.ok()) return list.status();
      wanted = std::move(*list);
      return absl::OkStatus();
    });
    if (!s.ok()) {
      spdlog::error("reconcile agent {}: {}", agent_id, s.ToString());
      return;
    }
    std::map<std::string, uint64_t> wanted_generation;
    for (const fabric::Partition& p : wanted) wanted_generation[p.id] = p.generation;
    std::map<std::string, uint64_t> held_generation;
    for (const HeldPartition& h : held) {
      held_generation[h.partition_id] = h.generation;
      auto it = wanted_generation.find(h.partition_id);
      if (it == wanted_generation.end() || it->second > h.generation) {
        if (it == wanted_generation.end()) {
          spdlog::info("reconcile agent {}: releasing {} (generation {}), unknown to the database",
                       agent_id, h.partition_id, h.generation);
          driver_->ReleaseOn(agent_id, h.partition_id, h.generation);
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
      std::vector<std::string> errors =
          driver_->Apply(AgentDriver::Op::kConfigure, p, p.generation);
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
        work_.Post([this, id, generation] { Converge(id, generation, Job::kConfigure); });
        break;
      case fabric::OperationState::kResetting:
        spdlog::info("recover: partition {} was being reset; resetting", id);
        work_.Post([this, id, generation] { Converge(id, generation, Job::kReset); });
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
      p->ready_state = fabric::ReadyState::kError;
      p->operation_state = fabric::OperationState::kFailed;
      p->errors = report.errors;
      p->updated_unix_ms = NowMs();
      if (absl::Status u = txn.UpdatePartitionState(*p); !u.ok()) return u;
      changes.push_back({&report, before});
    }
    return absl::OkStatus();
  });
  if (!s.ok()) return s;
  for (const Change& c : changes) {
    spdlog::warn("partition {}: {} -> PS_ERROR (generation {}): {}", c.report->id,
                 fabric::WireName(c.before), c.report->generation,
                 absl::StrJoin(c.report->errors, "; "));
  }
  return changes.size();
}

absl::StatusOr<bool> PartitionController::AutoReset(const std::string& id, uint64_t generation) {
  uint64_t next = 0;
  uint32_t attempt = 0;
  uint32_t max = 0;
  std::vector<std::string> left;
  bool moved = false;
  absl::Status s = store_->Write([&](storage::WriteTxn& txn) -> absl::Status {
    auto p = txn.GetPartition(id);
    if (!p.ok()) return absl::IsNotFound(p.status()) ? absl::OkStatus() : p.status();
    if (p->generation != generation || p->ready_state != fabric::ReadyState::kError ||
        p->operation_state == fabric::OperationState::kRemoving || p->disable_auto_reset ||
        p->auto_reset_retry_count >= p->max_auto_reset_retries) {
      return absl::OkStatus();
    }
    if (p->relocatable) {
      auto target = RelocationTarget(txn, cluster_links_, *p, *registry_, absl::Now());
      // No healthy room yet: wait, without spending a retry.
      if (!target.ok())
        return absl::IsResourceExhausted(target.status()) ? absl::OkStatus() : target.status();
      if (target->has_value()) {
        left = MachinesLeft(p->ipus, **target);
        p->ipus = std::move(**target);
        moved = true;
      }
    }
    auto g = txn.NextGeneration();
    if (!g.ok()) return g.status();
    next = *g;
    p->generation = next;
    p->ready_state = fabric::ReadyState::kPending;
    p->operation_state =
        moved ? fabric::OperationState::kCreating : fabric::OperationState::kResetting;
    p->errors.clear();
    attempt = ++p->auto_reset_retry_count;
    max = p->max_auto_reset_retries;
    p->last_auto_reset_unix_ms = p->updated_unix_ms = NowMs();
    return moved ? txn.UpdatePartition(*p) : txn.UpdatePartitionState(*p);
  });
  if (!s.ok()) return s;
  if (next == 0) return false;
  spdlog::info("partition {}: auto reset {} of {} (generation {})", id, attempt, max, next);
  PostMoveOrReset(id, next, moved, std::move(left));
  return true;
}

absl::StatusOr<std::vector<PartitionController::AllocationCapacity>> PartitionController::Capacity(
    const auth::Caller& caller) const {
  std::vector<AllocationCapacity> out;
  absl::Status status = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    auto allocations = txn.ListAllocations();
    if (!allocations.ok()) return allocations.status();
    const absl::Time now = absl::Now();
    for (const fabric::Allocation& allocation : *allocations) {
      if (!caller.MayUseAllocation(allocation.id)) continue;
      auto view = ViewOf(txn, cluster_links_, allocation, *registry_, now);
      if (!view.ok()) return view.status();
      const fabric::ClusterLayout& layout = *view->layout;
      AllocationCapacity c;
      c.allocation_id = allocation.id;
      c.cluster_id = allocation.cluster_id;
      c.down = view->down;
      for (const std::string& agent : allocation.agent_ids) {
        if (layout.MachineIndex(agent)) c.ipus += fabric::kIpusPerMachine;
      }
      for (size_t i = 0; i < view->masks.allowed.size(); ++i) {
        c.free_ipus += static_cast<uint32_t>(
            __builtin_popcountll(view->masks.allowed[i] & ~view->masks.used[i]));
      }
      for (uint32_t size = 1; size <= layout.num_ipus(); size *= 2) {
        SizeFit fit;
        fit.size = size;
        fabric::PartitionRequest probe;
        probe.id = "capacity-probe";
        probe.size = size;
        auto resolved = fabric::ResolveDefaults(probe, layout);
        absl::Status placed = resolved.status();
        if (resolved.ok()) {
          fit.num_ilds = resolved->num_ilds;
          fabric::PlacementRequest request{resolved->size, resolved->num_ilds, {}};
          placed = fabric::Place(layout, view->masks, request).status();
        }
        fit.fits = placed.ok();
        if (fit.fits) c.largest = size;
        if (!placed.ok()) fit.why = std::string(placed.message());
        c.sizes.push_back(std::move(fit));
      }
      out.push_back(std::move(c));
    }
    return absl::OkStatus();
  });
  if (!status.ok()) return status;
  return out;
}

}  // namespace vipu::server
