// Access rules and the lookups operations start with: partitions, allocations, candidates.
#include "server/control/partition_access.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/status_macros.h"
#include "spdlog/spdlog.h"

namespace vipu::server {
namespace {

// The store's NOT_FOUND in the words of the request: the field, then what
// was not found ("allocation_id: allocation 'a' not found"). Any other
// status is returned as it is.
absl::Status NamedNotFound(const absl::Status& status, absl::string_view field,
                           absl::string_view kind, absl::string_view id) {
  if (!absl::IsNotFound(status)) return status;
  return absl::NotFoundError(absl::StrCat(field, ": ", kind, " '", id, "' not found"));
}

}  // namespace

absl::StatusOr<fabric::Partition> LoadPartition(storage::ReadTxn& txn, const std::string& id) {
  auto p = txn.GetPartition(id);
  if (!p.ok()) return NamedNotFound(p.status(), "partition id", "partition", id);
  return p;
}

absl::Status CheckAccess(storage::ReadTxn& txn, const Caller& caller, const fabric::Partition& p,
                         const char* action) {
  if (caller.Unrestricted()) return absl::OkStatus();
  bool shared = false;
  if (p.owner != caller.user_id) {
    ASSIGN_OR_RETURN(shared, txn.IsPartitionShared(p.id));
  }
  if (caller.MaySee(p, shared)) return absl::OkStatus();
  spdlog::warn("refused {} partition {} for {}: not its partition (owner '{}', allocation {})",
               action, p.id, caller.Name(), p.owner, p.allocation_id);
  return absl::PermissionDeniedError(
      absl::StrCat("permission denied: partition id: user '", caller.user_id, "' may not ", action,
                   " partition '", p.id, "' (neither its own nor shared in a granted allocation)"));
}

absl::Status FilterAllocations(const Caller& caller, const fabric::PartitionRequest& request,
                               AllocationRefs* candidates) {
  if (caller.Unrestricted()) return absl::OkStatus();
  AllocationRefs allowed;
  for (std::shared_ptr<const fabric::Allocation>& a : *candidates) {
    if (caller.MayUseAllocation(a->id)) allowed.push_back(std::move(a));
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

absl::StatusOr<AllocationRefs> CandidateAllocations(storage::ReadTxn& txn,
                                                    const fabric::PartitionRequest& request) {
  if (!request.allocation_id.empty()) {
    auto allocation = txn.AllocationRef(request.allocation_id);
    if (!allocation.ok()) {
      return NamedNotFound(allocation.status(), "allocation_id", "allocation",
                           request.allocation_id);
    }
    const fabric::Allocation& a = **allocation;
    if (!request.cluster_id.empty() && a.cluster_id != request.cluster_id) {
      return absl::InvalidArgumentError(absl::StrCat("cluster_id: allocation '", a.id,
                                                     "' is on cluster '", a.cluster_id, "', not '",
                                                     request.cluster_id, "'"));
    }
    return AllocationRefs{*std::move(allocation)};
  }
  if (!request.cluster_id.empty()) {
    auto cluster = txn.ClusterRef(request.cluster_id);
    if (!cluster.ok()) {
      return NamedNotFound(cluster.status(), "cluster_id", "cluster", request.cluster_id);
    }
  }
  ASSIGN_OR_RETURN(AllocationRefs all, txn.AllocationRefs());
  AllocationRefs out;
  for (std::shared_ptr<const fabric::Allocation>& a : all) {
    if (request.cluster_id.empty() || a->cluster_id == request.cluster_id)
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

absl::Status CheckAllocationExists(storage::ReadTxn& txn, const std::string& allocation_id) {
  return NamedNotFound(txn.AllocationRef(allocation_id).status(), "allocation_id", "allocation",
                       allocation_id);
}

}  // namespace vipu::server
