// ImportState: one SQLite snapshot written into an empty etcd prefix.
#include "storage/etcd/state_import.h"

#include <algorithm>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"
#include "storage/etcd/etcd_layout.h"

namespace vipu::storage::etcd {
namespace {

// Every key of the snapshot, in the order a reader would want them.
absl::Status Collect(ReadTxn& txn, const EtcdLayout& layout, std::vector<TxnOp>* ops,
                     ImportCounts* counts) {
  ASSIGN_OR_RETURN(std::vector<fabric::Agent> agents, txn.ListAgents());
  for (const fabric::Agent& a : agents) {
    ops->push_back(TxnOp::Put(layout.Key(Table::kAgents, a.id), EncodeAgent(a)));
  }
  ASSIGN_OR_RETURN(std::vector<fabric::Cluster> clusters, txn.ListClusters());
  for (const fabric::Cluster& c : clusters) {
    ops->push_back(TxnOp::Put(layout.Key(Table::kClusters, c.id), EncodeCluster(c)));
  }
  ASSIGN_OR_RETURN(std::vector<fabric::Allocation> allocations, txn.ListAllocations());
  for (const fabric::Allocation& a : allocations) {
    ops->push_back(TxnOp::Put(layout.Key(Table::kAllocations, a.id), EncodeAllocation(a)));
  }
  ASSIGN_OR_RETURN(std::vector<fabric::Partition> partitions, txn.ListPartitions());
  ASSIGN_OR_RETURN(std::set<std::string> shared, txn.SharedPartitions());
  uint64_t generation = 0;
  for (const fabric::Partition& p : partitions) {
    generation = std::max(generation, p.generation);
    ops->push_back(TxnOp::Put(layout.Key(Table::kPartitions, p.id),
                              EncodePartition(PartitionEntry{p, shared.count(p.id) > 0})));
  }
  ASSIGN_OR_RETURN(std::vector<UserRecord> users, txn.ListUsers());
  for (const UserRecord& u : users) {
    ops->push_back(TxnOp::Put(layout.Key(Table::kUsers, u.id), EncodeUser(u)));
  }
  counts->agents = static_cast<int64_t>(agents.size());
  counts->clusters = static_cast<int64_t>(clusters.size());
  counts->allocations = static_cast<int64_t>(allocations.size());
  counts->partitions = static_cast<int64_t>(partitions.size());
  counts->users = static_cast<int64_t>(users.size());
  // The counter is ahead of the partitions' when the newest were removed.
  ASSIGN_OR_RETURN(uint64_t last, txn.LastGeneration());
  counts->generation = std::max(generation, last);
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ImportCounts> ImportState(Store& from, EtcdClient* client, const std::string& prefix,
                                         size_t max_ops_per_txn) {
  RETURN_IF_ERROR(EtcdLayout::ValidatePrefix(prefix));
  if (max_ops_per_txn < 2) return absl::InvalidArgumentError("max_ops_per_txn: at least 2");
  const EtcdLayout layout(prefix);
  ImportCounts counts;
  std::vector<TxnOp> ops;
  RETURN_IF_ERROR(from.Read([&](ReadTxn& txn) { return Collect(txn, layout, &ops, &counts); }));
  // The generation key: the store hands out generations above it, so
  // configurations stay fenced as the agents know them.
  ops.push_back(TxnOp::Put(layout.GenerationKey(), absl::StrCat(counts.generation)));

  ASSIGN_OR_RETURN(RangeResult existing, client->RangePrefix(layout.StatePrefix()));
  if (!existing.kvs.empty()) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd prefix ", prefix, " already holds state (", existing.kvs.front().key,
                     "); import only into an unused prefix"));
  }
  // First transaction: the format key, only if nobody wrote it.
  ASSIGN_OR_RETURN(TxnResult first,
                   client->Txn({TxnCompare::Version(layout.FormatKey(), 0)},
                               {TxnOp::Put(layout.FormatKey(), layout.FormatValue())}));
  if (!first.succeeded) {
    return absl::FailedPreconditionError(
        absl::StrCat("etcd prefix ", prefix,
                     " is in use (a vipu-server member has claimed it); stop the members, or "
                     "import into another prefix"));
  }
  ++counts.transactions;
  ASSIGN_OR_RETURN(std::optional<KeyValue> format, client->Get(layout.FormatKey()));
  if (!format) return absl::AbortedError("the format key vanished during the import");
  const TxnCompare ours = TxnCompare::CreateRevision(layout.FormatKey(), format->create_revision);
  for (size_t i = 0; i < ops.size(); i += max_ops_per_txn) {
    std::vector<TxnOp> chunk(
        ops.begin() + static_cast<long>(i),
        ops.begin() + static_cast<long>(std::min(ops.size(), i + max_ops_per_txn)));
    ASSIGN_OR_RETURN(TxnResult r, client->Txn({ours}, chunk));
    if (!r.succeeded) {
      return absl::AbortedError(
          absl::StrCat("etcd prefix ", prefix,
                       " changed during the import; delete what was written with "
                       "`etcdctl del --prefix ",
                       prefix, "` and import again"));
    }
    ++counts.transactions;
  }
  return counts;
}

}  // namespace vipu::storage::etcd
