// Who may act on which partition and in which allocations (docs/security.md),
// and the lookups every operation of the controller starts with. Functions of
// one transaction; no state of their own.
#ifndef VIPU_SERVER_CONTROL_PARTITION_ACCESS_H_
#define VIPU_SERVER_CONTROL_PARTITION_ACCESS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "server/security/caller.h"
#include "storage/store.h"

namespace vipu::server {

// The partition, or NOT_FOUND naming the id as the caller gave it.
absl::StatusOr<fabric::Partition> LoadPartition(storage::ReadTxn& txn, const std::string& id);

// PERMISSION_DENIED (logged with the user and the action) unless `caller`
// may act on `p`: own or shared, in a granted allocation.
absl::Status CheckAccess(storage::ReadTxn& txn, const Caller& caller, const fabric::Partition& p,
                         const char* action);

// The store's shared allocations (storage::ReadTxn::AllocationRef): a
// candidate of 16,384 machines is not copied.
using AllocationRefs = std::vector<std::shared_ptr<const fabric::Allocation>>;

// Keeps the allocations `caller` may use; PERMISSION_DENIED when the request
// names one it may not, or none is left.
absl::Status FilterAllocations(const Caller& caller, const fabric::PartitionRequest& request,
                               AllocationRefs* candidates);

// Allocations a request may be placed in, in the order they are tried.
absl::StatusOr<AllocationRefs> CandidateAllocations(storage::ReadTxn& txn,
                                                    const fabric::PartitionRequest& request);

// NOT_FOUND naming `allocation_id` as a request field when it does not
// exist; the store's error otherwise.
absl::Status CheckAllocationExists(storage::ReadTxn& txn, const std::string& allocation_id);

}  // namespace vipu::server

#endif  // VIPU_SERVER_CONTROL_PARTITION_ACCESS_H_
