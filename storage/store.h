// The durable state of vipu-server behind one interface: a Store hands out
// transactions, ReadTxn for queries and WriteTxn for changes, over the
// agents, clusters, allocations, partitions, users and partition shares.
//
// Implementations: SqliteStore (storage/sqlite_store.h), one SQLite file;
// an etcd store lives in storage/etcd/. Everything above storage/ uses only
// Store&, ReadTxn& and WriteTxn&; only the code that opens the store names an
// implementation. tests/unit/support/storage_contract.h is the executable form of
// the contract written here, and every implementation runs it.
//
// Use: open an implementation once; then Read(fn) for queries and Write(fn)
// or WriteAsync(fn, done) for changes. When Write returns OK the change is
// committed and durable (it survives kill -9 and a restart). Each callback is
// all-or-nothing: a callback that returns an error leaves nothing behind and
// does not affect other writes in flight at the same time.
//
// Errors common to every method: INTERNAL for a failure of the backing store
// (I/O, corrupt data), RESOURCE_EXHAUSTED when it has no room left for a
// change (a full disk or quota: the change is not written, reads go on, and
// writes succeed again once there is room), UNAVAILABLE when it cannot be
// reached. Messages name the objects concerned (ids), so the server can pass
// them on to users.
#ifndef VIPU_STORAGE_STORE_H_
#define VIPU_STORAGE_STORE_H_

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

namespace vipu::storage {

// Schema version this binary writes (PRAGMA user_version of the SQLite file;
// other implementations record it as they see fit).
inline constexpr int kSchemaVersion = 2;

// A user of the secure mode (docs/security.md). The access key itself is never
// stored: `key_hash` is the salted hash written by server/security/access_key.h.
struct UserRecord {
  std::string id;
  std::string key_hash;
  bool is_admin = false;
  std::vector<std::string> allocations;  // allocations granted; empty: every allocation
  int64_t created_unix_ms = 0;
};

// Typed queries against one consistent snapshot of the state. Handed to a
// Read or Write callback by the Store, which owns it; valid only inside that
// callback. Not thread-safe: only the callback's thread uses it.
//
// Lists are ordered by id, in byte order (as std::string compares). The
// agents of a cluster or allocation and the IPUs of a partition keep the
// order they were inserted in. Unknown ids are NOT_FOUND ("<kind> <id> not
// found") for Get*, and empty/zero/false for every other query.
class ReadTxn {
 public:
  virtual ~ReadTxn() = default;

  ReadTxn(const ReadTxn&) = delete;
  ReadTxn& operator=(const ReadTxn&) = delete;

  virtual absl::StatusOr<fabric::Agent> GetAgent(std::string_view id) = 0;
  virtual absl::StatusOr<std::vector<fabric::Agent>> ListAgents() = 0;

  virtual absl::StatusOr<fabric::Cluster> GetCluster(std::string_view id) = 0;
  virtual absl::StatusOr<std::vector<fabric::Cluster>> ListClusters() = 0;
  // The same, shared and immutable, and equal to what GetCluster and
  // ListClusters return in the same transaction. An implementation may serve
  // them from memory (O(1) instead of a row per agent); callers that only
  // look should prefer them.
  virtual absl::StatusOr<std::shared_ptr<const fabric::Cluster>> ClusterRef(
      std::string_view id) = 0;
  virtual absl::StatusOr<std::vector<std::shared_ptr<const fabric::Cluster>>> ClusterRefs() = 0;
  // Cluster that contains the agent, or "" when none (also for an unknown agent).
  virtual absl::StatusOr<std::string> ClusterOfAgent(std::string_view agent_id) = 0;

  virtual absl::StatusOr<fabric::Allocation> GetAllocation(std::string_view id) = 0;
  virtual absl::StatusOr<std::vector<fabric::Allocation>> ListAllocations() = 0;
  // As ClusterRef and ClusterRefs, for allocations.
  virtual absl::StatusOr<std::shared_ptr<const fabric::Allocation>> AllocationRef(
      std::string_view id) = 0;
  virtual absl::StatusOr<std::vector<std::shared_ptr<const fabric::Allocation>>>
  AllocationRefs() = 0;
  // Allocation that contains the agent, or "" when none (also for an unknown agent).
  virtual absl::StatusOr<std::string> AllocationOfAgent(std::string_view agent_id) = 0;

  virtual absl::StatusOr<fabric::Partition> GetPartition(std::string_view id) = 0;
  // All partitions, or those of one allocation ("" means all).
  virtual absl::StatusOr<std::vector<fabric::Partition>> ListPartitions(
      std::string_view allocation_id = "") = 0;
  // Whole partitions (with their IPUs on other agents too) holding an IPU of the agent.
  virtual absl::StatusOr<std::vector<fabric::Partition>> PartitionsOnAgent(
      std::string_view agent_id) = 0;
  virtual absl::StatusOr<int64_t> CountPartitionsInCluster(std::string_view cluster_id) = 0;
  virtual absl::StatusOr<int64_t> CountPartitionsInAllocation(std::string_view allocation_id) = 0;
  // IPUs held by any partition on the cluster's agents.
  virtual absl::StatusOr<std::set<fabric::IpuRef>> UsedIpus(std::string_view cluster_id) = 0;

  virtual absl::StatusOr<UserRecord> GetUser(std::string_view id) = 0;
  virtual absl::StatusOr<std::vector<UserRecord>> ListUsers() = 0;
  virtual absl::StatusOr<int64_t> CountUsers() = 0;
  // Partitions marked shared: visible to every user of their allocation, not
  // only to their owner. False for an unknown partition.
  virtual absl::StatusOr<bool> IsPartitionShared(std::string_view partition_id) = 0;
  virtual absl::StatusOr<std::set<std::string>> SharedPartitions() = 0;
  // The last generation handed out (0 before the first): what a copy of the
  // state must carry so that it never hands one out again.
  virtual absl::StatusOr<uint64_t> LastGeneration() = 0;

 protected:
  ReadTxn() = default;
};

// Typed changes, inside one Write callback; its queries (ReadTxn) see the
// callback's own changes. Owned by the Store, valid only inside the callback,
// used only by the callback's thread.
//
// Every method is all-or-nothing on its own: when it returns an error it has
// changed nothing, so a callback that ignores the error and returns OK still
// commits a consistent state. The error codes every implementation gives:
//   ALREADY_EXISTS      a duplicate id; an agent already in another cluster
//                       or allocation; an IPU already held by a partition
//                       (another one, or the same IPU twice in one):
//                       invariant 1 of docs/architecture.md.
//   FAILED_PRECONDITION a reference to something that does not exist (agent,
//                       cluster, allocation); an allocation agent outside its
//                       cluster; deleting something still referenced (an
//                       agent in a cluster or holding an IPU, a cluster with
//                       allocations or partitions, an allocation with
//                       partitions).
//   INVALID_ARGUMENT    the same agent listed twice in one cluster or allocation.
//   NOT_FOUND           updating or deleting what does not exist.
// Messages name the objects ("IPU a0:3 is already in a partition (p1)").
class WriteTxn : public ReadTxn {
 public:
  // ALREADY_EXISTS for a duplicate id.
  virtual absl::Status InsertAgent(const fabric::Agent& agent) = 0;
  // Rewrites host, port and machine type. NOT_FOUND when absent.
  virtual absl::Status UpdateAgent(const fabric::Agent& agent) = 0;
  // FAILED_PRECONDITION while the agent is in a cluster or holds an IPU of a
  // partition; NOT_FOUND when absent.
  virtual absl::Status DeleteAgent(std::string_view id) = 0;

  // ALREADY_EXISTS for a duplicate id or an agent already in another
  // cluster; FAILED_PRECONDITION for an unknown agent; INVALID_ARGUMENT for
  // an agent listed twice.
  virtual absl::Status InsertCluster(const fabric::Cluster& cluster) = 0;
  // FAILED_PRECONDITION while allocations or partitions refer to it;
  // NOT_FOUND when absent. Its agents are free again afterwards.
  virtual absl::Status DeleteCluster(std::string_view id) = 0;

  // ALREADY_EXISTS for a duplicate id or an agent already in another
  // allocation; FAILED_PRECONDITION for an unknown cluster or an agent not
  // in that cluster; INVALID_ARGUMENT for an agent listed twice.
  virtual absl::Status InsertAllocation(const fabric::Allocation& allocation) = 0;
  // FAILED_PRECONDITION while partitions refer to it; NOT_FOUND when absent.
  virtual absl::Status DeleteAllocation(std::string_view id) = 0;

  // Every field and IPU as given; an empty allocation_id means none.
  // ALREADY_EXISTS for a duplicate id or an IPU already held;
  // FAILED_PRECONDITION for an unknown cluster, allocation or agent.
  virtual absl::Status InsertPartition(const fabric::Partition& partition) = 0;
  // Rewrites every field (states, errors, generation, counters, timestamps,
  // spec fields) and the IPUs: IPUs no longer listed are free afterwards.
  // NOT_FOUND when absent; otherwise the errors of InsertPartition.
  virtual absl::Status UpdatePartition(const fabric::Partition& partition) = 0;
  // The same but the IPUs stay as they are (`partition.ipus` is ignored):
  // what a change of state, errors or generation needs, cheaper than
  // rewriting every IPU.
  virtual absl::Status UpdatePartitionState(const fabric::Partition& partition) = 0;
  // Frees its IPUs and drops its shared mark. NOT_FOUND when absent.
  virtual absl::Status DeletePartition(std::string_view id) = 0;

  // A fresh generation number, >= 1: greater than every number handed out
  // by a write that committed, in this process or before a restart. A number
  // taken in a callback that fails may be handed out again.
  virtual absl::StatusOr<uint64_t> NextGeneration() = 0;

  // ALREADY_EXISTS for a duplicate id.
  virtual absl::Status InsertUser(const UserRecord& user) = 0;
  // NOT_FOUND when absent.
  virtual absl::Status DeleteUser(std::string_view id) = 0;
  // Rewrites the key hash, the admin flag and the allocations of the user
  // `user.id`; the creation time stays. NOT_FOUND when absent.
  virtual absl::Status UpdateUser(const UserRecord& user) = 0;
  // Marks or unmarks the partition shared; either is idempotent. NOT_FOUND
  // when marking a partition that does not exist. The mark goes away with
  // the partition.
  virtual absl::Status SetPartitionShared(std::string_view partition_id, bool shared) = 0;

 protected:
  WriteTxn() = default;
};

// The durable state: owns the backing store's connections and whatever
// threads run the writes; owns the transactions it hands to callbacks.
// Thread-safe: every method may be called from any thread, but not Write
// from inside a Write callback or a WriteAsync `done`.
//
// Destroying a Store completes every write already queued (its Write
// returns, its `done` is called exactly once) before it returns; writes
// acknowledged OK are durable.
class Store {
 public:
  virtual ~Store() = default;

  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  // Runs fn against a consistent snapshot that includes every write
  // acknowledged before Read was called; writes committing meanwhile do not
  // show in it. Returns fn's error, or the backing store's. Reads may nest
  // (each is its own snapshot). Inside a Write callback use its WriteTxn
  // (also a ReadTxn) to see the callback's own changes.
  virtual absl::Status Read(const std::function<absl::Status(ReadTxn&)>& fn) = 0;
  // OK while this store may be answered from: what a Read or Write would
  // refuse with now otherwise (a store that follows a leadership it may have
  // lost). What the process answers from its own memory on the store's
  // behalf (the agents' heartbeats) asks first. Default: always OK.
  virtual absl::Status Answerable() const { return absl::OkStatus(); }
  // For a member handing its leadership over: from now on every Read, Write
  // and Answerable is refused with UNAVAILABLE marked NothingDone
  // (base/nothing_done.h), saying so. Returns once every write admitted
  // before has been answered, so that no write this member acknowledges
  // commits after it lets go. Default (a store no other member follows):
  // nothing.
  virtual void StopAnswering() {}
  // Runs fn in a write transaction; returns fn's error (nothing of fn
  // written), or the commit's error, or OK once durable. A callback that
  // throws is an INTERNAL error and writes nothing. Writes from many threads
  // may run on another thread and be committed together; one callback's
  // failure never affects the others. fn must not call Write (refused with
  // FAILED_PRECONDITION: it would wait on itself).
  virtual absl::Status Write(const std::function<absl::Status(WriteTxn&)>& fn) = 0;
  // Write without waiting: `done` is called with what Write would have
  // returned, exactly once, right after the commit on a thread of the store
  // (or at once, with UNAVAILABLE, on the calling thread when the store is
  // closing). When it is called with OK, a Read already sees the change.
  // `done` must be quick and must not block or call Write; it may call
  // WriteAsync. Lets a chain of work (agents answered, record the outcome,
  // tell the readers) go on without a thread waiting at each step.
  virtual void WriteAsync(std::function<absl::Status(WriteTxn&)> fn,
                          std::function<void(absl::Status)> done) = 0;

  // Consistent online copy of the whole state to `path`, written whole or
  // not at all (a crash leaves the previous file). Its format is the
  // implementation's own.
  virtual absl::Status Backup(const std::string& path) = 0;

  // Number of commits, and of write callbacks run (committed or not), so far
  // (for metrics and tests of group commit).
  virtual uint64_t commits() const = 0;
  virtual uint64_t writes() const = 0;
  // Write callbacks queued and not yet started (queue depth, for metrics).
  virtual uint64_t pending_writes() const = 0;

  // Called after every durable commit with the seconds it took (>= 0) and the
  // number of write callbacks it held (the server's commit latency
  // histogram), on the thread that committed. Must be cheap and must not
  // call Write. Replaces any previous observer; empty: none.
  virtual void SetCommitObserver(std::function<void(double seconds, size_t writes)> observer) = 0;

 protected:
  Store() = default;
};

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_STORE_H_
