// Forwarder: a standby's generic service relaying each call to the leader.
#include "server/ha/forwarder.h"

#include <grpcpp/generic/generic_stub.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/absl_view.h"
#include "tls/peer_identity.h"
#include "wire/member_channels.h"
#include "wire/metadata_keys.h"

namespace vipu::server {
namespace {

// A call without a deadline still ends if the leader never answers.
constexpr auto kDefaultDeadline = std::chrono::seconds(60);
// How long a refused caller waits before trying again: the time a standby
// takes to learn of a new leader (it asks etcd every 50 ms).
constexpr char kRetryAfterMs[] = "50";

// Metadata that belongs to one hop, not to the caller.
bool HopHeader(std::string_view key) {
  return key.empty() || key.front() == ':' || absl::StartsWith(AbslView(key), "grpc-") ||
         key == "user-agent" || key == "content-type" || key == "te" || key == "host";
}

std::string LeaderAddressFor(const std::string& method, const MemberAddresses& leader) {
  if (absl::StartsWith(method, "/vipuadmin.")) return leader.admin;
  if (absl::StartsWith(method, "/vipuagent.")) return leader.agent;
  return leader.user;
}

class ForwardReactor final : public grpc::ServerGenericBidiReactor {
 public:
  ForwardReactor(std::shared_ptr<Forwarder> forwarder, grpc::GenericCallbackServerContext* ctx)
      : forwarder_(std::move(forwarder)), ctx_(ctx) {
    StartRead(&request_);
  }

  void OnReadDone(bool ok) override {
    if (!ok) {
      Finish(grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "no request message"));
      return;
    }
    const std::shared_ptr<Forwarder> forwarder = forwarder_;
    const MemberRole* role = forwarder->role();
    const auto& in = ctx_->client_metadata();
    if (in.find(wire::kForwardedByMetadata) != in.end()) {
      SayNothingWasDone();
      Finish(grpc::Status(
          grpc::StatusCode::UNAVAILABLE,
          absl::StrCat("member ", role->self().user, " is not the leader; try another member")));
      return;
    }
    std::optional<MemberAddresses> leader = role->current_leader();
    // Etcd may name this member before it has loaded the state and taken
    // its addresses over: a call sent to itself would reach these very
    // listeners as they close, and wait for them.
    if (!leader || role->leader() || *leader == role->self()) {
      SayNothingWasDone();
      // A member cut off from etcd knows of no leader because it cannot ask:
      // it says so rather than that none was elected.
      const std::string problem = role->etcd_problem();
      Finish(grpc::Status(grpc::StatusCode::UNAVAILABLE,
                          problem.empty()
                              ? absl::StrCat("member ", role->self().user,
                                             ": no leader elected yet; try again or another member")
                              : absl::StrCat("member ", role->self().user, ": no leader known: ",
                                             problem, "; try again or another member")));
      return;
    }
    for (const auto& [key, value] : in) {
      std::string_view k(key.data(), key.size());
      if (HopHeader(k) || k == wire::kForwardedByMetadata || k == wire::kForwardedPeerMetadata) {
        continue;
      }
      upstream_.AddMetadata(std::string(k), std::string(value.data(), value.size()));
    }
    upstream_.AddMetadata(wire::kForwardedByMetadata, role->self().user);
    if (forwarder->secure() && absl::StartsWith(ctx_->method(), "/vipuagent.")) {
      const std::vector<std::string> names = tls::PeerNames(ctx_->auth_context().get());
      upstream_.AddMetadata(wire::kForwardedPeerMetadata, absl::StrJoin(names, ","));
    }
    auto deadline = ctx_->deadline();
    if (deadline > std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) {
      deadline = std::chrono::system_clock::now() + kDefaultDeadline;
    }
    upstream_.set_deadline(deadline);
    leader_address_ = LeaderAddressFor(ctx_->method(), *leader);
    stub_ = std::make_unique<grpc::GenericStub>(forwarder->ChannelTo(leader_address_));
    stub_->UnaryCall(&upstream_, ctx_->method(), grpc::StubOptions(), &request_, &response_,
                     [this](grpc::Status status) { OnUpstreamDone(std::move(status)); });
  }

  void OnDone() override { delete this; }
  void OnCancel() override { upstream_.TryCancel(); }

 private:
  // A refusal before anything reached the leader: a client may send even a
  // mutating call again, to this member or another (wire/member_channels.h).
  // Without it, an UNAVAILABLE means the outcome is unknown.
  void SayNothingWasDone() { ctx_->AddTrailingMetadata(wire::kRetryAfterMetadata, kRetryAfterMs); }

  void OnUpstreamDone(grpc::Status status) {
    const std::shared_ptr<Forwarder> forwarder = forwarder_;
    for (const auto& [key, value] : upstream_.GetServerTrailingMetadata()) {
      std::string_view k(key.data(), key.size());
      if (HopHeader(k)) continue;
      ctx_->AddTrailingMetadata(std::string(k), std::string(value.data(), value.size()));
    }
    if (!status.ok()) {
      if (wire::FailedToConnect(status)) {
        // No connection, so the call never left this member.
        if (status.error_message().find("Connection refused") != std::string::npos) {
          forwarder->NoteConnectionRefused(leader_address_);
        }
        status = grpc::Status(grpc::StatusCode::UNAVAILABLE,
                              absl::StrCat("the leader ", leader_address_,
                                           " does not answer; try again or another member"));
        SayNothingWasDone();
      } else if (status.error_code() == grpc::StatusCode::UNAVAILABLE &&
                 upstream_.GetServerInitialMetadata().count(wire::kRoleMetadata) == 0) {
        // Every member's reply states its role, so without one the
        // transport broke after the call was sent: the leader may have acted
        // on it. Said in words rather than the transport's own.
        status =
            grpc::Status(grpc::StatusCode::UNAVAILABLE,
                         absl::StrCat("member ", forwarder->role()->self().user,
                                      " passed the call to the leader ", leader_address_,
                                      ", whose answer was lost (", status.error_message(),
                                      "): the outcome is unknown; look before repeating a change"));
      }
      Finish(status);
      return;
    }
    StartWriteAndFinish(&response_, grpc::WriteOptions(), grpc::Status::OK);
  }

  // Each reaction reads the forwarder through a copy of this, dropped on its
  // own thread once the reaction is over: the drop is what orders its reads
  // before the forwarder's end for ThreadSanitizer. Dropping only this one,
  // in OnDone, would leave that order to gRPC's hand-off between the
  // reaction's thread and OnDone's, which it cannot see.
  const std::shared_ptr<Forwarder> forwarder_;
  grpc::GenericCallbackServerContext* ctx_;
  grpc::ByteBuffer request_, response_;
  grpc::ClientContext upstream_;
  std::unique_ptr<grpc::GenericStub> stub_;
  std::string leader_address_;
};

}  // namespace

grpc::ServerGenericBidiReactor* Forwarder::CreateReactor(grpc::GenericCallbackServerContext* ctx) {
  return new ForwardReactor(shared_from_this(), ctx);
}

void Forwarder::NoteConnectionRefused(const std::string& address) {
  MutexLock lock(&mu_);
  Leader& leader = channels_[address];
  const absl::Time now = absl::Now();
  if (!leader.channel || now - leader.last_reset < kBackoffResetInterval) return;
  // A refusal is quick, so the attempt this starts ends quickly too; while
  // nothing listens it keeps failing at this pace, and once the leader
  // listens the channel is connected by the time the caller tries again.
  grpc::experimental::ChannelResetConnectionBackoff(leader.channel.get());
  leader.last_reset = now;
  ++backoff_resets_;
}

std::shared_ptr<grpc::Channel> Forwarder::ChannelTo(const std::string& address) {
  MutexLock lock(&mu_);
  Leader& leader = channels_[address];
  if (!leader.channel) leader.channel = NewChannel(address);
  return leader.channel;
}

std::shared_ptr<grpc::Channel> Forwarder::NewChannel(const std::string& address) const {
  grpc::ChannelArguments args;
  // A leader this member can no longer reach (a cut link, not a closed
  // socket) would otherwise hold every call sent on the dead connection
  // until its deadline. Pings find the connection dead within about two
  // seconds; a connection attempt then gives up after one, so calls that
  // arrive meanwhile are refused as never sent (failed to connect) and
  // their clients move on to another member. The members' listeners
  // accept pings this often (server/api/endpoints.cc).
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 1000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  args.SetInt(GRPC_ARG_HTTP2_MAX_PINGS_WITHOUT_DATA, 0);
  args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 1000);
  args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
  return grpc::CreateCustomChannel(
      address, credentials_ ? credentials_ : grpc::InsecureChannelCredentials(), args);
}

}  // namespace vipu::server
