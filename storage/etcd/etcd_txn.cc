// EtcdTxn: the etcd store's queries and changes over its in-memory state,
// with the SQLite store's answers and errors.
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/absl_view.h"
#include "base/status_macros.h"
#include "storage/etcd/etcd_state.h"
#include "storage/still_used.h"

namespace vipu::storage::etcd {
namespace {

using fabric::Agent;
using fabric::Allocation;
using fabric::Cluster;
using fabric::IpuRef;
using fabric::Partition;

bool Contains(const std::vector<std::string>& ids, std::string_view id) {
  for (const std::string& x : ids) {
    if (x == id) return true;
  }
  return false;
}

// Which record of `table` (clusters or allocations) holds each agent: one
// pass, so that checking every machine of a new cluster or allocation does
// not scan every record once per machine (16,384 machines on a large pod).
template <typename T>
std::map<std::string_view, std::string_view> HolderOfAgent(const CowTable<T>& table) {
  std::map<std::string_view, std::string_view> holder;
  for (const auto& [id, record] : table.map()) {
    for (const std::string& agent : record->agent_ids) holder.emplace(agent, id);
  }
  return holder;
}

std::string_view Find(const std::map<std::string_view, std::string_view>& holder,
                      std::string_view agent) {
  auto it = holder.find(agent);
  return it == holder.end() ? std::string_view() : it->second;
}

bool OnAgent(const Partition& p, std::string_view agent_id) {
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    if (ipu.ipu.agent_id == agent_id) return true;
  }
  return false;
}

// Partitions matching `keep`: their count and the first id, for "still in
// use" messages.
template <typename Pred>
std::pair<int64_t, std::string> CountPartitions(const EtcdState& s, Pred keep) {
  std::pair<int64_t, std::string> found{0, ""};
  for (const auto& [id, entry] : s.partitions.map()) {
    if (!keep(entry->partition)) continue;
    if (found.first++ == 0) found.second = id;
  }
  return found;
}

}  // namespace

absl::Status EtcdTxn::Writable() const {
  if (work_ == nullptr) {
    return absl::FailedPreconditionError("a change inside Store::Read; use Store::Write");
  }
  return absl::OkStatus();
}

template <typename T>
void EtcdTxn::Put(CowTable<T>& table, Table which, const std::string& id,
                  std::shared_ptr<const T> value) {
  auto& map = table.Mutable();
  auto it = map.find(id);
  std::shared_ptr<const T> old = it == map.end() ? nullptr : it->second;
  if (value) {
    map[id] = std::move(value);
  } else if (it != map.end()) {
    map.erase(it);
  }
  undo_.push_back([&table, id, old = std::move(old)] {
    auto& m = table.Mutable();
    if (old) {
      m[id] = old;
    } else {
      m.erase(id);
    }
  });
  touched_.insert(TouchedKey{false, which, id});
}

void EtcdTxn::Rollback() {
  for (auto it = undo_.rbegin(); it != undo_.rend(); ++it) (*it)();
  undo_.clear();
  touched_.clear();
}

// Reads.

absl::StatusOr<Agent> EtcdTxn::GetAgent(std::string_view id) {
  const Agent* a = state_->agents.Find(id);
  if (a == nullptr) return absl::NotFoundError(absl::StrCat("agent ", AbslView(id), " not found"));
  return *a;
}

absl::StatusOr<std::vector<Agent>> EtcdTxn::ListAgents() {
  std::vector<Agent> out;
  out.reserve(state_->agents.map().size());
  for (const auto& [id, a] : state_->agents.map()) out.push_back(*a);
  return out;
}

absl::StatusOr<Cluster> EtcdTxn::GetCluster(std::string_view id) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Cluster> c, ClusterRef(id));
  return *c;
}

absl::StatusOr<std::vector<Cluster>> EtcdTxn::ListClusters() {
  std::vector<Cluster> out;
  for (const auto& [id, c] : state_->clusters.map()) out.push_back(*c);
  return out;
}

absl::StatusOr<std::shared_ptr<const Cluster>> EtcdTxn::ClusterRef(std::string_view id) {
  std::shared_ptr<const Cluster> c = state_->clusters.FindShared(id);
  if (!c) return absl::NotFoundError(absl::StrCat("cluster ", AbslView(id), " not found"));
  return c;
}

absl::StatusOr<std::vector<std::shared_ptr<const Cluster>>> EtcdTxn::ClusterRefs() {
  std::vector<std::shared_ptr<const Cluster>> out;
  for (const auto& [id, c] : state_->clusters.map()) out.push_back(c);
  return out;
}

absl::StatusOr<std::string> EtcdTxn::ClusterOfAgent(std::string_view agent_id) {
  for (const auto& [id, c] : state_->clusters.map()) {
    if (Contains(c->agent_ids, agent_id)) return id;
  }
  return std::string();
}

absl::StatusOr<Allocation> EtcdTxn::GetAllocation(std::string_view id) {
  ASSIGN_OR_RETURN(std::shared_ptr<const Allocation> a, AllocationRef(id));
  return *a;
}

absl::StatusOr<std::vector<Allocation>> EtcdTxn::ListAllocations() {
  std::vector<Allocation> out;
  for (const auto& [id, a] : state_->allocations.map()) out.push_back(*a);
  return out;
}

absl::StatusOr<std::shared_ptr<const Allocation>> EtcdTxn::AllocationRef(std::string_view id) {
  std::shared_ptr<const Allocation> a = state_->allocations.FindShared(id);
  if (!a) return absl::NotFoundError(absl::StrCat("allocation ", AbslView(id), " not found"));
  return a;
}

absl::StatusOr<std::vector<std::shared_ptr<const Allocation>>> EtcdTxn::AllocationRefs() {
  std::vector<std::shared_ptr<const Allocation>> out;
  for (const auto& [id, a] : state_->allocations.map()) out.push_back(a);
  return out;
}

absl::StatusOr<std::string> EtcdTxn::AllocationOfAgent(std::string_view agent_id) {
  for (const auto& [id, a] : state_->allocations.map()) {
    if (Contains(a->agent_ids, agent_id)) return id;
  }
  return std::string();
}

absl::StatusOr<Partition> EtcdTxn::GetPartition(std::string_view id) {
  const PartitionEntry* e = state_->partitions.Find(id);
  if (e == nullptr)
    return absl::NotFoundError(absl::StrCat("partition ", AbslView(id), " not found"));
  return e->partition;
}

absl::StatusOr<std::vector<Partition>> EtcdTxn::ListPartitions(std::string_view allocation_id) {
  std::vector<Partition> out;
  for (const auto& [id, e] : state_->partitions.map()) {
    if (allocation_id.empty() || e->partition.allocation_id == allocation_id) {
      out.push_back(e->partition);
    }
  }
  return out;
}

absl::StatusOr<std::vector<Partition>> EtcdTxn::PartitionsOnAgent(std::string_view agent_id) {
  std::vector<Partition> out;
  for (const auto& [id, e] : state_->partitions.map()) {
    if (OnAgent(e->partition, agent_id)) out.push_back(e->partition);
  }
  return out;
}

absl::StatusOr<int64_t> EtcdTxn::CountPartitionsInCluster(std::string_view cluster_id) {
  return CountPartitions(*state_, [&](const Partition& p) { return p.cluster_id == cluster_id; })
      .first;
}

absl::StatusOr<int64_t> EtcdTxn::CountPartitionsInAllocation(std::string_view allocation_id) {
  return CountPartitions(*state_,
                         [&](const Partition& p) { return p.allocation_id == allocation_id; })
      .first;
}

absl::StatusOr<std::set<IpuRef>> EtcdTxn::UsedIpus(std::string_view cluster_id) {
  std::set<IpuRef> used;
  for (const auto& [id, e] : state_->partitions.map()) {
    if (e->partition.cluster_id != cluster_id) continue;
    for (const fabric::PartitionIpu& ipu : e->partition.ipus) used.insert(ipu.ipu);
  }
  return used;
}

absl::StatusOr<UserRecord> EtcdTxn::GetUser(std::string_view id) {
  const UserRecord* u = state_->users.Find(id);
  if (u == nullptr) return absl::NotFoundError(absl::StrCat("user ", AbslView(id), " not found"));
  return *u;
}

absl::StatusOr<std::vector<UserRecord>> EtcdTxn::ListUsers() {
  std::vector<UserRecord> out;
  for (const auto& [id, u] : state_->users.map()) out.push_back(*u);
  return out;
}

absl::StatusOr<int64_t> EtcdTxn::CountUsers() {
  return static_cast<int64_t>(state_->users.map().size());
}

absl::StatusOr<bool> EtcdTxn::IsPartitionShared(std::string_view partition_id) {
  const PartitionEntry* e = state_->partitions.Find(partition_id);
  return e != nullptr && e->shared;
}

absl::StatusOr<std::set<std::string>> EtcdTxn::SharedPartitions() {
  std::set<std::string> out;
  for (const auto& [id, e] : state_->partitions.map()) {
    if (e->shared) out.insert(id);
  }
  return out;
}

absl::StatusOr<uint64_t> EtcdTxn::LastGeneration() { return state_->generation; }

// Changes.

absl::Status EtcdTxn::InsertAgent(const Agent& agent) {
  RETURN_IF_ERROR(Writable());
  if (work_->agents.Find(agent.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("agent ", agent.id, " already exists"));
  }
  Put(work_->agents, Table::kAgents, agent.id, std::make_shared<const Agent>(agent));
  return absl::OkStatus();
}

absl::Status EtcdTxn::UpdateAgent(const Agent& agent) {
  RETURN_IF_ERROR(Writable());
  if (work_->agents.Find(agent.id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("agent ", agent.id, " not found"));
  }
  Put(work_->agents, Table::kAgents, agent.id, std::make_shared<const Agent>(agent));
  return absl::OkStatus();
}

absl::Status EtcdTxn::DeleteAgent(std::string_view id) {
  RETURN_IF_ERROR(Writable());
  ASSIGN_OR_RETURN(std::string cluster, ClusterOfAgent(id));
  if (!cluster.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("agent ", AbslView(id), " is in cluster ",
                                                      cluster,
                                                      "; remove the cluster before the agent"));
  }
  auto [count, first] = CountPartitions(*work_, [&](const Partition& p) { return OnAgent(p, id); });
  if (count > 0) {
    return absl::FailedPreconditionError(
        absl::StrCat("agent ", AbslView(id), " has IPUs in partition ", first));
  }
  if (work_->agents.Find(id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("agent ", AbslView(id), " not found"));
  }
  Put<Agent>(work_->agents, Table::kAgents, std::string(id), nullptr);
  return absl::OkStatus();
}

absl::Status EtcdTxn::InsertCluster(const Cluster& cluster) {
  RETURN_IF_ERROR(Writable());
  if (work_->clusters.Find(cluster.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("cluster ", cluster.id, " already exists"));
  }
  const std::map<std::string_view, std::string_view> clusters = HolderOfAgent(work_->clusters);
  std::set<std::string_view> seen;
  for (const std::string& agent_id : cluster.agent_ids) {
    if (!seen.insert(agent_id).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("cluster ", cluster.id, ": agent ", AbslView(agent_id), " is listed twice"));
    }
    const std::string_view other = Find(clusters, agent_id);
    if (!other.empty()) {
      return absl::AlreadyExistsError(
          absl::StrCat("agent ", AbslView(agent_id), " is already in cluster ", AbslView(other)));
    }
    if (work_->agents.Find(agent_id) == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("cluster ", cluster.id, ": agent ", AbslView(agent_id), " does not exist"));
    }
  }
  Put(work_->clusters, Table::kClusters, cluster.id, std::make_shared<const Cluster>(cluster));
  return absl::OkStatus();
}

absl::Status EtcdTxn::DeleteCluster(std::string_view id) {
  RETURN_IF_ERROR(Writable());
  int64_t allocations = 0;
  std::string first_allocation;
  for (const auto& [aid, a] : work_->allocations.map()) {
    if (a->cluster_id != id) continue;
    if (allocations++ == 0) first_allocation = aid;
  }
  if (allocations > 0) {
    return StillUsedError("cluster", id, allocations, "allocation", first_allocation);
  }
  auto [count, first] =
      CountPartitions(*work_, [&](const Partition& p) { return p.cluster_id == id; });
  if (count > 0) {
    return StillUsedError("cluster", id, count, "partition", first);
  }
  if (work_->clusters.Find(id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("cluster ", AbslView(id), " not found"));
  }
  Put<Cluster>(work_->clusters, Table::kClusters, std::string(id), nullptr);
  return absl::OkStatus();
}

absl::Status EtcdTxn::InsertAllocation(const Allocation& allocation) {
  RETURN_IF_ERROR(Writable());
  if (work_->allocations.Find(allocation.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("allocation ", allocation.id, " already exists"));
  }
  if (work_->clusters.Find(allocation.cluster_id) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("allocation ", allocation.id, ": cluster ",
                                                      allocation.cluster_id, " does not exist"));
  }
  const std::map<std::string_view, std::string_view> clusters = HolderOfAgent(work_->clusters);
  const std::map<std::string_view, std::string_view> allocations =
      HolderOfAgent(work_->allocations);
  std::set<std::string_view> seen;
  for (const std::string& agent_id : allocation.agent_ids) {
    if (Find(clusters, agent_id) != allocation.cluster_id) {
      return absl::FailedPreconditionError(absl::StrCat("allocation ", allocation.id, ": agent ",
                                                        AbslView(agent_id), " is not in cluster ",
                                                        allocation.cluster_id));
    }
    if (!seen.insert(agent_id).second) {
      return absl::InvalidArgumentError(absl::StrCat("allocation ", allocation.id, ": agent ",
                                                     AbslView(agent_id), " is listed twice"));
    }
    const std::string_view other = Find(allocations, agent_id);
    if (!other.empty()) {
      return absl::AlreadyExistsError(absl::StrCat("agent ", AbslView(agent_id),
                                                   " is already in allocation ", AbslView(other)));
    }
  }
  Put(work_->allocations, Table::kAllocations, allocation.id,
      std::make_shared<const Allocation>(allocation));
  return absl::OkStatus();
}

absl::Status EtcdTxn::DeleteAllocation(std::string_view id) {
  RETURN_IF_ERROR(Writable());
  auto [count, first] =
      CountPartitions(*work_, [&](const Partition& p) { return p.allocation_id == id; });
  if (count > 0) {
    return StillUsedError("allocation", id, count, "partition", first);
  }
  if (work_->allocations.Find(id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("allocation ", AbslView(id), " not found"));
  }
  Put<Allocation>(work_->allocations, Table::kAllocations, std::string(id), nullptr);
  return absl::OkStatus();
}

absl::Status EtcdTxn::CheckPartition(const Partition& p) const {
  if (work_->clusters.Find(p.cluster_id) == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", p.id, ": cluster ", p.cluster_id, " does not exist"));
  }
  if (!p.allocation_id.empty() && work_->allocations.Find(p.allocation_id) == nullptr) {
    return absl::FailedPreconditionError(
        absl::StrCat("partition ", p.id, ": allocation ", p.allocation_id, " does not exist"));
  }
  // Invariant: no IPU in two partitions. Only partitions of the same
  // cluster can hold the same machines.
  std::map<IpuRef, std::string_view> held;
  for (const auto& [id, e] : work_->partitions.map()) {
    if (id == p.id || e->partition.cluster_id != p.cluster_id) continue;
    for (const fabric::PartitionIpu& ipu : e->partition.ipus) held.emplace(ipu.ipu, id);
  }
  std::set<IpuRef> mine;
  for (const fabric::PartitionIpu& ipu : p.ipus) {
    if (work_->agents.Find(ipu.ipu.agent_id) == nullptr) {
      return absl::FailedPreconditionError(
          absl::StrCat("partition ", p.id, ": agent ", ipu.ipu.agent_id, " does not exist"));
    }
    auto it = held.find(ipu.ipu);
    if (it != held.end() || !mine.insert(ipu.ipu).second) {
      return absl::AlreadyExistsError(
          absl::StrCat("IPU ", ipu.ipu.agent_id, ":", ipu.ipu.ipu, " is already in a partition (",
                       AbslView(it != held.end() ? it->second : std::string_view(p.id)), ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status EtcdTxn::InsertPartition(const Partition& partition) {
  RETURN_IF_ERROR(Writable());
  if (work_->partitions.Find(partition.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("partition ", partition.id, " already exists"));
  }
  RETURN_IF_ERROR(CheckPartition(partition));
  Put(work_->partitions, Table::kPartitions, partition.id,
      std::make_shared<const PartitionEntry>(PartitionEntry{partition, false}));
  return absl::OkStatus();
}

absl::Status EtcdTxn::UpdatePartition(const Partition& partition) {
  RETURN_IF_ERROR(Writable());
  const PartitionEntry* old = work_->partitions.Find(partition.id);
  if (old == nullptr) {
    return absl::NotFoundError(absl::StrCat("partition ", partition.id, " not found"));
  }
  RETURN_IF_ERROR(CheckPartition(partition));
  Put(work_->partitions, Table::kPartitions, partition.id,
      std::make_shared<const PartitionEntry>(PartitionEntry{partition, old->shared}));
  return absl::OkStatus();
}

absl::Status EtcdTxn::UpdatePartitionState(const Partition& partition) {
  RETURN_IF_ERROR(Writable());
  const PartitionEntry* old = work_->partitions.Find(partition.id);
  if (old == nullptr) {
    return absl::NotFoundError(absl::StrCat("partition ", partition.id, " not found"));
  }
  if (work_->clusters.Find(partition.cluster_id) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("partition ", partition.id, ": cluster ",
                                                      partition.cluster_id, " does not exist"));
  }
  if (!partition.allocation_id.empty() &&
      work_->allocations.Find(partition.allocation_id) == nullptr) {
    return absl::FailedPreconditionError(absl::StrCat("partition ", partition.id, ": allocation ",
                                                      partition.allocation_id, " does not exist"));
  }
  // The membership stays as stored.
  PartitionEntry entry{partition, old->shared};
  entry.partition.ipus = old->partition.ipus;
  Put(work_->partitions, Table::kPartitions, partition.id,
      std::make_shared<const PartitionEntry>(std::move(entry)));
  return absl::OkStatus();
}

absl::Status EtcdTxn::DeletePartition(std::string_view id) {
  RETURN_IF_ERROR(Writable());
  if (work_->partitions.Find(id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("partition ", AbslView(id), " not found"));
  }
  Put<PartitionEntry>(work_->partitions, Table::kPartitions, std::string(id), nullptr);
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> EtcdTxn::NextGeneration() {
  RETURN_IF_ERROR(Writable());
  const uint64_t old = work_->generation;
  EtcdState* work = work_;
  undo_.push_back([work, old] { work->generation = old; });
  touched_.insert(TouchedKey{true, Table::kAgents, ""});
  return ++work_->generation;
}

absl::Status EtcdTxn::InsertUser(const UserRecord& user) {
  RETURN_IF_ERROR(Writable());
  if (work_->users.Find(user.id) != nullptr) {
    return absl::AlreadyExistsError(absl::StrCat("user ", user.id, " already exists"));
  }
  Put(work_->users, Table::kUsers, user.id, std::make_shared<const UserRecord>(user));
  return absl::OkStatus();
}

absl::Status EtcdTxn::DeleteUser(std::string_view id) {
  RETURN_IF_ERROR(Writable());
  if (work_->users.Find(id) == nullptr) {
    return absl::NotFoundError(absl::StrCat("user ", AbslView(id), " not found"));
  }
  Put<UserRecord>(work_->users, Table::kUsers, std::string(id), nullptr);
  return absl::OkStatus();
}

absl::Status EtcdTxn::UpdateUser(const UserRecord& user) {
  RETURN_IF_ERROR(Writable());
  const UserRecord* old = work_->users.Find(user.id);
  if (old == nullptr) return absl::NotFoundError(absl::StrCat("user ", user.id, " not found"));
  UserRecord stored = user;
  stored.created_unix_ms = old->created_unix_ms;
  Put(work_->users, Table::kUsers, user.id, std::make_shared<const UserRecord>(std::move(stored)));
  return absl::OkStatus();
}

absl::Status EtcdTxn::SetPartitionShared(std::string_view partition_id, bool shared) {
  RETURN_IF_ERROR(Writable());
  const PartitionEntry* old = work_->partitions.Find(partition_id);
  if (old == nullptr) {
    if (!shared) return absl::OkStatus();
    return absl::NotFoundError(absl::StrCat("partition ", AbslView(partition_id), " not found"));
  }
  if (old->shared == shared) return absl::OkStatus();
  Put(work_->partitions, Table::kPartitions, std::string(partition_id),
      std::make_shared<const PartitionEntry>(PartitionEntry{old->partition, shared}));
  return absl::OkStatus();
}

}  // namespace vipu::storage::etcd
