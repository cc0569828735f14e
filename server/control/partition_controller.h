// The partition lifecycle (docs/architecture.md): validate, place, commit,
// reply; then configure the agents in the background and commit the outcome.
// Every operation is fenced by the partition's generation, so a late result of
// an older operation never overwrites a newer one, and agents refuse it.
//
// The class is spread over files by job, each named partition_controller_*:
// partition_controller.cc (start, stop, applying a generation to the agents
// and recording the outcome), partition_controller_lifecycle.cc (create,
// reset, remove), partition_controller_reads.cc (get, list, IPUoF configs),
// partition_controller_recovery.cc (reconcile a registering agent, recover
// after a start), partition_controller_health.cc (faults and auto reset) and
// partition_controller_capacity.cc. The other partition_* files are units of
// their own, with headers: access rules (partition_access.h), the watch
// (partition_watch.h), problems (partition_problems.h) and state changes
// (partition_transitions.h); placement and relocation are placement_view.h.
#ifndef VIPU_SERVER_CONTROL_PARTITION_CONTROLLER_H_
#define VIPU_SERVER_CONTROL_PARTITION_CONTROLLER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "base/mutex.h"
#include "fabric/held_partition.h"
#include "fabric/ipuof_config.h"
#include "fabric/types.h"
#include "server/control/partition_plan.h"
#include "server/control/partition_watch.h"
#include "server/control/work_queue.h"
#include "server/fleet/agent_driver.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/security/caller.h"
#include "storage/store.h"

namespace vipu::server {

// Borrows the store, the cluster links cache, the registry and the driver,
// which must outlive it; owns its worker threads (WorkQueue) and the watch
// that readers of pending partitions wait on. Thread-safe: every public
// method may be called from any thread (gRPC handlers, the health monitor,
// the registry service); operations it starts finish on the writer thread
// and on the threads that complete agent calls, and Stop waits for them.
class PartitionController {
 public:
  // `cluster_links` holds the layouts and links of the clusters; it, like
  // the store, registry and driver, is the caller's and must outlive this.
  PartitionController(storage::Store* store, ClusterLinksCache* cluster_links,
                      const AgentRegistry* registry, AgentDriver* driver, int worker_threads);
  ~PartitionController();

  // Access rules (docs/security.md): a restricted `caller` (an
  // authenticated non-admin) acts only in the allocations granted to it and
  // only on its own partitions and shared ones; anything else is
  // PERMISSION_DENIED and changes nothing. The default caller is the
  // unrestricted system (recovery, insecure mode).

  // Commits the partition as PS_PENDING/POS_CREATING and returns it; agents
  // are configured afterwards. The owner is the caller; `shared` makes it
  // visible to every user of its allocation.
  absl::StatusOr<fabric::Partition> Create(const fabric::PartitionRequest& request,
                                           const Caller& caller = Caller::System(),
                                           bool shared = false);
  // Releases the IPUs on the agents, then deletes the partition. With
  // `force`, agent errors are logged and the partition is deleted anyway.
  absl::Status Remove(const std::string& id, bool force, const Caller& caller = Caller::System());
  // New generation, PS_PENDING/POS_RESETTING; agents reset afterwards.
  // A partition created relocatable, or any partition when `relocatable`,
  // whose IPUs, links or machines are faulty moves instead: it gets healthy
  // IPUs of its allocation (its own healthy ones may be kept), goes
  // PS_PENDING/POS_CREATING, the new IPUs are configured and the machines it
  // left release it; its IPUoF configs change with it. When no healthy
  // block is free, RESOURCE_EXHAUSTED naming the faults if `relocatable`
  // was asked for here, else a reset in place.
  absl::Status Reset(const std::string& id, const Caller& caller = Caller::System(),
                     bool relocatable = false);

  absl::StatusOr<fabric::Partition> Get(const std::string& id,
                                        const Caller& caller = Caller::System());
  // Get, but a partition that is PS_PENDING is read again once its pending
  // operation has settled (committed ACTIVE or ERROR, been overtaken, or
  // the partition removed), or at `deadline`, whichever comes first: a
  // caller waiting for ACTIVE needs one read instead of polling. What is
  // returned is always the committed state at the time of the last read.
  absl::StatusOr<fabric::Partition> GetSettled(const std::string& id, absl::Time deadline,
                                               const Caller& caller = Caller::System());
  // The partitions `caller` may see.
  absl::StatusOr<std::vector<fabric::Partition>> List(const std::string& allocation_id,
                                                      const Caller& caller = Caller::System());
  // All GCDs, or just `gcd`.
  absl::StatusOr<std::vector<fabric::GcdConfig>> IpuofConfigs(
      const std::string& id, std::optional<uint32_t> gcd, const Caller& caller = Caller::System());

  // After an agent (re)registers: release what the database does not want
  // there, re-push what it lost (to every machine of the partition, which
  // learn the agent's address again). When `agent_id` itself refuses the
  // push, the partition goes PS_ERROR with its words and the auto reset
  // takes over; what another machine answers, not connected included, only
  // goes to the log: its own registration or heartbeats settle it.
  void ReconcileAgent(const std::string& agent_id, std::vector<fabric::HeldPartition> held);
  // After a machine's reports lacked `partition_id` at `generation` (the
  // health monitor's HeldCheck): configures it again on `agent_id` alone,
  // in the background, when the partition is still PS_ACTIVE at that
  // generation and the machine connected. A refusal fails the partition as
  // in ReconcileAgent; a call that did not reach the machine changes
  // nothing (its liveness is the health monitor's). Counted as a
  // reconciliation (AwaitReconciled, reconciled()).
  void PushAgain(const std::string& agent_id, const std::string& partition_id, uint64_t generation);
  // After a server start: finish operations a crash interrupted.
  void Recover();

  // Health, driven by the HealthMonitor.
  struct FaultReport {
    std::string id;
    uint64_t generation = 0;
    std::vector<std::string> errors;
  };
  // For each report, a fault touches the partition: PS_ACTIVE/POS_IDLE ->
  // PS_ERROR/POS_FAILED with `errors`; a partition already in PS_ERROR gets
  // its errors replaced when they differ. Nothing happens to one that moved
  // to another generation, is busy (pending, removing) or already says so.
  // One durable write for all (a restart may find thousands at once).
  // Returns how many changed.
  absl::StatusOr<size_t> MarkFaulty(const std::vector<FaultReport>& reports);
  // The faults have cleared: a PS_ERROR partition at `generation` is reset
  // when auto reset is enabled and auto_reset_retry_count is below
  // max_auto_reset_retries; counts the retry and stamps
  // last_auto_reset_unix_ms. False when not eligible. A manual Reset starts
  // the retry count afresh. A relocatable partition is eligible while its
  // faults last: it moves as with Reset, or waits (false, no retry spent)
  // while no healthy block is free.
  absl::StatusOr<bool> AutoReset(const std::string& id, uint64_t generation);

  // What can still be placed in each allocation `caller` may use, computed
  // by the placement Create uses against the allocation's current occupancy
  // and live machines; nothing is written. Sizes are the powers of two up
  // to the cluster's IPU count, default options (as `create partition
  // --size N`). Errors: the store's.
  struct SizeFit {
    uint32_t size = 0;
    bool fits = false;
    uint32_t num_ilds = 0;  // the ILDs a partition of this size spans
    std::string why;        // placement's refusal when it does not fit
  };
  struct AllocationCapacity {
    std::string allocation_id;
    std::string cluster_id;
    uint32_t ipus = 0;       // IPUs of the allocation's machines in the cluster
    uint32_t free_ipus = 0;  // of those: on Up machines, held by no partition
    uint32_t largest = 0;    // the largest size that fits; 0: none
    std::vector<SizeFit> sizes;
    std::vector<std::string> down;  // the allocation's agents that are not Up
  };
  absl::StatusOr<std::vector<AllocationCapacity>> Capacity(
      const Caller& caller = Caller::System()) const;

  // Waits until no ReconcileAgent job is queued or running, or `deadline`
  // passes; true when none is left (the server reports ready after this).
  bool AwaitReconciled(absl::Time deadline) ABSL_LOCKS_EXCLUDED(reconcile_mu_);
  // Reconciliations finished since start (tests, logs).
  uint64_t reconciled() const;

  // Writes again the outcomes the store refused to record (a full disk, a
  // store that may not answer), each at most once per `retry_after` since
  // it was last refused; until one is written, its partition stays
  // PS_PENDING although its agents have answered. The health monitor asks
  // on every pass. Returns how many it tried.
  size_t RecordRefusedOutcomes(absl::Time now, absl::Duration retry_after = absl::Seconds(1))
      ABSL_LOCKS_EXCLUDED(background_mu_);
  // Waits until `n` refused outcomes wait to be written again, or
  // `deadline` passes; true when they do.
  bool AwaitRefusedOutcomesForTesting(size_t n, absl::Time deadline)
      ABSL_LOCKS_EXCLUDED(background_mu_);

  // Waits for queued background work (tests, shutdown). Refused outcomes
  // not yet written are dropped: their partitions stay PS_PENDING, as a
  // crash would leave them, and the next start's Recover finishes them.
  void Stop();

 private:
  // One remove, its steps in the order they run (partition_controller_lifecycle.cc).
  class Removal;
  // What a committed reset or auto reset left to do on the agents.
  struct Restart {
    uint64_t generation = 0;
    bool moved = false;             // to other IPUs: configure there
    std::vector<std::string> left;  // machines a move left, to release
  };
  // The write a reset and an auto reset share: `target` (when given)
  // becomes the partition's IPUs, then a new generation and PS_PENDING
  // (POS_CREATING when moved, else POS_RESETTING).
  static absl::StatusOr<Restart> CommitRestart(
      storage::WriteTxn& txn, fabric::Partition* p,
      std::optional<std::vector<fabric::PartitionIpu>> target, int64_t now_ms);
  // The agents' half of a committed Restart: ApplyMove when it moved, else
  // a reset in place queued on the work queue.
  void ApplyRestart(const std::string& id, const Restart& restart);
  // The agents' half of a move: release on the machines `left`, then
  // configure the partition where it now is (on the work queue).
  void ApplyMove(const std::string& id, uint64_t generation, std::vector<std::string> left);

  // Counts a reconciliation from now until the returned token's last copy
  // goes (the job ran, or the queue dropped it at shutdown).
  std::shared_ptr<void> CountReconciliation() ABSL_LOCKS_EXCLUDED(reconcile_mu_);
  // Configures `p` again as `plan` says and waits; when `agent_id`
  // refuses, marks `p` faulty with its words. Errors of the other
  // machines are logged.
  void ConfigureAgain(const fabric::Partition& p, std::shared_ptr<const PartitionPlan> plan,
                      const std::string& agent_id);

  // Reads the partition and applies `op` when it is still at `generation`
  // (a job queued behind a newer operation does nothing).
  void ApplyIfCurrent(const std::string& id, uint64_t generation, AgentDriver::Op op);
  // Starts configuring (or resetting) the agents at the snapshot's
  // generation as `plan` says and returns; the outcome is committed when
  // they have all answered, if the partition is still at that generation,
  // and waiting readers are told. A machine that answers a reset with
  // NOT_FOUND lost the partition and is configured afresh first. Counted as
  // background work until it ends.
  void StartApply(const fabric::Partition& snapshot, std::shared_ptr<const PartitionPlan> plan,
                  AgentDriver::Op op);
  // The plan of configuring or resetting `p`, from its cluster as the
  // caller read it (the links give each machine its ports); a cluster that
  // could not be read claims no ports, which the log says.
  std::shared_ptr<const PartitionPlan> PlanFor(
      const fabric::Partition& p,
      const absl::StatusOr<std::shared_ptr<const fabric::Cluster>>& cluster) const;
  // Releases `partition_id` at `generation` on `agent_id` alone and waits;
  // the errors as ErrorsOf names them, empty on success.
  std::vector<std::string> ReleaseOn(const std::string& agent_id, const std::string& partition_id,
                                     uint64_t generation);
  // Commits the outcome, or keeps it to write again when the store refuses;
  // `attempts` counts the refusals so far.
  void RecordOutcome(const fabric::Partition& snapshot, AgentDriver::Op op,
                     std::vector<std::string> errors, int attempts = 0);
  // Operations running on other threads than the work queue's (Stop waits
  // for them). Begin is false once stopped: nothing may start then.
  bool BeginBackground() ABSL_LOCKS_EXCLUDED(background_mu_);
  void EndBackground() ABSL_LOCKS_EXCLUDED(background_mu_);
  // An outcome the store refused to write: kept for RecordRefusedOutcomes,
  // still counted as background work.
  struct RefusedOutcome {
    fabric::Partition snapshot;
    AgentDriver::Op op;
    std::vector<std::string> errors;
    absl::Time refused_at;
    int attempts = 0;  // refusals so far
  };
  // Keeps `refused` to be written again, or ends its background work once
  // stopped.
  void KeepRefused(RefusedOutcome refused) ABSL_LOCKS_EXCLUDED(background_mu_);

  storage::Store* store_;
  ClusterLinksCache* cluster_links_;
  const AgentRegistry* registry_;
  AgentDriver* driver_;
  PartitionWatch watch_;  // announced whenever a background change commits

  bool NoneReconciling() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(reconcile_mu_) {
    return reconciling_ == 0;
  }

  mutable vipu::Mutex reconcile_mu_;
  int reconciling_ ABSL_GUARDED_BY(reconcile_mu_) = 0;  // ReconcileAgent jobs queued or running
  uint64_t reconciled_ ABSL_GUARDED_BY(reconcile_mu_) = 0;

  vipu::Mutex background_mu_;
  int background_ ABSL_GUARDED_BY(background_mu_) = 0;  // Converges not yet ended
  bool stopped_ ABSL_GUARDED_BY(background_mu_) = false;
  std::vector<RefusedOutcome> refused_ ABSL_GUARDED_BY(background_mu_);
  vipu::CondVar background_idle_;

  WorkQueue work_;  // last: its threads stop before the members above go
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_PARTITION_CONTROLLER_H_
