// LeaderElection: campaign under a kept-alive lease, confirm, fence, resign.
#include "coordination/leader_election.h"

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/status_macros.h"

namespace vipu::coordination {

LeaderElection::LeaderElection(storage::etcd::EtcdClient* client, LeaderElectionOptions options)
    : client_(client), options_(std::move(options)) {}

LeaderElection::~LeaderElection() {
  std::unique_ptr<LeaseKeeper> keeper;
  {
    MutexLock lock(&mu_);
    keeper = std::move(keeper_);
    leader_ = false;
  }
  // Outside the lock: the keeper's thread may be waiting for it in
  // LeaseLost(), and destroying the keeper waits for that thread.
  keeper.reset();
}

void LeaderElection::OnLost(std::function<void(absl::Status)> callback) {
  MutexLock lock(&mu_);
  on_lost_ = std::move(callback);
}

void LeaderElection::LeaseLost(uint64_t attempt, absl::Status why) {
  std::function<void(absl::Status)> callback;
  {
    MutexLock lock(&mu_);
    if (attempt != attempt_) return;
    lease_lost_ = true;
    lost_why_ = why;
    if (campaign_cancel_ != nullptr) campaign_cancel_->Cancel();
    if (!leader_) return;
    leader_ = false;
    callback = on_lost_;
  }
  if (callback) callback(std::move(why));
}

absl::StatusOr<storage::etcd::LeaderKey> LeaderElection::WinLeadership(absl::Time deadline) {
  uint64_t attempt;
  storage::etcd::EtcdCancel cancel;
  std::unique_ptr<LeaseKeeper> old_keeper;
  {
    MutexLock lock(&mu_);
    if (leader_) return absl::FailedPreconditionError("already leader of " + options_.election);
    if (campaigning_) {
      return absl::FailedPreconditionError("already campaigning in " + options_.election);
    }
    campaigning_ = true;
    attempt = ++attempt_;
    lease_lost_ = false;
    lost_why_ = absl::OkStatus();
    campaign_cancel_ = &cancel;
    old_keeper = std::move(keeper_);  // a lost leadership's, done with
  }
  old_keeper.reset();

  // Ends a failed attempt: its lease is revoked, which takes its key out of
  // the election's queue (a key left there would make it leader later).
  auto fail = [&](std::unique_ptr<LeaseKeeper> keeper, absl::Status status) {
    {
      MutexLock lock(&mu_);
      campaigning_ = false;
      campaign_cancel_ = nullptr;
      if (lease_lost_) {
        status = absl::UnavailableError(absl::StrCat("campaign in ", options_.election,
                                                     " ended: lease lost: ", lost_why_.message(),
                                                     " (", status.message(), ")"));
      }
    }
    keeper.reset();
    return status;
  };

  // The lease lives before the campaign starts: etcd does not keep it alive
  // for us, and a key whose lease lapses while we wait would lead nobody.
  absl::StatusOr<std::unique_ptr<LeaseKeeper>> keeper =
      LeaseKeeper::Start(client_, options_.lease_ttl,
                         [this, attempt](absl::Status why) { LeaseLost(attempt, std::move(why)); });
  if (!keeper.ok()) return fail(nullptr, keeper.status());

  absl::StatusOr<storage::etcd::LeaderKey> key =
      client_->Campaign(options_.election, (*keeper)->id(), options_.value, deadline, &cancel);
  if (!key.ok()) return fail(*std::move(keeper), key.status());

  // Campaign can return after the lease lapsed; only a key that is still
  // there, ours and the one campaigned with is leadership.
  absl::StatusOr<std::optional<storage::etcd::KeyValue>> now = client_->Get(key->key);
  if (!now.ok()) return fail(*std::move(keeper), now.status());
  if (!now->has_value() || (*now)->create_revision != key->rev ||
      (*now)->lease != (*keeper)->id()) {
    return fail(*std::move(keeper),
                absl::AbortedError(absl::StrCat("leader key ", key->key,
                                                " was gone or replaced when checked after "
                                                "the campaign in ",
                                                options_.election)));
  }

  std::unique_ptr<LeaseKeeper> doomed;
  absl::Status why;
  {
    MutexLock lock(&mu_);
    campaign_cancel_ = nullptr;
    campaigning_ = false;
    if (!lease_lost_ && (*keeper)->alive()) {
      leader_ = true;
      key_ = *key;
      keeper_ = *std::move(keeper);
      return *key;
    }
    why = lost_why_;
    doomed = *std::move(keeper);
  }
  // Destroyed outside the lock (see the destructor).
  doomed.reset();
  return absl::UnavailableError(
      absl::StrCat("lease lost right after winning ", options_.election, ": ", why.message()));
}

std::vector<storage::etcd::TxnCompare> LeaderElection::Fence() const {
  MutexLock lock(&mu_);
  if (!key_.has_value()) {
    // No create revision is negative: a Txn with this never succeeds.
    return {storage::etcd::TxnCompare::CreateRevision(options_.election + "/", -1)};
  }
  return {storage::etcd::TxnCompare::CreateRevision(key_->key, key_->rev)};
}

bool LeaderElection::is_leader() const {
  MutexLock lock(&mu_);
  return leader_;
}

absl::Time LeaderElection::HeldUntil() const {
  MutexLock lock(&mu_);
  if (!leader_ || keeper_ == nullptr) return absl::InfinitePast();
  return keeper_->expiry() - keeper_->ttl() / 10;
}

std::optional<storage::etcd::LeaderKey> LeaderElection::leader_key() const {
  MutexLock lock(&mu_);
  if (!leader_) return std::nullopt;
  return key_;
}

absl::Status LeaderElection::Resign() {
  std::unique_ptr<LeaseKeeper> keeper;
  std::optional<storage::etcd::LeaderKey> key;
  {
    MutexLock lock(&mu_);
    if (leader_) key = key_;
    leader_ = false;
    keeper = std::move(keeper_);
  }
  absl::Status status;
  if (key.has_value()) status = client_->Resign(*key);
  // Revoking deletes the key too, should Resign not have reached etcd; and a
  // lease etcd does not hear about expires on its own, so its error is not
  // the caller's concern.
  if (keeper != nullptr) keeper->Stop().IgnoreError();
  return status;
}

absl::Status LeaderElection::ResignWith(const std::vector<storage::etcd::TxnOp>& ops) {
  const std::vector<storage::etcd::TxnCompare> fence = Fence();
  std::optional<storage::etcd::LeaderKey> key;
  {
    MutexLock lock(&mu_);
    if (leader_) key = key_;
  }
  if (!key.has_value()) return Resign();
  std::vector<storage::etcd::TxnOp> all = ops;
  all.push_back(storage::etcd::TxnOp::Delete(key->key));
  absl::StatusOr<storage::etcd::TxnResult> r = client_->Txn(fence, all);
  absl::Status written =
      r.ok() ? (r->succeeded ? absl::OkStatus()
                             : absl::FailedPreconditionError("the leadership had already gone"))
             : r.status();
  if (!written.ok()) {
    Resign().IgnoreError();
    return written;
  }
  std::unique_ptr<LeaseKeeper> keeper;
  {
    MutexLock lock(&mu_);
    leader_ = false;
    keeper = std::move(keeper_);
  }
  // The key is gone with the transaction; revoking the lease ends the
  // keep-alives.
  if (keeper != nullptr) keeper->Stop().IgnoreError();
  return absl::OkStatus();
}

absl::StatusOr<std::optional<std::string>> LeaderElection::CurrentLeader() {
  return client_->LeaderValue(options_.election);
}

absl::StatusOr<std::vector<std::string>> LeaderElection::Candidates() {
  // Each campaign is a key "<election>/<lease>"; the oldest leads.
  ASSIGN_OR_RETURN(storage::etcd::RangeResult range, client_->RangePrefix(options_.election + "/"));
  std::sort(range.kvs.begin(), range.kvs.end(),
            [](const storage::etcd::KeyValue& a, const storage::etcd::KeyValue& b) {
              return a.create_revision < b.create_revision;
            });
  std::vector<std::string> values;
  for (storage::etcd::KeyValue& kv : range.kvs) values.push_back(std::move(kv.value));
  return values;
}

}  // namespace vipu::coordination
