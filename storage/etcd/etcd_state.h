// The state the etcd store holds in memory, and the transaction that reads
// and changes it.
#ifndef VIPU_STORAGE_ETCD_ETCD_STATE_H_
#define VIPU_STORAGE_ETCD_ETCD_STATE_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "storage/etcd/etcd_layout.h"
#include "storage/store.h"

namespace vipu::storage::etcd {

// One table: id -> immutable record, ordered by id. Copy-on-write: copies
// share the map until the writer first changes it after Seal(), so a
// published snapshot costs a pointer per table and readers never see a
// change in progress. Not thread-safe: the writer changes it on its thread;
// readers only read a sealed copy.
template <typename T>
class CowTable {
 public:
  using Map = std::map<std::string, std::shared_ptr<const T>, std::less<>>;

  const Map& map() const { return *map_; }
  const T* Find(std::string_view id) const {
    auto it = map_->find(id);
    return it == map_->end() ? nullptr : it->second.get();
  }
  std::shared_ptr<const T> FindShared(std::string_view id) const {
    auto it = map_->find(id);
    return it == map_->end() ? nullptr : it->second;
  }
  // The map to change; copied first when it may be shared.
  Map& Mutable() {
    if (!owned_) {
      map_ = std::make_shared<Map>(*map_);
      owned_ = true;
    }
    return *map_;
  }
  // From now on the map may be shared: the next change copies it.
  void Seal() { owned_ = false; }

 private:
  std::shared_ptr<Map> map_ = std::make_shared<Map>();
  bool owned_ = true;
};

// Everything the server keeps: the tables and the last generation.
struct EtcdState {
  CowTable<fabric::Agent> agents;
  CowTable<fabric::Cluster> clusters;
  CowTable<fabric::Allocation> allocations;
  CowTable<PartitionEntry> partitions;
  CowTable<UserRecord> users;
  uint64_t generation = 0;

  void Seal() {
    agents.Seal();
    clusters.Seal();
    allocations.Seal();
    partitions.Seal();
    users.Seal();
  }
};

// A key the writer changed: its table and id, or the generation.
struct TouchedKey {
  bool generation = false;
  Table table = Table::kAgents;
  std::string id;
  friend bool operator<(const TouchedKey& a, const TouchedKey& b) {
    return std::tie(a.generation, a.table, a.id) < std::tie(b.generation, b.table, b.id);
  }
};

// Reads (and, given a mutable state, changes) one EtcdState with the same
// answers and errors as the SQLite store (storage/store.h states them).
// Each change records how to undo it and which key it touched, so that the
// store can roll back a failed callback and write exactly the keys a group
// changed. Not thread-safe: used on one thread for one callback.
class EtcdTxn final : public WriteTxn {
 public:
  // Read-only over a published snapshot: every change is refused.
  explicit EtcdTxn(const EtcdState* state) : state_(state), work_(nullptr) {}
  // Reads and changes `work` (the writer's state).
  explicit EtcdTxn(EtcdState* work) : state_(work), work_(work) {}

  // Undoes every change since construction (a callback that failed).
  void Rollback();
  // The keys changed since construction.
  const std::set<TouchedKey>& touched() const { return touched_; }

  absl::StatusOr<fabric::Agent> GetAgent(std::string_view id) override;
  absl::StatusOr<std::vector<fabric::Agent>> ListAgents() override;
  absl::StatusOr<fabric::Cluster> GetCluster(std::string_view id) override;
  absl::StatusOr<std::vector<fabric::Cluster>> ListClusters() override;
  absl::StatusOr<std::shared_ptr<const fabric::Cluster>> ClusterRef(std::string_view id) override;
  absl::StatusOr<std::vector<std::shared_ptr<const fabric::Cluster>>> ClusterRefs() override;
  absl::StatusOr<std::string> ClusterOfAgent(std::string_view agent_id) override;
  absl::StatusOr<fabric::Allocation> GetAllocation(std::string_view id) override;
  absl::StatusOr<std::vector<fabric::Allocation>> ListAllocations() override;
  absl::StatusOr<std::shared_ptr<const fabric::Allocation>> AllocationRef(
      std::string_view id) override;
  absl::StatusOr<std::vector<std::shared_ptr<const fabric::Allocation>>> AllocationRefs() override;
  absl::StatusOr<std::string> AllocationOfAgent(std::string_view agent_id) override;
  absl::StatusOr<fabric::Partition> GetPartition(std::string_view id) override;
  absl::StatusOr<std::vector<fabric::Partition>> ListPartitions(
      std::string_view allocation_id = "") override;
  absl::StatusOr<std::vector<fabric::Partition>> PartitionsOnAgent(
      std::string_view agent_id) override;
  absl::StatusOr<int64_t> CountPartitionsInCluster(std::string_view cluster_id) override;
  absl::StatusOr<int64_t> CountPartitionsInAllocation(std::string_view allocation_id) override;
  absl::StatusOr<std::set<fabric::IpuRef>> UsedIpus(std::string_view cluster_id) override;
  absl::StatusOr<UserRecord> GetUser(std::string_view id) override;
  absl::StatusOr<std::vector<UserRecord>> ListUsers() override;
  absl::StatusOr<int64_t> CountUsers() override;
  absl::StatusOr<bool> IsPartitionShared(std::string_view partition_id) override;
  absl::StatusOr<std::set<std::string>> SharedPartitions() override;
  absl::StatusOr<uint64_t> LastGeneration() override;

  absl::Status InsertAgent(const fabric::Agent& agent) override;
  absl::Status UpdateAgent(const fabric::Agent& agent) override;
  absl::Status DeleteAgent(std::string_view id) override;
  absl::Status InsertCluster(const fabric::Cluster& cluster) override;
  absl::Status DeleteCluster(std::string_view id) override;
  absl::Status InsertAllocation(const fabric::Allocation& allocation) override;
  absl::Status DeleteAllocation(std::string_view id) override;
  absl::Status InsertPartition(const fabric::Partition& partition) override;
  absl::Status UpdatePartition(const fabric::Partition& partition) override;
  absl::Status UpdatePartitionState(const fabric::Partition& partition) override;
  absl::Status DeletePartition(std::string_view id) override;
  absl::StatusOr<uint64_t> NextGeneration() override;
  absl::Status InsertUser(const UserRecord& user) override;
  absl::Status DeleteUser(std::string_view id) override;
  absl::Status UpdateUser(const UserRecord& user) override;
  absl::Status SetPartitionShared(std::string_view partition_id, bool shared) override;

 private:
  absl::Status Writable() const;
  // Sets (value) or erases (nullptr) one record, recording its undo and key.
  template <typename T>
  void Put(CowTable<T>& table, Table which, const std::string& id, std::shared_ptr<const T> value);
  // The partition's cluster, allocation and machines exist, and none of its
  // IPUs is held by another partition.
  absl::Status CheckPartition(const fabric::Partition& p) const;

  const EtcdState* state_;
  EtcdState* work_;
  std::vector<std::function<void()>> undo_;
  std::set<TouchedKey> touched_;
};

}  // namespace vipu::storage::etcd

#endif  // VIPU_STORAGE_ETCD_ETCD_STATE_H_
