// What placement sees of an allocation (its cluster's layout, the IPUs it
// may use and those held), and where a faulty relocatable partition can go.
// Create, Reset and Capacity place from the same view, so the console's
// capacity is what a create would get. Functions of one transaction.
#ifndef VIPU_SERVER_CONTROL_PLACEMENT_VIEW_H_
#define VIPU_SERVER_CONTROL_PLACEMENT_VIEW_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "fabric/placement.h"
#include "fabric/topology.h"
#include "fabric/types.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/cluster_links_cache.h"
#include "storage/store.h"

namespace vipu::server {

// What placement in an allocation sees at one moment.
struct PlacementView {
  // The cluster as the transaction read it (shared with the store): the
  // plan of configuring what was placed takes its links from it.
  std::shared_ptr<const fabric::Cluster> cluster;
  std::shared_ptr<const fabric::ClusterLayout> layout;
  fabric::IldMasks masks;
  std::vector<std::string> down;  // the allocation's agents that are not Up
};

// The view of `allocation` at `now`: the cluster's layout as the database
// has it, the IPUs of its Up machines and those held by partitions.
absl::StatusOr<PlacementView> ViewOf(storage::ReadTxn& txn, ClusterLinksCache* cluster_links,
                                     const fabric::Allocation& allocation,
                                     const AgentRegistry& registry, absl::Time now);

// Where a relocatable partition goes when it is reset. nullopt when nothing
// is wrong where it is (a reset then keeps it there). Otherwise IPUs of its
// allocation on Up machines, held by no other partition, with no IPU error
// and no downed link: its own healthy IPUs may be reused. RESOURCE_EXHAUSTED
// when no such aligned block is free.
absl::StatusOr<std::optional<std::vector<fabric::PartitionIpu>>> RelocationTarget(
    storage::ReadTxn& txn, ClusterLinksCache* cluster_links, const fabric::Partition& p,
    const AgentRegistry& registry, absl::Time now);

// Machines of `before` that `after` no longer uses.
std::vector<std::string> MachinesLeft(const std::vector<fabric::PartitionIpu>& before,
                                      const std::vector<fabric::PartitionIpu>& after);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_PLACEMENT_VIEW_H_
