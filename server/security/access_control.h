// The gate every user and admin RPC passes first (one call at the top of
// each service method): establishes the Caller, requires an admin where the
// action needs one, and applies the per-caller rate limit to mutating calls.
//
// With --secure: no or a wrong user id/key -> UNAUTHENTICATED; a known user
// calling an admin action -> PERMISSION_DENIED. Without --secure every
// caller is anonymous and unrestricted (docs/security.md), but the rate
// limit still applies, keyed by the peer's address. Every refusal is logged
// with the caller and the action and changes nothing.
#ifndef VIPU_SERVER_SECURITY_ACCESS_CONTROL_H_
#define VIPU_SERVER_SECURITY_ACCESS_CONTROL_H_

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "server/security/authenticator.h"
#include "server/security/caller.h"
#include "server/security/rate_limiter.h"

namespace vipu::server {

struct Action {
  const char* name;       // "create partition", for logs and messages
  bool admin = false;     // needs an admin user (with --secure)
  bool mutating = false;  // rate limited
};

// What a call says about itself, independent of gRPC.
struct CallInfo {
  std::string user_id;     // vipu-user-id metadata
  std::string access_key;  // vipu-access-key metadata
  std::string peer;        // "ipv4:127.0.0.1:5000"
};

// Borrows the authenticator and the limiter, which must outlive it.
// Thread-safe: every gRPC thread calls Admit at once; it keeps only an atomic
// count, and what it borrows locks for itself.
// There is no gate that admits by default: a server is wired with one of the
// two policies below, and a service cannot be built without one.
class AccessControl {
 public:
  // Secure mode: every call is authenticated by `authenticator`, and an
  // admin action needs an admin user. `limiter` may be null (no limit).
  static std::unique_ptr<AccessControl> Secure(Authenticator& authenticator, RateLimiter* limiter);
  // Without --secure: nobody is authenticated, and every caller is admitted
  // as the unrestricted caller its metadata names. Rate limits still apply
  // (`limiter` may be null: no limit).
  static std::unique_ptr<AccessControl> InsecureAdmittingEveryone(RateLimiter* limiter);

  bool secure() const { return secure_; }

  absl::StatusOr<Caller> Admit(const CallInfo& call, const Action& action);
  absl::StatusOr<Caller> Admit(const grpc::ServerContext& context, const Action& action);

  // Refusals so far (metrics, tests).
  uint64_t RefusalsForTesting() const { return refusals_.load(); }

 private:
  AccessControl(bool secure, Authenticator* authenticator, RateLimiter* limiter)
      : secure_(secure), authenticator_(authenticator), limiter_(limiter) {}
  absl::Status Refuse(const std::string& who, const Action& action, absl::Status why);

  const bool secure_;
  Authenticator* authenticator_;
  RateLimiter* limiter_;
  std::atomic<uint64_t> refusals_{0};
};

// For services: the caller of `context`, or the refusal of `access`.
inline absl::StatusOr<Caller> AdmitCall(AccessControl& access, const grpc::ServerContext* context,
                                        const Action& action) {
  return access.Admit(*context, action);
}

// The value of metadata `key`, or "" (first one when repeated).
std::string Metadata(const grpc::ServerContext& context, const char* key);
// "ipv4:10.1.2.3:5000" -> "ipv4:10.1.2.3" (rate limits per host, not per connection).
std::string PeerHost(const std::string& peer);

}  // namespace vipu::server

#endif  // VIPU_SERVER_SECURITY_ACCESS_CONTROL_H_
