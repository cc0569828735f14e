// How a standby serves the whole API: every call it does not answer itself
// goes to the leader unchanged, with the caller's metadata and deadline.
#ifndef VIPU_SERVER_HA_FORWARDER_H_
#define VIPU_SERVER_HA_FORWARDER_H_

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>

#include <map>
#include <memory>
#include <string>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "base/mutex.h"
#include "server/ha/member_role.h"

namespace vipu::server {

// A generic gRPC service: registered on a standby's listeners beside the
// version service, it receives every other method as bytes and sends them
// to the leader's listener for that API (user: virmgrpc; admin: vipuadmin;
// agent: vipuagent), which MemberRole names. The reply, its status and its
// trailing metadata come back as the leader sent them. While nobody leads,
// or when the leader does not answer, the caller gets UNAVAILABLE and a
// client with a list of members tries the next one. A call another member
// forwarded is refused, never forwarded again.
//
// With `credentials` (a secure control plane) the standby dials the leader
// over mutual TLS with the server's own certificate, and passes on an agent
// call with the names the agent's certificate proved to the standby
// (wire::kForwardedPeerMetadata), since the leader sees only the standby's.
// Null credentials: plaintext.
//
// Borrows `role`, which must outlive it; owns its channels to the leader.
// Made only with std::make_shared: each call in progress holds the
// forwarder, so one still finishing when its listener stops never meets a
// destroyed forwarder, and that ordering is seen in this code rather than
// only inside gRPC. Thread-safe.
class Forwarder final : public grpc::CallbackGenericService,
                        public std::enable_shared_from_this<Forwarder> {
 public:
  Forwarder(const MemberRole* role, std::shared_ptr<grpc::ChannelCredentials> credentials)
      : role_(role), credentials_(std::move(credentials)) {}

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override;

  // The channel to `address`, made once and kept.
  std::shared_ptr<grpc::Channel> ChannelTo(const std::string& address);
  // A forward to `address` was refused a connection (a leader named but not
  // listening yet: its start-up): the channel connects again at once
  // instead of waiting out gRPC's reconnect backoff (one to two seconds), at
  // most once per kBackoffResetInterval. Not called after an attempt that
  // timed out (a cut link), where the backoff's quick refusal of calls is
  // what moves their clients on to another member.
  void NoteConnectionRefused(const std::string& address);
  // Backoff resets so far (tests).
  uint64_t backoff_resets() const {
    MutexLock lock(&mu_);
    return backoff_resets_;
  }
  const MemberRole* role() const { return role_; }
  bool secure() const { return credentials_ != nullptr; }

  static constexpr absl::Duration kBackoffResetInterval = absl::Milliseconds(100);

 private:
  std::shared_ptr<grpc::Channel> NewChannel(const std::string& address) const;

  struct Leader {
    std::shared_ptr<grpc::Channel> channel;
    absl::Time last_reset = absl::InfinitePast();
  };

  const MemberRole* role_;
  const std::shared_ptr<grpc::ChannelCredentials> credentials_;
  mutable Mutex mu_;
  std::map<std::string, Leader> channels_ ABSL_GUARDED_BY(mu_);
  uint64_t backoff_resets_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace vipu::server

#endif  // VIPU_SERVER_HA_FORWARDER_H_
