// One member's part in electing the single vipu-server that may write: it
// campaigns in an etcd election under a lease it keeps alive, learns when
// that lease (and with it the leadership) is lost, and fences its writes.
//
// Leadership in etcd is a key under a lease; the lease can lapse while the
// leader still believes it leads (a pause, a partition). So a leader adds
// Fence() to the compares of every Txn it makes: CREATE(leader key) == the
// key's create revision, which holds only while its key exists. Once
// another member leads, the fenced Txn answers succeeded=false and writes
// nothing; the caller must then stop acting as leader.
//
// Typical use by a server:
//   LeaderElection election(client, {"/vipu/leader", "host:8090", absl::Seconds(5)});
//   election.OnLost([&](absl::Status why) { StepDownSoon(why); });
//   for (;;) {
//     auto key = election.WinLeadership(absl::Now() + absl::Seconds(30));
//     if (key.ok()) break;  // else: standby; CurrentLeader() tells who leads
//   }
//   ... client->Txn(Concat(election.Fence(), my_compares), ops) ...
//   election.Resign();  // on a clean stop
//
// Ownership: uses, and does not own, an EtcdClient that must outlive it.
// Owns the LeaseKeeper of its current attempt or leadership.
//
// Thread-safety: every method may be called from any thread;
// WinLeadership() runs one at a time (a second concurrent call fails), and
// the object must not be destroyed while a call is running. The
// OnLost callback runs on the lease keeper's thread and must not call
// WinLeadership() or Resign() or destroy this object there (they wait for
// that thread); hand the news to another thread.
#ifndef VIPU_COORDINATION_LEADER_ELECTION_H_
#define VIPU_COORDINATION_LEADER_ELECTION_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "coordination/lease_keeper.h"
#include "storage/etcd/etcd_client.h"

namespace vipu::coordination {

struct LeaderElectionOptions {
  // The election's name, a key prefix ("<prefix>leader"); the leader key is
  // "<election>/<lease id in hex>".
  std::string election;
  // What this member tells the others about itself (its advertised
  // address), the value of its leader key.
  std::string value;
  // How long the leadership outlives this member's last keep-alive: the
  // longest a dead leader blocks the others.
  absl::Duration lease_ttl = absl::Seconds(5);
};

class LeaderElection {
 public:
  LeaderElection(storage::etcd::EtcdClient* client, LeaderElectionOptions options);
  // Stops the lease keeper (revoking the lease, so another member can lead
  // at once) without calling the OnLost callback. Does not Resign()
  // otherwise.
  ~LeaderElection();
  LeaderElection(const LeaderElection&) = delete;
  LeaderElection& operator=(const LeaderElection&) = delete;

  // Becomes leader, waiting until `deadline`: grants a lease and keeps it
  // alive, campaigns under it, and once Campaign returns checks with a read
  // that the leader key still exists with the campaign's create revision and
  // this lease. Returns the key. Fails with FAILED_PRECONDITION when already
  // leader or when another WinLeadership() is running, DEADLINE_EXCEEDED at
  // the deadline, UNAVAILABLE when the lease was lost while campaigning or
  // etcd could not be reached, ABORTED when the key was gone by the check.
  // On failure the attempt's lease is revoked; call again to retry.
  absl::StatusOr<storage::etcd::LeaderKey> WinLeadership(absl::Time deadline);

  // Sets the callback told, once per leadership, that it was lost (the
  // lease expired, was revoked, or could not be kept alive) and why. Not
  // called for Resign() or the destructor. Set it before
  // WinLeadership().
  void OnLost(std::function<void(absl::Status)> callback);

  // The compares that make a Txn succeed only while this leadership lasts:
  // {CREATE(leader key) == rev}. Before the first leadership, a compare that
  // never holds; after losing it, the last leadership's, which no longer
  // holds either.
  std::vector<storage::etcd::TxnCompare> Fence() const;

  // Whether this member leads as far as it knows (a fenced Txn is the proof).
  bool is_leader() const;
  // Until when this member surely leads: the expiry of its lease as its
  // keeper knows it (LeaseKeeper::expiry), less a tenth of the TTL in case
  // etcd's clock runs faster than this one. InfinitePast when not leading.
  // A leader answers nothing from memory after it: by then etcd may have
  // let another member lead and change the state.
  absl::Time HeldUntil() const;
  // The leader key while leading.
  std::optional<storage::etcd::LeaderKey> leader_key() const;

  // Gives up leadership on a clean stop: deletes the leader key and revokes
  // the lease, so another member takes over without waiting for the TTL.
  // OK when not leading. Returns etcd's error when it could not be told (the
  // lease then expires on its own).
  absl::Status Resign();
  // Resign, and in the same fenced transaction that deletes the leader key,
  // makes `ops` (what the next leader should find): they are written only
  // if this member still leads, and then the leadership passes at once.
  // Returns the transaction's error, or FAILED_PRECONDITION when the
  // leadership had already gone; it then resigns as Resign() does, without
  // `ops`.
  absl::Status ResignWith(const std::vector<storage::etcd::TxnOp>& ops);

  // The value of whoever leads the election now (this member included), or
  // nullopt when nobody does. For standbys: where to point clients.
  absl::StatusOr<std::optional<std::string>> CurrentLeader();
  // The values of every member standing in the election, the leader's
  // first, in the order etcd makes them leader (oldest campaign first).
  absl::StatusOr<std::vector<std::string>> Candidates();

 private:
  // The keeper of attempt `attempt` lost its lease.
  void LeaseLost(uint64_t attempt, absl::Status why);

  storage::etcd::EtcdClient* const client_;
  const LeaderElectionOptions options_;

  mutable Mutex mu_;
  std::function<void(absl::Status)> on_lost_ ABSL_GUARDED_BY(mu_);
  // Counts WinLeadership() attempts, so a late report of an old keeper is
  // told apart from one about the current lease.
  uint64_t attempt_ ABSL_GUARDED_BY(mu_) = 0;
  bool campaigning_ ABSL_GUARDED_BY(mu_) = false;
  // Cancels the running Campaign when its lease is lost.
  storage::etcd::EtcdCancel* campaign_cancel_ ABSL_GUARDED_BY(mu_) = nullptr;
  bool lease_lost_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status lost_why_ ABSL_GUARDED_BY(mu_);
  bool leader_ ABSL_GUARDED_BY(mu_) = false;
  std::optional<storage::etcd::LeaderKey> key_ ABSL_GUARDED_BY(mu_);
  std::unique_ptr<LeaseKeeper> keeper_ ABSL_GUARDED_BY(mu_);
};

}  // namespace vipu::coordination

#endif  // VIPU_COORDINATION_LEADER_ELECTION_H_
