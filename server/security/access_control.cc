// AccessControl::Admit: the caller of each RPC from its metadata, admin check and rate limit.
#include "server/security/access_control.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "spdlog/spdlog.h"
#include "wire/metadata_keys.h"

namespace vipu::server {

std::string Metadata(const grpc::ServerContext& context, const char* key) {
  const auto& md = context.client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

std::string PeerHost(const std::string& peer) {
  size_t colon = peer.rfind(':');
  size_t scheme = peer.find(':');
  if (colon == std::string::npos || colon == scheme) return peer;
  return peer.substr(0, colon);
}

std::unique_ptr<AccessControl> AccessControl::Secure(Authenticator& authenticator,
                                                     RateLimiter* limiter) {
  return std::unique_ptr<AccessControl>(new AccessControl(true, &authenticator, limiter));
}

std::unique_ptr<AccessControl> AccessControl::InsecureAdmittingEveryone(RateLimiter* limiter) {
  return std::unique_ptr<AccessControl>(new AccessControl(false, nullptr, limiter));
}

absl::Status AccessControl::Refuse(const std::string& who, const Action& action, absl::Status why) {
  ++refusals_;
  spdlog::warn("refused {} for {}: {}", action.name, who, std::string(why.message()));
  return why;
}

absl::StatusOr<Caller> AccessControl::Admit(const CallInfo& call, const Action& action) {
  Caller caller;
  caller.peer = call.peer;
  if (secure_) {
    auto authenticated = authenticator_->Authenticate(call.user_id, call.access_key);
    if (!authenticated.ok()) {
      std::string who = call.user_id.empty()
                            ? caller.Name()
                            : absl::StrCat("'", call.user_id, "' (", call.peer, ")");
      return Refuse(who, action, authenticated.status());
    }
    caller = *std::move(authenticated);
    caller.peer = call.peer;
    if (action.admin && !caller.is_admin) {
      return Refuse(caller.Name(), action,
                    absl::PermissionDeniedError(absl::StrCat("permission denied: ", action.name,
                                                             " needs an admin user; '",
                                                             caller.user_id, "' is not one")));
    }
  }
  if (action.mutating && limiter_ != nullptr && limiter_->enabled()) {
    std::string key = caller.authenticated ? absl::StrCat("user:", caller.user_id)
                                           : absl::StrCat("peer:", PeerHost(call.peer));
    if (!limiter_->Allow(key, absl::Now())) {
      return Refuse(caller.Name(), action,
                    absl::ResourceExhaustedError(
                        absl::StrCat("rate limit: too many changes from ", caller.Name(),
                                     " (--rate-limit-per-second); retry later")));
    }
  }
  return caller;
}

absl::StatusOr<Caller> AccessControl::Admit(const grpc::ServerContext& context,
                                            const Action& action) {
  CallInfo call;
  call.user_id = Metadata(context, wire::kUserIdMetadata);
  call.access_key = Metadata(context, wire::kAccessKeyMetadata);
  call.peer = context.peer();
  return Admit(call, action);
}

}  // namespace vipu::server
