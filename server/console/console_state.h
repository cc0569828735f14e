// What the console shows, as data: a snapshot of the pod taken in one
// database read plus the agent registry (clusters, machines, links,
// partitions, faults, capacity), and its JSON views filtered for a caller.
// Snapshots are immutable once built and shared between threads.
#ifndef VIPU_SERVER_CONSOLE_CONSOLE_STATE_H_
#define VIPU_SERVER_CONSOLE_CONSOLE_STATE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fabric/types.h"
#include "server/console/history.h"
#include "server/control/partition_controller.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links.h"
#include "server/fleet/cluster_links_cache.h"
#include "server/security/caller.h"
#include "storage/store.h"

namespace vipu::server {

struct AgentView {
  std::string id;
  std::string host;
  fabric::MachineType machine_type = fabric::MachineType::kM2000;
  bool registered = false;
  bool up = false;
  AgentHealth health;
};

struct ClusterView {
  std::shared_ptr<const fabric::Cluster> cluster;  // the store's, shared: not copied
  std::shared_ptr<const ClusterLinks> links;
  // Per link (index into links->topology.links()): down as reported by
  // either end, and the partition owning it ("" for none).
  std::vector<bool> link_down;
  std::vector<std::string> link_owner;
};

// The control plane the console's server belongs to (docs/ha.md). The
// console cannot see the member's own types, so the server hands it this.
struct ControlPlane {
  bool ha = false;     // false: a single server, its state in SQLite
  std::string role;    // with ha: "leader" or "standby"
  std::string leader;  // with ha: the leader's user address, "" while none is known
  std::string member;  // with ha: this member's user address
};

struct PodSnapshot {
  int64_t unix_ms = 0;
  ControlPlane control_plane;
  std::vector<ClusterView> clusters;
  std::vector<fabric::Allocation> allocations;
  std::vector<fabric::Partition> partitions;  // by id
  std::set<std::string> shared;
  std::map<std::string, AgentView> agents;                        // every agent in the database
  std::vector<PartitionController::AllocationCapacity> capacity;  // every allocation
};

// Reads the database once, then the registry and the capacity; the snapshot
// carries `control_plane` as given. Errors: the store's, and a cluster whose
// layout no longer builds.
absl::StatusOr<std::shared_ptr<const PodSnapshot>> CollectSnapshot(
    storage::Store* store, ClusterLinksCache* cluster_links, const AgentRegistry& registry,
    const PartitionController& controller, absl::Time now,
    const ControlPlane& control_plane = ControlPlane());

// Counts for the history, per allocation: IPUs held by partitions, the
// partitions, and faults on the allocation's machines (down machines, IPUs
// in error, links down with an end there).
std::map<std::string, Counts> CountsOf(const PodSnapshot& snapshot);

// The console's main view for `caller`: clusters with machines, IPUs and
// links, partitions, capacity, and the control plane ({"mode": "single"},
// or {"mode": "ha", "role", "leader" (null while none is known), "member"}),
// the latter shown to every caller since it names only the server's own
// addresses. A restricted caller sees the clusters of its allocations, only
// the partitions it may see (others' IPUs show as taken, unnamed) and the
// capacity of its allocations. `version` numbers the state (it changes
// whenever the content does). With `with_time` false the output depends on
// the content only (change detection).
std::string StateJson(const PodSnapshot& snapshot, const Caller& caller, uint64_t version,
                      bool with_time = true);

// The history samples, summed over the allocations `caller` may use.
std::string HistoryJson(const std::vector<Sample>& samples, const Caller& caller);

// What `ipu-model predict` says of one BERT-Large training step on a
// partition of this shape (its IPUs, ILDs, machine type and topology): the
// recipe of docs/model.md, 4-IPU pipelines replicated over the partition.
// An object with the workload, the prediction and "memory" (fits,
// fullest_ipu, needed_bytes, capacity_bytes); or with "error" in place of
// the prediction, `ipu-model predict`'s refusal when the layout does not
// fit the IPUs' memory.
std::string BertLargePredictionJson(const fabric::Partition& partition,
                                    const fabric::Cluster& cluster,
                                    fabric::MachineType machine_type);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONSOLE_CONSOLE_STATE_H_
