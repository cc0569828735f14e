// The Store of storage/store.h in one SQLite file: the only place that
// writes SQL.
//
// One writer connection on one writer thread, and a pool of read-only
// connections. Writes from many threads are grouped into one commit (group
// commit) with synchronous=FULL in WAL mode, so an acknowledged Write is
// durable across kill -9 and power loss; each callback runs in its own
// SAVEPOINT, so a callback that returns an error leaves nothing behind and
// does not affect the others in its group. Clusters and allocations are
// served from a membership cache coherent with each transaction's snapshot
// (storage/membership_cache.h).
#ifndef VIPU_STORAGE_SQLITE_STORE_H_
#define VIPU_STORAGE_SQLITE_STORE_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fabric/types.h"
#include "storage/store.h"

namespace vipu::storage {

class Connection;        // storage/connection.h: an sqlite3 handle and its prepared statements.
class MembershipCache;   // storage/membership_cache.h: clusters and allocations in memory.
class MembershipChange;  // storage/membership_cache.h: what one writer group changed of them.

// The transaction SqliteStore hands to Read callbacks (as a ReadTxn, on a
// read-only pool connection) and to Write callbacks (as a WriteTxn, on the
// writer connection). Borrows the connection, the cache and the change; does
// not own them. Not thread-safe: only the callback's thread uses it.
// Errors beyond the WriteTxn contract: INTERNAL for SQLite failures,
// RESOURCE_EXHAUSTED (naming the database file) when its disk is full.
class SqliteTxn final : public WriteTxn {
 public:
  // `cache` (optional) serves ClusterRef and AllocationRef; `epoch` is its
  // epoch as recorded before this transaction's snapshot was taken.
  // `change` (with `cache`, writes only) records the clusters and
  // allocations the group inserts or deletes, so that the cache ends the
  // change after its commit.
  explicit SqliteTxn(Connection* conn, MembershipCache* cache = nullptr, uint64_t epoch = 0,
                     MembershipChange* change = nullptr)
      : conn_(conn), cache_(cache), epoch_(epoch), change_(change) {}

  // Queries (storage/sqlite_read_txn.cc).
  absl::StatusOr<fabric::Agent> GetAgent(std::string_view id) override;
  absl::StatusOr<std::vector<fabric::Agent>> ListAgents() override;
  absl::StatusOr<fabric::Cluster> GetCluster(std::string_view id) override;
  absl::StatusOr<std::vector<fabric::Cluster>> ListClusters() override;
  // From the membership cache after the first read of the snapshot.
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

  // Users and shares (storage/sqlite_user_txn.cc).
  absl::StatusOr<UserRecord> GetUser(std::string_view id) override;
  absl::StatusOr<std::vector<UserRecord>> ListUsers() override;
  absl::StatusOr<int64_t> CountUsers() override;
  absl::StatusOr<bool> IsPartitionShared(std::string_view partition_id) override;
  absl::StatusOr<std::set<std::string>> SharedPartitions() override;
  absl::StatusOr<uint64_t> LastGeneration() override;
  absl::Status InsertUser(const UserRecord& user) override;
  absl::Status DeleteUser(std::string_view id) override;
  absl::Status UpdateUser(const UserRecord& user) override;
  absl::Status SetPartitionShared(std::string_view partition_id, bool shared) override;

  // Changes (storage/sqlite_write_txn.cc): each in its own SAVEPOINT.
  absl::Status InsertAgent(const fabric::Agent& agent) override;
  absl::Status UpdateAgent(const fabric::Agent& agent) override;
  absl::Status DeleteAgent(std::string_view id) override;
  absl::Status InsertCluster(const fabric::Cluster& cluster) override;
  absl::Status DeleteCluster(std::string_view id) override;
  absl::Status InsertAllocation(const fabric::Allocation& allocation) override;
  absl::Status DeleteAllocation(std::string_view id) override;
  // Inserts the partition row and one membership row per IPU; the unique
  // key on (agent, IPU) is what enforces invariant 1.
  absl::Status InsertPartition(const fabric::Partition& partition) override;
  absl::Status UpdatePartition(const fabric::Partition& partition) override;
  // One statement: the membership rows are not touched.
  absl::Status UpdatePartitionState(const fabric::Partition& partition) override;
  absl::Status DeletePartition(std::string_view id) override;
  // A counter in the meta table, so monotonic across restarts.
  absl::StatusOr<uint64_t> NextGeneration() override;

 private:
  // Makes sure this transaction has its snapshot (a cache hit is trusted
  // only once it has: storage/membership_cache.h).
  absl::Status BeginSnapshot();

  Connection* conn_;
  MembershipCache* cache_;
  uint64_t epoch_;
  MembershipChange* change_;
};

struct StoreOptions {
  // Longest time the writer waits to gather more writes into one commit once
  // the first is queued. 0: commit as soon as the queue is drained.
  int group_commit_window_us = 0;
  // Read-only connections in the pool behind Read() and Backup(); >= 1.
  int read_connections = 4;
  // How long a statement waits for a lock held by another process, >= 0.
  int busy_timeout_ms = 5000;
};

// Owns the SQLite connections (one writer, a pool of readers), the writer
// thread (a WriteQueue, storage/write_queue.h) and the membership cache.
// Thread-safe, as Store says. The file is meant to have one writing process
// (storage/database_lock.h): the cache trusts that nobody else changes
// clusters or allocations.
class SqliteStore final : public Store {
 public:
  // Opens or creates the file: WAL, synchronous=FULL, foreign_keys=ON,
  // busy timeout; runs PRAGMA quick_check (FAILED_PRECONDITION with SQLite's
  // message when it fails); migrates an older schema forward; refuses
  // (FAILED_PRECONDITION) a schema newer than kSchemaVersion.
  // INVALID_ARGUMENT for options out of range.
  static absl::StatusOr<std::unique_ptr<SqliteStore>> Open(const std::string& path,
                                                           StoreOptions options = {});
  ~SqliteStore() override;  // drains queued writes, stops the writer thread, closes.

  // Each Read takes a connection of the pool for its duration (waiting for
  // one when all are taken) and its snapshot is SQLite's read transaction.
  absl::Status Read(const std::function<absl::Status(ReadTxn&)>& fn) override;
  // The writer thread runs the callbacks queued meanwhile as one group, one
  // transaction with one SAVEPOINT per callback, and commits once.
  absl::Status Write(const std::function<absl::Status(WriteTxn&)>& fn) override;
  // `done` runs on the writer thread; a Write from it is refused with
  // FAILED_PRECONDITION.
  void WriteAsync(std::function<absl::Status(WriteTxn&)> fn,
                  std::function<void(absl::Status)> done) override;
  // A complete SQLite database file (SQLite backup API), written under a
  // temporary name and renamed into place.
  absl::Status Backup(const std::string& path) override;

  uint64_t commits() const override;
  uint64_t writes() const override;
  uint64_t pending_writes() const override;
  // Called on the writer thread with the seconds from BEGIN to the end of
  // COMMIT and the size of the group.
  void SetCommitObserver(std::function<void(double seconds, size_t writes)> observer) override;

  // The epoch of the membership cache (storage/membership_cache.h): even
  // while no change of clusters or allocations is in flight.
  uint64_t MembershipEpochForTesting() const;

 private:
  class Impl;
  explicit SqliteStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_SQLITE_STORE_H_
