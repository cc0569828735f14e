// PartitionController's reads: one partition (settled or not), a list, IPUoF configs.
#include <algorithm>
#include <map>
#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "server/control/partition_access.h"
#include "server/control/partition_controller.h"
#include "spdlog/spdlog.h"
#include "wire/attribute_names.h"

namespace vipu::server {

absl::StatusOr<fabric::Partition> PartitionController::GetSettled(const std::string& id,
                                                                  absl::Time deadline,
                                                                  const Caller& caller) {
  // The ticket is taken before the first read, so an outcome committed
  // between that read and the wait still wakes it.
  PartitionWatch::Ticket ticket = watch_.Watch(id);
  auto partition = Get(id, caller);
  if (!partition.ok() || partition->ready_state != fabric::ReadyState::kPending) return partition;
  if (!ticket.Wait(deadline)) return partition;
  return Get(id, caller);
}

absl::StatusOr<fabric::Partition> PartitionController::Get(const std::string& id,
                                                           const Caller& caller) {
  fabric::Partition out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(out, LoadPartition(txn, id));
    return CheckAccess(txn, caller, out, "get");
  });
  RETURN_IF_ERROR(s);
  return out;
}

absl::StatusOr<std::vector<fabric::Partition>> PartitionController::List(
    const std::string& allocation_id, const Caller& caller) {
  std::vector<fabric::Partition> out;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    if (!allocation_id.empty()) RETURN_IF_ERROR(CheckAllocationExists(txn, allocation_id));
    if (!allocation_id.empty() && !caller.MayUseAllocation(allocation_id)) {
      spdlog::warn("refused list partitions of allocation {} for {}: not granted", allocation_id,
                   caller.Name());
      return absl::PermissionDeniedError(
          absl::StrCat("permission denied: allocation_id: user '", caller.user_id,
                       "' has no access to allocation '", allocation_id, "'"));
    }
    ASSIGN_OR_RETURN(out, txn.ListPartitions(allocation_id));
    if (caller.Unrestricted()) return absl::OkStatus();
    ASSIGN_OR_RETURN(const auto shared, txn.SharedPartitions());
    // Filtered in place: no second vector grown one partition at a time.
    out.erase(std::remove_if(out.begin(), out.end(),
                             [&](const fabric::Partition& p) {
                               return !caller.MaySee(p, shared.count(p.id) > 0);
                             }),
              out.end());
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  return out;
}

absl::StatusOr<std::vector<fabric::GcdConfig>> PartitionController::IpuofConfigs(
    const std::string& id, std::optional<uint32_t> gcd, const Caller& caller) {
  fabric::Partition partition;
  std::shared_ptr<const fabric::Cluster> cluster;  // the store's, shared: not copied
  std::map<std::string, fabric::MachineEndpoint> endpoints;
  absl::Status s = store_->Read([&](storage::ReadTxn& txn) -> absl::Status {
    ASSIGN_OR_RETURN(partition, LoadPartition(txn, id));
    RETURN_IF_ERROR(CheckAccess(txn, caller, partition, "get the ipuof config of"));
    ASSIGN_OR_RETURN(cluster, txn.ClusterRef(partition.cluster_id));
    for (const fabric::PartitionIpu& ipu : partition.ipus) {
      const std::string& agent_id = ipu.ipu.agent_id;
      if (endpoints.count(agent_id)) continue;
      fabric::MachineEndpoint e;
      if (std::optional<LiveAgent> live = registry_->Get(agent_id)) {
        e.host = live->host;
        e.ipuof_port = live->ipuof_port != 0 ? live->ipuof_port : live->port;
        e.rdma_port = live->rdma_port;
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
        ASSIGN_OR_RETURN(const fabric::Agent a, txn.GetAgent(agent_id));
        e.host = a.host;
        e.ipuof_port = a.port;
        e.machine_type = a.machine_type;
      }
      endpoints[agent_id] = std::move(e);
    }
    return absl::OkStatus();
  });
  RETURN_IF_ERROR(s);
  if (gcd && *gcd >= partition.num_gcds) {
    return absl::InvalidArgumentError(absl::StrCat("gcd_id: partition '", id, "' has ",
                                                   partition.num_gcds, " GCDs, got GCD ", *gcd));
  }
  // The layout the cache holds: building one costs milliseconds at 16,384
  // machines, on every config an application asks for otherwise.
  ASSIGN_OR_RETURN(std::shared_ptr<const fabric::ClusterLayout> layout,
                   cluster_links_->LayoutOf(cluster));
  std::vector<fabric::GcdConfig> all = fabric::BuildIpuofConfigs(partition, *layout, endpoints);
  if (!gcd) return all;
  return std::vector<fabric::GcdConfig>{all.at(*gcd)};
}

}  // namespace vipu::server
