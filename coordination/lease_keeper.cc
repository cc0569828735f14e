// LeaseKeeper: a lease kept alive over a LeaseKeepAlive stream by a thread.
#include "coordination/lease_keeper.h"

#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <utility>

#include "absl/strings/str_cat.h"
#include "base/thread_name.h"
#include "etcd/rpc.grpc.pb.h"
#include "spdlog/spdlog.h"

namespace vipu::coordination {
namespace {

// The pause before another member is asked for a stream after one broke:
// long enough not to spin on a member that refuses at once, short against
// any TTL etcd grants (at least a second).
constexpr absl::Duration kReconnectPause = absl::Milliseconds(200);
// What Stop() gives the revocation.
constexpr absl::Duration kRevokeTimeout = absl::Seconds(1);

}  // namespace

absl::StatusOr<std::unique_ptr<LeaseKeeper>> LeaseKeeper::Start(
    storage::etcd::EtcdClient* client, absl::Duration ttl,
    std::function<void(absl::Status)> on_lost) {
  if (ttl < absl::Seconds(1)) {
    return absl::InvalidArgumentError(
        absl::StrCat("lease TTL ", absl::FormatDuration(ttl), " is under one second"));
  }
  // The expiry is counted from before the request: etcd starts the TTL
  // when it grants, which is later.
  const absl::Time asked = absl::Now();
  absl::StatusOr<int64_t> id = client->LeaseGrant(ttl);
  if (!id.ok()) return id.status();
  const absl::Duration granted = absl::Ceil(ttl, absl::Seconds(1));
  std::unique_ptr<LeaseKeeper> keeper(
      new LeaseKeeper(client, *id, granted, asked + granted, std::move(on_lost)));
  keeper->thread_ = std::thread([k = keeper.get()] { k->Run(); });
  NameThread(keeper->thread_, "etcd-lease");
  return keeper;
}

LeaseKeeper::LeaseKeeper(storage::etcd::EtcdClient* client, int64_t id, absl::Duration ttl,
                         absl::Time expiry, std::function<void(absl::Status)> on_lost)
    : client_(client), id_(id), ttl_(ttl), on_lost_(std::move(on_lost)), expiry_(expiry) {}

LeaseKeeper::~LeaseKeeper() { Stop().IgnoreError(); }

bool LeaseKeeper::alive() const {
  MutexLock lock(&mu_);
  return !lost_ && !stopping_;
}

absl::Time LeaseKeeper::expiry() const {
  MutexLock lock(&mu_);
  return lost_ || stopping_ ? absl::InfinitePast() : expiry_;
}

absl::Status LeaseKeeper::Stop() {
  MutexLock stop_lock(&stop_mu_);
  bool was_lost;
  {
    MutexLock lock(&mu_);
    if (stopped_) return absl::OkStatus();
    stopping_ = true;
    if (context_ != nullptr) context_->TryCancel();
    changed_.SignalAll();
  }
  if (thread_.joinable()) thread_.join();
  {
    MutexLock lock(&mu_);
    stopped_ = true;
    was_lost = lost_;
  }
  absl::Status status = client_->LeaseRevoke(id_, kRevokeTimeout);
  // Already gone is what Stop() wants.
  if (absl::IsNotFound(status) || (was_lost && !status.ok())) return absl::OkStatus();
  return status;
}

void LeaseKeeper::Run() {
  absl::Status lost;
  for (;;) {
    const size_t index = client_->current();
    lost = KeepAliveOn(index);
    if (!lost.ok()) break;
    MutexLock lock(&mu_);
    if (stopping_) return;
    // The stream broke: the next member, unless the lease ran out meanwhile.
    client_->Advance(index);
    const absl::Time retry = std::min(absl::Now() + kReconnectPause, GiveUpAt());
    while (!stopping_ && absl::Now() < retry) changed_.WaitWithDeadline(&mu_, retry);
    if (stopping_) return;
    if (absl::Now() >= GiveUpAt()) {
      lost = absl::UnavailableError(
          absl::StrCat("etcd lease ", id_,
                       ": no etcd member answered a keep-alive before the lease could have expired "
                       "and for a TTL after"));
      break;
    }
  }
  {
    MutexLock lock(&mu_);
    if (stopping_) return;
    lost_ = true;
  }
  if (on_lost_) on_lost_(lost);
}

bool LeaseKeeper::Answered(int64_t ttl) {
  MutexLock lock(&mu_);
  if (ttl <= 0) {
    refused_ = absl::NotFoundError(absl::StrCat(
        "etcd lease ", id_, " expired or was revoked (keep-alive answered TTL ", ttl, ")"));
    return false;
  }
  // Counted from when the keep-alive left, the earliest etcd can have
  // renewed it.
  const absl::Time sent = pending_since_ == absl::InfiniteFuture() ? absl::Now() : pending_since_;
  expiry_ = sent + absl::Seconds(ttl);
  pending_since_ = absl::InfiniteFuture();
  changed_.SignalAll();
  return true;
}

bool LeaseKeeper::AwaitSend(absl::Time next_send, absl::Status* lost) {
  bool send = false;
  MutexLock lock(&mu_);
  for (;;) {
    const absl::Time now = absl::Now();
    if (stopping_ || stream_broken_) break;
    if (now >= GiveUpAt()) {
      *lost = absl::DeadlineExceededError(absl::StrCat(
          "etcd lease ", id_,
          " may have expired: no keep-alive was answered in time, nor for a TTL after"));
      break;
    }
    if (now >= pending_since_ + ttl_ / 3) {
      // A member that lets a keep-alive wait a whole interval (its raft
      // leader gone, an election under way) may hold it until the lease
      // lapses: the next member is asked instead, on a stream of its own.
      spdlog::warn("etcd lease {}: no answer to a keep-alive within {}; asking the next member",
                   id_, absl::FormatDuration(ttl_ / 3));
      break;
    }
    if (now >= next_send) {
      send = true;
      if (pending_since_ == absl::InfiniteFuture()) pending_since_ = now;
      break;
    }
    changed_.WaitWithDeadline(&mu_, std::min({next_send, GiveUpAt(), pending_since_ + ttl_ / 3}));
  }
  if (!refused_.ok()) *lost = refused_;
  return send;
}

absl::Status LeaseKeeper::KeepAliveOn(size_t index) {
  auto stub = etcdserverpb::Lease::NewStub(client_->channel(index));
  grpc::ClientContext context;
  {
    MutexLock lock(&mu_);
    if (stopping_) return absl::OkStatus();
    context_ = &context;
    stream_broken_ = false;
    pending_since_ = absl::InfiniteFuture();
  }
  std::unique_ptr<grpc::ClientReaderWriter<etcdserverpb::LeaseKeepAliveRequest,
                                           etcdserverpb::LeaseKeepAliveResponse>>
      stream = stub->LeaseKeepAlive(&context);

  // The reader: every answer moves the expiry; a TTL <= 0 says the lease is
  // gone; the end of the stream wakes the sender to reconnect.
  std::thread reader([this, &stream] {
    etcdserverpb::LeaseKeepAliveResponse response;
    while (stream->Read(&response)) {
      if (!Answered(response.ttl())) break;
    }
    MutexLock lock(&mu_);
    stream_broken_ = true;
    changed_.SignalAll();
  });

  absl::Status lost;
  absl::Time next_send = absl::Now();
  etcdserverpb::LeaseKeepAliveRequest request;
  request.set_id(id_);
  for (;;) {
    const bool send = AwaitSend(next_send, &lost);
    if (!send || !lost.ok()) break;
    if (!stream->Write(request)) {
      // The stream is gone; the reader sees it end too.
      break;
    }
    next_send = absl::Now() + ttl_ / 3;
  }

  // Ends the stream (the reader returns once it is cancelled) and waits for
  // the reader before the stream goes away.
  context.TryCancel();
  reader.join();
  (void)stream->Finish();
  {
    MutexLock lock(&mu_);
    context_ = nullptr;
    if (!refused_.ok()) lost = refused_;
  }
  return lost;
}

}  // namespace vipu::coordination
