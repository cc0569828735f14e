// PartitionController::Capacity: what still fits in each allocation, by the placement a create
// uses.
#include <utility>

#include "fabric/placement.h"
#include "fabric/validation.h"
#include "server/control/partition_controller.h"
#include "server/control/placement_view.h"

namespace vipu::server {

absl::StatusOr<std::vector<PartitionController::AllocationCapacity>> PartitionController::Capacity(
    const Caller& caller) const {
  std::vector<AllocationCapacity> out;
  absl::Status status = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    // Shared with the store's membership cache: no allocation is copied.
    auto allocations = txn.AllocationRefs();
    if (!allocations.ok()) return allocations.status();
    const absl::Time now = absl::Now();
    for (const std::shared_ptr<const fabric::Allocation>& ref : *allocations) {
      const fabric::Allocation& allocation = *ref;
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
