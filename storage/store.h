// Durable state of vipu-server in one SQLite file. The only place that
// writes SQL.
//
// Use: Store::Open(path) once; then Read(fn) for queries and Write(fn) for
// changes. A Write callback runs inside a transaction on the single writer
// thread; when Write returns OK the change is committed with
// synchronous=FULL (durable across kill -9 and power loss). Writes from many
// threads are grouped into one commit (group commit); each callback runs in
// its own SAVEPOINT, so a callback that returns an error leaves nothing
// behind and does not affect the others in its group.
#ifndef VIPU_STORAGE_STORE_H_
#define VIPU_STORAGE_STORE_H_

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

namespace vipu::storage {

// Schema version this binary writes (PRAGMA user_version).
inline constexpr int kSchemaVersion = 2;

// A user of the secure mode (docs/security.md). The access key itself is never
// stored: `key_hash` is the salted hash written by server/auth/access_key.h.
struct UserRecord {
  std::string id;
  std::string key_hash;
  bool is_admin = false;
  std::vector<std::string> allocations;  // allocations granted; empty: every allocation
  int64_t created_unix_ms = 0;
};

class Connection;        // storage/connection.h: an sqlite3 handle and its prepared statements.
class MembershipCache;   // storage/membership_cache.h: clusters and allocations in memory.
class MembershipChange;  // storage/membership_cache.h: what one writer group changed of them.

// Typed queries. Valid only inside the callback it was handed to, whose
// connection it borrows. Not thread-safe: only the callback's thread uses it.
// Errors: NOT_FOUND naming the object, INTERNAL for SQLite failures.
class ReadTxn {
 public:
  // `cache` (optional) serves ClusterRef and AllocationRef; `epoch` is its
  // epoch as recorded before this transaction's snapshot was taken.
  explicit ReadTxn(Connection* conn, MembershipCache* cache = nullptr, uint64_t epoch = 0)
      : conn_(conn), cache_(cache), epoch_(epoch) {}

  absl::StatusOr<fabric::Agent> GetAgent(std::string_view id);
  absl::StatusOr<std::vector<fabric::Agent>> ListAgents();

  absl::StatusOr<fabric::Cluster> GetCluster(std::string_view id);
  absl::StatusOr<std::vector<fabric::Cluster>> ListClusters();
  // The same, shared and immutable: what this transaction's snapshot holds,
  // from the Store's membership cache after the first read (O(1) instead of
  // a row per agent; storage/membership_cache.h says why it is coherent).
  // Ordered by id, as the lists above.
  absl::StatusOr<std::shared_ptr<const fabric::Cluster>> ClusterRef(std::string_view id);
  absl::StatusOr<std::vector<std::shared_ptr<const fabric::Cluster>>> ClusterRefs();
  // Cluster that contains the agent, or "" when none.
  absl::StatusOr<std::string> ClusterOfAgent(std::string_view agent_id);

  absl::StatusOr<fabric::Allocation> GetAllocation(std::string_view id);
  absl::StatusOr<std::vector<fabric::Allocation>> ListAllocations();
  absl::StatusOr<std::shared_ptr<const fabric::Allocation>> AllocationRef(std::string_view id);
  absl::StatusOr<std::vector<std::shared_ptr<const fabric::Allocation>>> AllocationRefs();
  // Allocation that contains the agent, or "" when none.
  absl::StatusOr<std::string> AllocationOfAgent(std::string_view agent_id);

  absl::StatusOr<fabric::Partition> GetPartition(std::string_view id);
  // All partitions, or those of one allocation; ordered by id.
  absl::StatusOr<std::vector<fabric::Partition>> ListPartitions(
      std::string_view allocation_id = "");
  absl::StatusOr<std::vector<fabric::Partition>> PartitionsOnAgent(std::string_view agent_id);
  absl::StatusOr<int64_t> CountPartitionsInCluster(std::string_view cluster_id);
  absl::StatusOr<int64_t> CountPartitionsInAllocation(std::string_view allocation_id);
  // IPUs held by any partition on the cluster's agents.
  absl::StatusOr<std::set<fabric::IpuRef>> UsedIpus(std::string_view cluster_id);

  // Users (storage/user_txn.cc), ordered by id.
  absl::StatusOr<UserRecord> GetUser(std::string_view id);
  absl::StatusOr<std::vector<UserRecord>> ListUsers();
  absl::StatusOr<int64_t> CountUsers();
  // Partitions marked shared: visible to every user of their allocation, not
  // only to their owner.
  absl::StatusOr<bool> IsPartitionShared(std::string_view partition_id);
  absl::StatusOr<std::set<std::string>> SharedPartitions();

 protected:
  // Makes sure this transaction has its snapshot (a cache hit is trusted
  // only once it has: storage/membership_cache.h).
  absl::Status BeginSnapshot();

  Connection* conn_;
  MembershipCache* cache_;
  uint64_t epoch_;
};

// Typed changes. Constraint violations come back as:
// ALREADY_EXISTS (duplicate id; an IPU already in a partition: the unique key
// on the IPU is what enforces invariant 1), FAILED_PRECONDITION (a foreign key
// still referenced, e.g. removing an agent that is in a cluster).
class WriteTxn : public ReadTxn {
 public:
  // `change` (with `cache`) records the clusters and allocations the group
  // inserts or deletes, so that the cache ends the change after its commit.
  explicit WriteTxn(Connection* conn, MembershipCache* cache = nullptr, uint64_t epoch = 0,
                    MembershipChange* change = nullptr)
      : ReadTxn(conn, cache, epoch), change_(change) {}

  absl::Status InsertAgent(const fabric::Agent& agent);
  absl::Status UpdateAgent(const fabric::Agent& agent);  // host, port, machine type
  absl::Status DeleteAgent(std::string_view id);

  absl::Status InsertCluster(const fabric::Cluster& cluster);
  absl::Status DeleteCluster(std::string_view id);

  absl::Status InsertAllocation(const fabric::Allocation& allocation);
  absl::Status DeleteAllocation(std::string_view id);

  // Inserts the partition row and one membership row per IPU.
  absl::Status InsertPartition(const fabric::Partition& partition);
  // Rewrites every mutable column (states, errors, generation, counters,
  // timestamps, spec fields) and the membership rows.
  absl::Status UpdatePartition(const fabric::Partition& partition);
  // The same without the membership rows, which stay as they are: what a
  // change of state, errors or generation needs (one statement instead of
  // rewriting every IPU).
  absl::Status UpdatePartitionState(const fabric::Partition& partition);
  absl::Status DeletePartition(std::string_view id);

  // A fresh, never reused generation number (monotonic across restarts).
  absl::StatusOr<uint64_t> NextGeneration();

  // ALREADY_EXISTS for a duplicate id.
  absl::Status InsertUser(const UserRecord& user);
  absl::Status DeleteUser(std::string_view id);  // NOT_FOUND when absent
  // Rewrites the key hash, the admin flag and the allocations of the user
  // `user.id`; the creation time stays. NOT_FOUND when absent.
  absl::Status UpdateUser(const UserRecord& user);
  // The mark goes away with the partition (ON DELETE CASCADE).
  absl::Status SetPartitionShared(std::string_view partition_id, bool shared);

 private:
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

// Owns the SQLite connections (one writer, a pool of readers) and the writer
// thread. Thread-safe: every method may be called from any thread, but not
// Write from inside a Write callback.
class Store {
 public:
  // Opens or creates the file: WAL, synchronous=FULL, foreign_keys=ON,
  // busy timeout; runs PRAGMA quick_check (FAILED_PRECONDITION with SQLite's
  // message when it fails); migrates an older schema forward; refuses
  // (FAILED_PRECONDITION) a schema newer than kSchemaVersion.
  // INVALID_ARGUMENT for options out of range.
  static absl::StatusOr<std::unique_ptr<Store>> Open(const std::string& path,
                                                     StoreOptions options = {});
  ~Store();  // drains queued writes, stops the writer thread, closes.

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Runs fn against a consistent snapshot (read connection from a pool).
  // Each nested Read takes another pool connection. Inside a Write callback
  // use its WriteTxn (also a ReadTxn) to see the callback's own changes.
  absl::Status Read(const std::function<absl::Status(ReadTxn&)>& fn);
  // Runs fn in a write transaction; returns fn's error (nothing written), or
  // the commit's error, or OK once durable. fn runs on the writer thread and
  // must not call Write (refused with FAILED_PRECONDITION: it would wait on
  // itself). A generation from NextGeneration() in a callback that fails
  // is rolled back and may be handed out again.
  absl::Status Write(const std::function<absl::Status(WriteTxn&)>& fn);
  // Write without waiting: `fn` joins the same groups and `done` is called
  // with what Write would have returned, exactly once, on the writer thread
  // right after the commit (or at once with UNAVAILABLE on the calling
  // thread when the store is closing). `done` must be quick and must not
  // block or call Write; it may call WriteAsync. Lets a chain of work
  // (agents answered, record the outcome, tell the readers) go on without a
  // thread waiting at each step.
  void WriteAsync(std::function<absl::Status(WriteTxn&)> fn,
                  std::function<void(absl::Status)> done);

  // Online copy of the database to `path` (SQLite backup API).
  absl::Status Backup(const std::string& path);

  // Number of commits and of write callbacks so far (for metrics and tests
  // of group commit).
  uint64_t commits() const;
  uint64_t writes() const;
  // Write callbacks queued and not yet taken by the writer thread (queue
  // depth, for metrics; tests use it to fill one group deterministically).
  uint64_t pending_writes() const;
  // The epoch of the membership cache (storage/membership_cache.h): even
  // while no change of clusters or allocations is in flight.
  uint64_t MembershipEpochForTesting() const;

  // Called on the writer thread after every durable COMMIT with the seconds
  // from BEGIN to the end of COMMIT and the number of writes in the group
  // (the server's commit latency histogram). Must be cheap and must not call
  // Write. Replaces any previous observer; empty: none.
  void SetCommitObserver(std::function<void(double seconds, size_t writes)> observer);

 private:
  class Impl;
  explicit Store(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_STORE_H_
