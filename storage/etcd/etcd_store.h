// The state of vipu-server in etcd: a Store (storage/store.h) whose commits
// are etcd transactions, for members of a highly available control plane.
#ifndef VIPU_STORAGE_ETCD_ETCD_STORE_H_
#define VIPU_STORAGE_ETCD_ETCD_STORE_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "storage/etcd/etcd_client.h"
#include "storage/store.h"

namespace vipu::storage::etcd {

struct EtcdStoreOptions {
  // Where the state lives (EtcdLayout::ValidatePrefix).
  std::string prefix = "/vipu/";
  // Conditions added to every write transaction: the leader's fence
  // (LeaderElection::Fence), so that a member that no longer leads cannot
  // change anything. Empty only in tests of the store alone.
  std::vector<TxnCompare> fence;
  // Called once, on the writer thread, when the store stops writing for
  // good: the fence failed (another member leads) or etcd's answer to a
  // commit was lost, so this member's view may differ from etcd's. The
  // member must stop serving as leader.
  std::function<void(absl::Status)> on_lost;
  // Until when this member's leadership surely holds
  // (LeaderElection::HeldUntil). After it the store answers neither reads
  // nor writes (UNAVAILABLE): etcd may have let another member lead and
  // change the state, so its copy may be stale. Empty: always (tests of the
  // store alone).
  std::function<absl::Time()> held_until;
  // How long one commit waits for etcd's answer; zero: 5 s. A leader sets
  // it well inside its lease: an answer lost in an etcd election is found
  // out by sending the commit again (safe: each commit requires the commit
  // token of the one before, EtcdLayout::CommitKey) until held_until, and
  // only then does the store give up.
  absl::Duration commit_timeout = absl::ZeroDuration();
  // How long past held_until such a commit is still being found out: as
  // long as the lease keeper goes on asking etcd before it gives the
  // leadership up (LeaseKeeper: a TTL). Reads stay refused meanwhile.
  absl::Duration lost_answer_grace = absl::ZeroDuration();
  // A group of writes goes to etcd in one transaction up to these limits,
  // plus the commit token's op (under etcd's defaults, --max-txn-ops 128
  // and --max-request-bytes 1.5 MiB); a bigger group, or one write bigger
  // than a transaction, takes several.
  size_t max_ops_per_txn = 120;
  size_t max_bytes_per_txn = 1 << 20;
};

// Holds the whole state in memory, loaded from etcd when opened, and is the
// one writer of its prefix while its fence holds: the leader of the members.
// Reads are served from memory (a snapshot per Read); a Write runs its
// callback against the writer's copy on the writer thread, and writes from
// many threads are grouped. A group is acknowledged only once etcd has
// committed its transactions (each fenced), so nothing acknowledged is lost
// when this member dies; a callback that fails leaves nothing behind.
//
// A commit whose answer is lost (etcd electing a raft leader, a member
// gone) is sent again until etcd answers: the commit token makes the resend
// apply it at most once. When that does not succeed before held_until, or
// a group takes more than one transaction and a later one fails, or the
// fence refuses a write, the store cannot know what etcd holds: it refuses
// every later read and write with UNAVAILABLE and calls on_lost, and the
// next leader loads what etcd has.
// Reads and writes are refused the same way once held_until has passed.
//
// Owns its writer thread (a WriteQueue, storage/write_queue.h); does not own
// the client, which must outlive it.
// Thread-safe: every method may be called from any thread, but not Write
// from inside a Write callback.
class EtcdStore final : public Store {
 public:
  // Reads every key under the prefix at one revision and loads it. A prefix
  // without state gets the format key (a fenced write). Errors:
  // INVALID_ARGUMENT for a bad prefix; FAILED_PRECONDITION when the prefix
  // holds data of another format or a newer version; DATA_LOSS for a value
  // this server cannot read; UNAVAILABLE when etcd does not answer.
  static absl::StatusOr<std::unique_ptr<EtcdStore>> Open(EtcdClient* client,
                                                         EtcdStoreOptions options);
  ~EtcdStore() override;  // drains queued writes and stops the writer thread

  absl::Status Read(const std::function<absl::Status(ReadTxn&)>& fn) override;
  // Refused, marked NothingDone, once the leadership may have lapsed or was
  // lost: what every Read and Write then says.
  absl::Status Answerable() const override;
  void StopAnswering() override;
  absl::Status Write(const std::function<absl::Status(WriteTxn&)>& fn) override;
  void WriteAsync(std::function<absl::Status(WriteTxn&)> fn,
                  std::function<void(absl::Status)> done) override;
  // FAILED_PRECONDITION: etcd's own snapshot is the backup of this state.
  absl::Status Backup(const std::string& path) override;
  uint64_t commits() const override;
  uint64_t writes() const override;
  uint64_t pending_writes() const override;
  void SetCommitObserver(std::function<void(double seconds, size_t writes)> observer) override;

  // The number of keys loaded when opened (for logs and the bench).
  size_t loaded_keys() const;

 private:
  class Impl;
  explicit EtcdStore(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace vipu::storage::etcd

#endif  // VIPU_STORAGE_ETCD_ETCD_STORE_H_
