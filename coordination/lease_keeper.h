// A live etcd lease: granted when the keeper starts, kept alive by a thread
// of its own, revoked when the keeper goes away. Whoever attaches keys to
// the lease (a leader key, a member's presence) learns through `on_lost`
// that they may be gone.
//
// The thread holds one LeaseKeepAlive stream to the client's current member
// and sends a keep-alive every TTL/3. A member that leaves a keep-alive
// unanswered for that long (its raft leader gone, an election under way), or
// whose stream breaks, is left for the next member. The keeper reports the
// lease lost, once, when etcd answers with a TTL of 0 or less (the lease
// expired or was revoked), or when no member has answered by a TTL after
// the lease could have expired (the expiry is estimated from the last
// answer: the time the answered keep-alive was sent plus the TTL etcd
// granted). The TTL of grace is for etcd electing a raft leader: a new raft
// leader renews every lease, so an answer after the estimated expiry can
// still say the lease lives. Whoever relies on the lease must stop at
// expiry(), not at the report. After a loss the keeper does nothing more;
// make a new one for a new lease.
//
// Ownership: the keeper uses, and does not own, an EtcdClient that must
// outlive it.
//
// Thread-safety: every method may be called from any thread. `on_lost` runs
// on the keeper's thread; it must not destroy or Stop() its keeper (both
// wait for that thread) and should hand long work to another thread.
#ifndef VIPU_COORDINATION_LEASE_KEEPER_H_
#define VIPU_COORDINATION_LEASE_KEEPER_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "storage/etcd/etcd_client.h"

namespace vipu::coordination {

class LeaseKeeper {
 public:
  // Grants a lease of `ttl` (etcd may raise it to its minimum, whole
  // seconds) and starts keeping it alive. Returns the LeaseGrant error when
  // no lease could be granted, INVALID_ARGUMENT for a TTL under one second.
  // `on_lost` (may be empty) gets why the lease is lost: NOT_FOUND when etcd
  // says it expired or was revoked, UNAVAILABLE or DEADLINE_EXCEEDED when etcd
  // could not be reached in time.
  static absl::StatusOr<std::unique_ptr<LeaseKeeper>> Start(
      storage::etcd::EtcdClient* client, absl::Duration ttl,
      std::function<void(absl::Status)> on_lost);

  // Stop().
  ~LeaseKeeper();
  LeaseKeeper(const LeaseKeeper&) = delete;
  LeaseKeeper& operator=(const LeaseKeeper&) = delete;

  // The lease's id, to attach keys to.
  int64_t id() const { return id_; }
  // The TTL etcd granted.
  absl::Duration ttl() const { return ttl_; }
  // True until the lease is reported lost or the keeper stopped.
  bool alive() const;
  // The earliest time etcd may let the lease expire as far as this keeper
  // knows: the send time of the oldest keep-alive etcd answered last, plus
  // the TTL it granted (etcd counts from when it hears the keep-alive, which
  // is later). InfinitePast once the lease is lost or the keeper stopping.
  absl::Time expiry() const;

  // Stops the keep-alives and revokes the lease (deleting its keys), giving
  // etcd about a second: best effort, a lease etcd does not hear about
  // expires after its TTL anyway. `on_lost` is not called after this
  // returns. Idempotent; returns the revocation's status (OK when it was
  // already lost or revoked).
  absl::Status Stop();

 private:
  LeaseKeeper(storage::etcd::EtcdClient* client, int64_t id, absl::Duration ttl, absl::Time expiry,
              std::function<void(absl::Status)> on_lost);

  // The keeper thread: one stream after another until loss or Stop().
  void Run();
  // When the keeper gives the lease up unless etcd answers: a TTL after
  // the estimated expiry.
  absl::Time GiveUpAt() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return expiry_ + ttl_; }
  // Keeps the lease alive over one stream to member `index`; returns a
  // non-OK status when the lease is lost, OK when the stream broke (or Stop()
  // was called) and the caller should try again.
  absl::Status KeepAliveOn(size_t index);
  // The stream's reader got etcd's answer to a keep-alive, the lease's
  // remaining `ttl`: moves the expiry. False (and refused_ set) when the TTL
  // says the lease is gone.
  bool Answered(int64_t ttl) ABSL_LOCKS_EXCLUDED(mu_);
  // Waits until the next keep-alive is due at `next_send` (true), or until
  // the stream is to be left (false): it broke, Stop() was called, or its
  // member left a keep-alive unanswered too long. Sets *lost, whichever it
  // returns, when the lease is lost.
  bool AwaitSend(absl::Time next_send, absl::Status* lost) ABSL_LOCKS_EXCLUDED(mu_);

  storage::etcd::EtcdClient* const client_;
  const int64_t id_;
  const absl::Duration ttl_;
  const std::function<void(absl::Status)> on_lost_;

  mutable Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool stopped_ ABSL_GUARDED_BY(mu_) = false;
  bool lost_ ABSL_GUARDED_BY(mu_) = false;
  // When etcd lets the lease expire unless it hears from us.
  absl::Time expiry_ ABSL_GUARDED_BY(mu_);
  // The send time of the oldest keep-alive not answered yet.
  absl::Time pending_since_ ABSL_GUARDED_BY(mu_) = absl::InfiniteFuture();
  // Set by the stream's reader: the stream ended, or etcd said TTL <= 0.
  bool stream_broken_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status refused_ ABSL_GUARDED_BY(mu_);
  // The running stream's context, for Stop() to cancel it.
  grpc::ClientContext* context_ ABSL_GUARDED_BY(mu_) = nullptr;
  CondVar changed_;

  std::thread thread_;
  // Serializes Stop() callers (the thread is joined once).
  Mutex stop_mu_;
};

}  // namespace vipu::coordination

#endif  // VIPU_COORDINATION_LEASE_KEEPER_H_
