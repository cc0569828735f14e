// The placement view of an allocation, and where a faulty relocatable partition moves.
#include "server/control/placement_view.h"

#include <set>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "server/control/partition_problems.h"

namespace vipu::server {
namespace {

// The machines of `layout` (by index) placement may use: in `allocation` and
// Up at `now`; the allocation's agents that are not Up go to *down. The Up
// machines come from the registry's bitmap of the layout (rebuilt only when
// an agent registers, comes back or may have timed out), and the allocation
// is matched in the cluster's order, instead of a locked map lookup and a
// hash lookup for each of up to 16,384 machines per create.
std::vector<bool> AllowedMachines(const std::shared_ptr<const fabric::ClusterLayout>& layout,
                                  const fabric::Allocation& allocation,
                                  const AgentRegistry& registry, absl::Time now,
                                  std::vector<std::string>* down) {
  const std::vector<std::string>& ids = layout->cluster().agent_ids;
  const std::shared_ptr<const std::vector<bool>> up_machines = registry.UpMachines(layout, now);
  const std::vector<bool>& up = *up_machines;
  std::vector<bool> allowed(ids.size(), false);
  size_t next = 0;  // where the allocation's next agent usually is
  for (const std::string& agent : allocation.agent_ids) {
    std::optional<uint32_t> index;
    if (next < ids.size() && ids[next] == agent) {
      index = static_cast<uint32_t>(next);
    } else {
      index = layout->MachineIndex(agent);
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

}  // namespace

absl::StatusOr<PlacementView> ViewOf(storage::ReadTxn& txn, ClusterLinksCache* cluster_links,
                                     const fabric::Allocation& allocation,
                                     const AgentRegistry& registry, absl::Time now) {
  ASSIGN_OR_RETURN(const std::shared_ptr<const fabric::Cluster> cluster,
                   txn.ClusterRef(allocation.cluster_id));
  PlacementView view;
  view.cluster = cluster;
  ASSIGN_OR_RETURN(view.layout, cluster_links->LayoutOf(cluster));
  ASSIGN_OR_RETURN(const auto used, txn.UsedIpus(cluster->id));
  const std::vector<bool> allowed =
      AllowedMachines(view.layout, allocation, registry, now, &view.down);
  view.masks = fabric::MasksOf(*view.layout, allowed, used);
  return view;
}

absl::StatusOr<std::optional<std::vector<fabric::PartitionIpu>>> RelocationTarget(
    storage::ReadTxn& txn, ClusterLinksCache* cluster_links, const fabric::Partition& p,
    const AgentRegistry& registry, absl::Time now) {
  ASSIGN_OR_RETURN(const std::shared_ptr<const fabric::Cluster> cluster,
                   txn.ClusterRef(p.cluster_id));
  ASSIGN_OR_RETURN(const auto links, cluster_links->LinksOf(cluster));
  const std::vector<std::string> problems = PartitionProblems(p, *links, registry, now);
  if (problems.empty()) return std::nullopt;
  ASSIGN_OR_RETURN(const std::shared_ptr<const fabric::Allocation> allocation,
                   txn.AllocationRef(p.allocation_id));
  ASSIGN_OR_RETURN(PlacementView view, ViewOf(txn, cluster_links, *allocation, registry, now));
  const fabric::ClusterLayout& layout = *view.layout;
  fabric::IldMasks& masks = view.masks;
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    masks.used[ipu.ild] &= ~(uint64_t{1} << ipu.topology_id);
  }
  // The faults the allocation's registered agents report: only the agents
  // that report one are copied, not every agent's reports.
  const std::vector<std::pair<std::string, AgentHealth>> faults = registry.Faults();
  std::set<std::string_view> members;
  if (!faults.empty()) members.insert(allocation->agent_ids.begin(), allocation->agent_ids.end());
  for (const auto& [agent, health] : faults) {
    if (!members.count(agent)) continue;
    for (const auto& [ipu, error] : health.ipu_errors) {
      MarkIpuUsed(layout, fabric::IpuRef{agent, ipu}, &masks);
    }
    for (const auto& [port, what] : health.links_down) {
      const fabric::Link* link = links->topology.Find(agent, port);
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

std::vector<std::string> MachinesLeft(const std::vector<fabric::PartitionIpu>& before,
                                      const std::vector<fabric::PartitionIpu>& after) {
  std::set<std::string> kept, left;
  for (const fabric::PartitionIpu& ipu : after) kept.insert(ipu.ipu.agent_id);
  for (const fabric::PartitionIpu& ipu : before) {
    if (!kept.count(ipu.ipu.agent_id)) left.insert(ipu.ipu.agent_id);
  }
  return {left.begin(), left.end()};
}

}  // namespace vipu::server
