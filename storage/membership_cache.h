// The membership of clusters and allocations (their rows and the agents
// they list, in order), kept in memory by the SqliteStore so that a read of a
// cluster or allocation of 16,384 machines costs a hash lookup instead of
// 16,384 rows, coherent with the SQLite snapshot of the transaction that
// asks. Clusters and allocations are immutable once inserted: they are only
// inserted and deleted (SqliteTxn::Insert/DeleteCluster, Insert/DeleteAllocation
// are the only statements that touch clusters, cluster_agents, allocations and
// allocation_agents), and the SqliteStore is the one writer of its file
// (storage/database_lock.h).
//
// The epoch (seqlock-style). A counter, even while no change of membership
// is in flight:
//   - The writer makes it odd (BeginChange) before the first Insert/Delete of
//     a cluster or allocation of a transaction group runs, and even again
//     (EndChange) after that group's COMMIT or ROLLBACK. It only grows.
//   - Every transaction records the epoch E_r before its SQLite snapshot is
//     taken: SqliteStore::Read before BEGIN (the snapshot is taken later, at the
//     first read), the writer before BEGIN IMMEDIATE of its group.
//   - An entry carries the epoch it is valid at (its tag). A lookup hits only
//     if tag == E_r == the current epoch and E_r is even; a value loaded from
//     SQL is put only if the current epoch == E_r and is even at that moment.
//     The check and the insert are made under mu_, which BeginChange takes too.
//
// Why a hit returns what the transaction's own snapshot holds. Let E_r be
// even and the epoch still E_r at the lookup (time t). The epoch only grows,
// so no BeginChange ran between the moment E_r was read (r) and t; and since
// E_r was even at r, no group that changes membership was in flight at r:
// every such group before r had committed or rolled back before its
// EndChange, i.e. before r. So the committed membership was one and the same
// state M over [r, t]. The snapshot is taken after r; SqliteTxn makes sure it
// exists before it trusts a hit (SqliteTxn::ClusterRef begins the read at once
// when no statement has yet), so it is taken in [r, t] and holds M. The
// entry, tagged E_r, was put (or re-tagged, below) while the epoch was E_r:
// it holds M too. After t the transaction's snapshot does not move, so what
// it was handed stays what its own SQL would return.
//
// Why a put is never stale. A loaded value comes from a snapshot taken after
// r; if at the put the epoch is still E_r (even), by the same argument the
// committed membership is still the M of that snapshot, and the entry is
// tagged E_r. The next BeginChange makes the epoch E_r + 1 under mu_, after
// the put or before it (then the put is refused), so no transaction that
// could see a later state can hit it: its E_r is later, or the epoch moved.
//
// Why a reader that began before a change neither sees it nor poisons the
// cache: its E_r is older than the current epoch, so every lookup misses
// (it reads its own snapshot from SQL) and every put is refused. The
// writer's own group, once it changed membership, sees the epoch odd and
// different from its E_r: it reads its own changes from SQL and puts
// nothing; before its first change it may hit (nothing changed yet).
//
// Re-tagging. EndChange is given the ids the group touched (inserted or
// deleted, committed or not). Every other entry tagged with the epoch the
// group began at holds what it held before the group, so it is re-tagged
// with the new even epoch: a change to one allocation does not throw away
// the 16,384 members of every cluster. Entries of touched ids, and any
// with an older tag, are dropped. So the cache holds only what exists.
//
// Thread-safe. Values handed out are shared and immutable.
#ifndef VIPU_STORAGE_MEMBERSHIP_CACHE_H_
#define VIPU_STORAGE_MEMBERSHIP_CACHE_H_

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <string_view>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "base/mutex.h"
#include "fabric/types.h"

namespace vipu::storage {

// Owned by the Store; holds shared, immutable clusters and allocations that
// stay valid after they leave the cache. Thread-safe: readers and the
// writer thread use it at once, under its mutex.
class MembershipCache {
 public:
  MembershipCache() = default;
  MembershipCache(const MembershipCache&) = delete;
  MembershipCache& operator=(const MembershipCache&) = delete;

  // The epoch now; a transaction records it before its snapshot is taken.
  uint64_t epoch() const { return epoch_.load(std::memory_order_acquire); }

  // The writer thread, before the first membership change of a group (the
  // epoch becomes odd) and after that group's COMMIT or ROLLBACK (even
  // again, with the ids the group touched). Not nested.
  void BeginChange() ABSL_LOCKS_EXCLUDED(mu_);
  void EndChange(const std::set<std::string>& clusters, const std::set<std::string>& allocations)
      ABSL_LOCKS_EXCLUDED(mu_);

  // The entry of `id` valid at `read_epoch`, or null (a miss).
  std::shared_ptr<const fabric::Cluster> FindCluster(std::string_view id, uint64_t read_epoch) const
      ABSL_LOCKS_EXCLUDED(mu_);
  std::shared_ptr<const fabric::Allocation> FindAllocation(std::string_view id,
                                                           uint64_t read_epoch) const
      ABSL_LOCKS_EXCLUDED(mu_);

  // Keeps `value`, loaded by a transaction that recorded `read_epoch`, if
  // the epoch is still `read_epoch` and even; otherwise does nothing.
  void PutCluster(uint64_t read_epoch, std::shared_ptr<const fabric::Cluster> value)
      ABSL_LOCKS_EXCLUDED(mu_);
  void PutAllocation(uint64_t read_epoch, std::shared_ptr<const fabric::Allocation> value)
      ABSL_LOCKS_EXCLUDED(mu_);

  // Entries held (valid or not), for tests.
  size_t SizeForTesting() const ABSL_LOCKS_EXCLUDED(mu_);

 private:
  template <typename T>
  struct Entry {
    uint64_t tag = 0;
    std::shared_ptr<const T> value;
  };
  template <typename T>
  using Map = absl::flat_hash_map<std::string, Entry<T>>;

  template <typename T>
  std::shared_ptr<const T> Find(const Map<T>* map, std::string_view id, uint64_t read_epoch) const
      ABSL_LOCKS_EXCLUDED(mu_);
  template <typename T>
  void Put(Map<T>* map, uint64_t read_epoch, std::shared_ptr<const T> value)
      ABSL_LOCKS_EXCLUDED(mu_);
  // Re-tags the entries of `map` tagged `from` whose id is not in `touched`
  // to `to`; drops the others.
  template <typename T>
  static void Retag(Map<T>* map, uint64_t from, uint64_t to, const std::set<std::string>& touched);

  mutable vipu::Mutex mu_;
  // Written under mu_ only; read without it to record E_r.
  std::atomic<uint64_t> epoch_{0};
  Map<fabric::Cluster> clusters_ ABSL_GUARDED_BY(mu_);
  Map<fabric::Allocation> allocations_ ABSL_GUARDED_BY(mu_);
};

// What one writer group changed of the membership: begins the change at
// the first touch, ends it (with the ids touched) when Finish is called
// after the group's COMMIT or ROLLBACK. Used by the writer thread only.
class MembershipChange {
 public:
  explicit MembershipChange(MembershipCache* cache) : cache_(cache) {}
  ~MembershipChange() { Finish(); }
  MembershipChange(const MembershipChange&) = delete;
  MembershipChange& operator=(const MembershipChange&) = delete;

  // Before the statement that inserts or deletes the cluster / allocation.
  void TouchCluster(std::string_view id);
  void TouchAllocation(std::string_view id);
  // After COMMIT or ROLLBACK; idempotent.
  void Finish();

 private:
  void Begin();

  MembershipCache* const cache_;
  bool begun_ = false;
  std::set<std::string> clusters_;
  std::set<std::string> allocations_;
};

}  // namespace vipu::storage

#endif  // VIPU_STORAGE_MEMBERSHIP_CACHE_H_
